"""`vllm serve MODEL ...` on the simulated host: the fake vLLM 0.11 (V1 engine) server.

Log formats from FORMATS.md b: every line the API server or the EngineCore writes carries vLLM 0.11's
stream prefix ``\\x1b[1;36m(APIServer pid=N)\\x1b[0;0m `` / ``(EngineCore_DP0 pid=M)`` (ANSI colours even
without a TTY, so journald stores MESSAGE as a byte array), then ``LEVEL MM-DD HH:MM:SS [file:line] msg``.
Start-up in 0.11's order over time-scaled phases: version, non-default args, max model len, the
EngineCore process (`simhost.vllm.core`, holding the GPUs' memory in the ledger), weight loading,
memory profiling (``Available KV cache memory``, ``GPU KV cache size``, ``Maximum concurrency``),
CUDA graphs, the API server's routes and uvicorn's ``Application startup complete.`` (the ready line).
Serving reuses the SGLang sim's scheduler and HTTP/SSE layer (several tokens per SSE chunk under
speculation) with vLLM's `/metrics` names and its 10 s throughput and ``SpecDecoding metrics`` lines.

Failures: an unknown flag (vLLM's top-level argparse error, exit 2); memory held by another
process (``Free memory on device ...``); a KV cache too small for ``--max-model-len`` or none at all
(``EngineCore failed to start.`` then ``RuntimeError: Engine core initialization failed``, exit 1);
port in use; a CUDA OOM under load kills the EngineCore (``EngineCore encountered a fatal error.``,
``EngineDeadError``), `/health` turns 503 and the API server's watchdog shuts uvicorn down: exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from simhost import gpu, procs, simstate
from simhost.sglang.engine import Engine
from simhost.sglang.http import App
from simhost.vllm import model
from simhost.vllm.core import TITLE, Core

VERSION = "0.11.0"
CORE_NAME = "EngineCore_DP0"
SUBCOMMANDS = "{chat,complete,serve,bench,collect-env,run-batch}"
ARCH = "Qwen3_5MoeForCausalLM"


def install_metadata(lib_dir: Path) -> None:
    """`vllm`'s package metadata in `lib_dir` (`DIR/lib/vllm`, on the path of the interpreter `/opt/vllm/bin/vllm`
    runs on under real systemd, and of nothing else: a real vLLM would take its version from it): preflight reads the
    installed version from it, as it does from a real install."""
    info = lib_dir / f"vllm-{VERSION}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {VERSION}\n")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vllm serve", add_help=False, usage="vllm serve [model_tag] [options]")
    p.add_argument("model_tag", nargs="?")
    p.add_argument("--model")
    p.add_argument("--served-model-name")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    p.add_argument("--data-parallel-size", "-dp", type=int, default=1)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--max-num-seqs", type=int, default=256)
    p.add_argument("--max-num-batched-tokens", type=int)
    p.add_argument("--speculative-config")
    p.add_argument("--block-size", type=int, choices=(1, 8, 16, 32, 64, 128, 256))
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--swap-space", type=float, default=4)
    p.add_argument("--scheduling-policy", default="fcfs", choices=("fcfs", "priority"))
    p.add_argument("--trust-remote-code", action="store_true")
    for name in ("enforce-eager", "enable-prefix-caching", "enable-chunked-prefill", "async-scheduling",
                 "disable-log-stats"):
        p.add_argument(f"--{name}", action=argparse.BooleanOptionalAction)
    return p


def prefix(name: str, pid: int) -> str:
    return f"\x1b[1;36m({name} pid={pid})\x1b[0;0m "


def stamp() -> str:
    return time.strftime("%m-%d %H:%M:%S")


class Server:
    def __init__(self, ns: argparse.Namespace, root: Path, scale: float) -> None:
        self.ns = ns
        self.root = root
        self.scale = scale
        self.model_path = ns.model_tag or ns.model or "facebook/opt-125m"
        self.served = ns.served_model_name or self.model_path
        self.tp = max(1, ns.tensor_parallel_size)
        self.util = float(ns.gpu_memory_utilization)
        self.spec_config: dict[str, Any] = json.loads(ns.speculative_config) if ns.speculative_config else {}
        self.k = int(self.spec_config.get("num_speculative_tokens") or 0)
        self.spec = self.k > 0
        self.max_len = int(ns.max_model_len or model.MODEL_MAX_LEN)
        self.shape = gpu.read_shape(root)
        self.total_mib = int(str(self.shape["memory_mib"]))
        self.total_gib = self.total_mib / 1024
        self.invocation = os.environ.get("INVOCATION_ID", "")
        self.core = Core()
        self.engine: Engine | None = None
        self.app: App | None = None
        self.tokens = 0
        self._last = (time.monotonic(), 0, 0, 0, 0)  # time, prompt, generated, drafts, accepted

    # ---- output ------------------------------------------------------------------------------
    def api(self, text: str) -> None:
        p = prefix("APIServer", os.getpid())
        sys.stdout.write("".join(p + ln + "\n" for ln in text.split("\n")))
        sys.stdout.flush()

    def api_log(self, where: str, msg: str, level: str = "INFO") -> None:
        head = f"{level} {stamp()} [{where}] "
        self.api("\n".join(head + ln for ln in msg.split("\n")))

    def core_out(self, text: str) -> None:
        p = prefix(CORE_NAME, self.core.pid or os.getpid())
        data = "".join(p + ln + "\n" for ln in text.split("\n"))
        if not self.core.write(data.encode()):
            sys.stdout.write(data)
            sys.stdout.flush()

    def core_log(self, where: str, msg: str, level: str = "INFO") -> None:
        head = f"{level} {stamp()} [{where}] "
        self.core_out("\n".join(head + ln for ln in msg.split("\n")))

    def uvicorn(self, msg: str) -> None:
        self.api(f"INFO:     {msg}")

    def hold(self, phase: str, util_pct: int = 0) -> None:
        mib = model.used_mib(phase, self.util, self.total_mib)
        gpu.hold(self.root, self.core.pid, TITLE, {r: mib for r in range(self.tp)},
                 {r: util_pct for r in range(self.tp)}, invocation=self.invocation)

    def kill_core(self) -> None:
        """SIGKILL the EngineCore; its GPU memory is free at once (a dead process holds none, even as a zombie)."""
        if self.core.pid:
            gpu.release(self.root, self.core.pid)
        self.core.kill()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds * self.scale)

    # ---- failures ----------------------------------------------------------------------------
    def core_failed(self, error: str) -> None:
        """EngineCore dies in start-up: its traceback, then the API server's RuntimeError, exit 1."""
        where = "core.py:708"
        self.core_log(where, "EngineCore failed to start.\nTraceback (most recent call last):\n"
                      '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 699, in '
                      "run_engine_core\n    engine_core = EngineCoreProc(*args, **kwargs)\n"
                      '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 498, in '
                      "__init__\n    super().__init__(vllm_config, executor_class, log_stats,\n"
                      '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/core/kv_cache_utils.py", '
                      "line 717, in check_enough_kv_cache_memory\n    raise ValueError(\n" + error, level="ERROR")
        self.core_out(f"Process {CORE_NAME}:\nTraceback (most recent call last):\n"
                      '  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap\n'
                      f"    self.run()\n{error}")
        self.kill_core()
        self.api("Traceback (most recent call last):\n"
                 '  File "/opt/vllm/bin/vllm", line 10, in <module>\n    sys.exit(main())\n'
                 '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/engine/utils.py", line 857, in '
                 "wait_for_engine_startup\n    raise RuntimeError(\n"
                 "RuntimeError: Engine core initialization failed. See root cause above. "
                 f"Failed core proc(s): {{'{CORE_NAME}': 1}}")
        sys.stdout.flush()
        os._exit(1)

    def on_oom(self, batch: int) -> None:
        asyncio.get_running_loop().create_task(self.engine_died(batch))

    async def engine_died(self, batch: int) -> None:
        need = batch * (self.k + 1) * 0.04
        used = self.util * self.total_gib + 1.5
        self.core_log("dump_input.py:69", f"Dumping input data for V1 LLM engine (v{VERSION}) with config: "
                      f"model='{self.model_path}', speculative_config={self._spec_repr()}", level="ERROR")
        self.core_log("dump_input.py:76", f"Dumping scheduler output for model execution: SchedulerOutput("
                      f"scheduled_new_reqs=[], num_scheduled_tokens={{...}}, total_num_scheduled_tokens="
                      f"{batch * (self.k + 1)})", level="ERROR")
        self.core_log("core.py:710", "EngineCore encountered a fatal error.\nTraceback (most recent call last):\n"
                      '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 701, in '
                      "run_engine_core\n    engine_core.run_busy_loop()\n"
                      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                      f"{max(0.25, need):.2f} GiB. GPU 0 has a total capacity of {self.total_gib:.2f} GiB of which "
                      f"{max(0.0, self.total_gib - used) * 1024:.2f} MiB is free. Including non-PyTorch memory, this "
                      f"process has {used:.2f} GiB memory in use.", level="ERROR")
        self.kill_core()
        self.api_log("async_llm.py:480", "AsyncLLM output_handler failed.\nTraceback (most recent call last):\n"
                     "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
                     "trace (above) for the root cause.", level="ERROR")
        if self.app is not None:
            self.app.status = "dead"
            for writer in list(self.app.connections):
                writer.close()
        await asyncio.sleep(max(0.2, 5.0 * self.scale))  # the API server's watchdog (every 5 s)
        self.shutdown()

    def shutdown(self) -> None:
        for msg in ("Shutting down", "Waiting for application shutdown.", "Application shutdown complete.",
                    f"Finished server process [{os.getpid()}]"):
            self.uvicorn(msg)
        self.kill_core()
        sys.stdout.flush()
        os._exit(0)

    def _spec_repr(self) -> str:
        if not self.spec:
            return "None"
        return (f"SpeculativeConfig(method='{self.spec_config.get('method', 'eagle')}', "
                f"model='{self.spec_config.get('model', '')}', num_spec_tokens={self.k})")

    # ---- start-up ----------------------------------------------------------------------------
    async def startup(self) -> None:
        self.hold("context")
        self.core_log("core.py:77", f"Initializing a V1 LLM engine (v{VERSION}) with config: model="
                      f"'{self.model_path}', speculative_config={self._spec_repr()}, tokenizer='{self.model_path}', "
                      f"dtype=torch.bfloat16, max_seq_len={self.max_len}, tensor_parallel_size={self.tp}, "
                      f"served_model_name={self.served}, enable_prefix_caching=True")
        others = gpu.used_mib(self.root, exclude_pid=self.core.pid)
        free = self.total_gib - max(others.values(), default=0) / 1024
        if free < self.util * self.total_gib:
            await self.sleep(3.0)
            self.core_failed(f"ValueError: Free memory on device ({free:.2f}/{self.total_gib:.2f} GiB) on startup "
                             f"is less than desired GPU memory utilization ({self.util}, "
                             f"{self.util * self.total_gib:.2f} GiB). Decrease GPU memory utilization or reduce "
                             "GPU memory used by other processes.")
        self.core_log("gpu_model_runner.py:2602", f"Starting to load model {self.model_path}...")
        await self.sleep(70.0)
        self.hold("weights")
        self.core_log("default_loader.py:267", "Loading weights took 68.12 seconds")
        self.core_log("gpu_model_runner.py:2653", f"Model loading took {model.WEIGHTS_GIB:.4f} GiB and "
                      "70.214513 seconds")
        await self.sleep(6.0)
        kv_gib = model.kv_cache_gib(self.util, self.total_mib, self.ns.max_num_seqs, self.k, self.spec)
        if kv_gib <= 0:
            self.core_failed("ValueError: No available memory for the cache blocks. Try increasing "
                             "`gpu_memory_utilization` when initializing the engine.")
        self.core_log("gpu_worker.py:298", f"Available KV cache memory: {kv_gib:.2f} GiB")
        self.tokens = model.kv_tokens(kv_gib)
        if self.tokens < self.max_len:
            need = self.max_len * model.KV_BYTES_PER_TOKEN / model.GIB
            self.core_failed(f"ValueError: To serve at least one request with the models's max seq len "
                             f"({self.max_len}), ({need:.2f} GiB KV cache is needed, which is larger than the "
                             f"available KV cache memory ({kv_gib:.2f} GiB). Based on the available memory, the "
                             f"estimated maximum model length is {self.tokens}. Try increasing "
                             "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
        self.core_log("kv_cache_utils.py:1087", f"GPU KV cache size: {self.tokens:,} tokens")
        self.core_log("kv_cache_utils.py:1091", f"Maximum concurrency for {self.max_len:,} tokens per request: "
                      f"{self.tokens / self.max_len:.2f}x")
        if not self.ns.enforce_eager:
            await self.sleep(12.0)
            self.core_log("gpu_model_runner.py:3480", "Graph capturing finished in 12 secs, took 0.52 GiB")
        self.core_log("core.py:210", "init engine (profile, create kv cache, warmup model) took 19.84 seconds")
        self.hold("serving")
        residual = float(simstate.read(self.root).get("residual_gib", 0.0))
        self.engine = Engine(steps=self.k, draft_tokens=self.k + 1, max_running=max(1, self.ns.max_num_seqs),
                             max_total_tokens=self.tokens,
                             workspace_gib=model.workspace_gib(self.util, self.total_mib, self.k, residual),
                             decode_log_interval=10**9, log=lambda _m: None, on_oom=self.on_oom, spec=self.spec,
                             cuda_graph=not self.ns.enforce_eager)

    # ---- serving -----------------------------------------------------------------------------
    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.on_sigterm)
        self.app = VllmApp(self)
        try:
            server = await asyncio.start_server(self.app.handle, self.ns.host, self.ns.port, reuse_address=True)
        except OSError as exc:  # vLLM binds before it builds the engine
            await self.sleep(2.0)
            self.api("Traceback (most recent call last):\n"
                     '  File "/opt/vllm/lib/python3.12/site-packages/vllm/entrypoints/openai/api_server.py", '
                     "line 1866, in create_server_socket\n    sock.bind(addr)\n"
                     f"OSError: [Errno {exc.errno or 98}] Address already in use")
            self.kill_core()
            sys.stdout.flush()
            os._exit(1)
        await self.startup()
        assert self.engine is not None
        self.app.engine = self.engine
        engine_task = asyncio.create_task(self.engine.run())
        self.api_log("api_server.py:1912", f"Starting vLLM API server 0 on http://{self.ns.host}:{self.ns.port}")
        self.api_log("launcher.py:34", "Available routes are:")
        for route, methods in (("/health", "GET"), ("/metrics", "GET"), ("/version", "GET"),
                               ("/v1/models", "GET"), ("/v1/chat/completions", "POST"), ("/v1/completions", "POST")):
            self.api_log("launcher.py:42", f"Route: {route}, Methods: {methods}")
        self.uvicorn(f"Started server process [{os.getpid()}]")
        self.uvicorn("Waiting for application startup.")
        self.app.status = "ready"
        self.uvicorn("Application startup complete.")
        stats = asyncio.create_task(self.stats_loop())
        async with server:
            await engine_task
        stats.cancel()

    async def stats_loop(self) -> None:
        """Every VLLM_LOG_STATS_INTERVAL (10 s, time-scaled) the throughput line, and with speculation the
        SpecDecoding line — only when something ran (an idle engine logs them at DEBUG)."""
        interval = max(0.5, 10.0 * self.scale)
        busy = False
        while True:
            await asyncio.sleep(interval)
            eng = self.engine
            if eng is None or eng.halted:
                continue
            now_busy = bool(eng.running)
            if now_busy != busy:
                busy = now_busy
                self.hold("serving", 97 if busy else 0)
            st = eng.stats
            t0, p0, g0, d0, a0 = self._last
            now = time.monotonic()
            dt = max(1e-6, now - t0)
            drafts, accepted = st.verify_steps - d0, st.accepted_tokens - a0
            if st.generation_tokens == g0 and st.prompt_tokens == p0:
                continue
            self._last = (now, st.prompt_tokens, st.generation_tokens, st.verify_steps, st.accepted_tokens)
            usage = 100 * eng.used_tokens / max(1, self.tokens)
            self.api_log("loggers.py:127", f"Engine 000: Avg prompt throughput: {(st.prompt_tokens - p0) / dt:.1f} "
                         f"tokens/s, Avg generation throughput: {(st.generation_tokens - g0) / dt:.1f} tokens/s, "
                         f"Running: {len(eng.running)} reqs, Waiting: {len(eng.queue)} reqs, GPU KV cache usage: "
                         f"{usage:.1f}%, Prefix cache hit rate: 0.0%")
            if self.spec and drafts > 0:
                spec_acc = accepted - drafts  # the bonus token of each step is not a draft
                mean = 1 + spec_acc / drafts
                c = 2 * (mean - 1) / (self.k * (self.k + 1))
                per_pos = ", ".join(f"{min(1.0, c * (self.k - i)):.3f}" for i in range(self.k))
                self.api_log("metrics.py:97", f"SpecDecoding metrics: Mean acceptance length: {mean:.2f}, "
                             f"Accepted throughput: {spec_acc / dt:.2f} tokens/s, Drafted throughput: "
                             f"{drafts * self.k / dt:.2f} tokens/s, Accepted: {spec_acc} tokens, Drafted: "
                             f"{drafts * self.k} tokens, Per-position acceptance rate: {per_pos}, Avg Draft "
                             f"acceptance rate: {100 * spec_acc / (drafts * self.k):.1f}%")

    def on_sigterm(self) -> None:
        if self.app is not None:
            self.app.status = "draining"
        self.shutdown()

    def metrics_text(self) -> str:
        eng = self.engine
        labels = f'engine="0",model_name="{self.served}"'
        st = eng.stats if eng is not None else None
        running = len(eng.running) if eng else 0
        waiting = len(eng.queue) if eng else 0
        usage = (eng.used_tokens / max(1, self.tokens)) if eng else 0.0
        drafts = st.verify_steps if st and self.spec else 0
        accepted = (st.accepted_tokens - st.verify_steps) if st and self.spec else 0
        rows: list[tuple[str, str, float]] = [
            ("vllm:num_requests_running", "gauge", running), ("vllm:num_requests_waiting", "gauge", waiting),
            ("vllm:kv_cache_usage_perc", "gauge", usage), ("vllm:gpu_cache_usage_perc", "gauge", usage),
            ("vllm:prompt_tokens_total", "counter", st.prompt_tokens if st else 0),
            ("vllm:generation_tokens_total", "counter", st.generation_tokens if st else 0),
            ("vllm:request_success_total", "counter", st.requests if st else 0),
        ]
        if self.spec:
            rows += [("vllm:spec_decode_num_drafts_total", "counter", drafts),
                     ("vllm:spec_decode_num_draft_tokens_total", "counter", drafts * self.k),
                     ("vllm:spec_decode_num_accepted_tokens_total", "counter", accepted)]
        out: list[str] = []
        for name, kind, value in rows:
            base = name.removesuffix("_total") if kind == "counter" else name
            out += [f"# HELP {base} {base}.", f"# TYPE {base} {kind}", f"{name}{{{labels}}} {float(value)}"]
        return "\n".join(out) + "\n"


class VllmApp(App):
    """The SGLang sim's HTTP/SSE layer with vLLM's own endpoints (`/version`, `/v1/models` owned by vllm)."""

    def __init__(self, server: Server) -> None:
        placeholder = Engine(steps=0, draft_tokens=1, max_running=1, max_total_tokens=1, workspace_gib=1.0,
                             decode_log_interval=10**9, log=lambda _m: None, on_oom=lambda _b: None, spec=False)
        super().__init__(engine=placeholder, served_name=server.served, model_path=server.model_path,
                         context_len=server.max_len, server_info=lambda: {"version": VERSION},
                         metrics=server.metrics_text, access_log=server.uvicorn)
        self.vllm = server

    async def route(self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter,
                    access: Any) -> int:
        if path == "/version":
            return self.send(writer, 200, {"version": VERSION})
        if path == "/v1/models":
            return self.send(writer, 200, {"object": "list", "data": [{
                "id": self.served_name, "object": "model", "created": int(time.time()), "owned_by": "vllm",
                "root": self.model_path, "parent": None, "max_model_len": self.context_len}]})
        if path in ("/generate", "/server_info", "/get_server_info", "/model_info", "/get_model_info",
                    "/health_generate", "/flush_cache"):
            return self.send(writer, 404, {"detail": "Not Found"})
        if self.status == "dead" and method == "POST":
            return self.send(writer, 500, {"object": "error", "message": "EngineCore encountered an issue.",
                                           "type": "InternalServerError", "code": 500})
        return await super().route(method, path, body, writer, access)


def bad_args(unknown: list[str]) -> int:
    for line in ("usage: vllm [-h] [-v]", f"            {SUBCOMMANDS}", "            ...",
                 f"vllm: error: unrecognized arguments: {' '.join(unknown)}"):
        print(line, file=sys.stderr, flush=True)
    return 2


def main(argv: list[str]) -> int:
    procs.set_comm("vllm")
    root = Path(os.environ.get("SIMHOST_DIR", "."))
    scale = float(os.environ.get("SIMHOST_TIME_SCALE", "1.0"))
    if argv[:1] == ["serve"]:
        argv = argv[1:]
    if any(a == "--help" or a.startswith("--help=") for a in argv):  # as vLLM: the flags, exit 0 (no engine)
        print(build_parser().format_help(), end="")
        return 0
    ns, unknown = build_parser().parse_known_args(argv)
    if unknown:
        return bad_args(unknown)
    server = Server(ns, root, scale)
    pid = os.getpid()
    head = prefix("APIServer", pid)
    print(f"{head}INFO {stamp()} [api_server.py:1839] vLLM API server version {VERSION}", flush=True)
    non_default = {k: v for k, v in vars(ns).items() if v not in (None, False) and k != "model_tag"}
    print(f"{head}INFO {stamp()} [utils.py:233] non-default args: {non_default}", flush=True)
    print(f"{head}INFO {stamp()} [model.py:547] Resolved architecture: {ARCH}", flush=True)
    if server.max_len > model.MODEL_MAX_LEN:
        print(f"{head}ValueError: User-specified max_model_len ({server.max_len}) is greater than the derived "
              f"max_model_len (max_position_embeddings={model.MODEL_MAX_LEN} in model's config.json).", flush=True)
        return 1
    print(f"{head}INFO {stamp()} [model.py:1510] Using max model len {server.max_len}", flush=True)
    server.core.fork()
    try:
        asyncio.run(server.run())
    finally:
        server.kill_core()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
