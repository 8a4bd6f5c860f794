"""`python3 -m sglang.launch_server ...` on the simulated host: the fake SGLang 0.5.9 process.

Start-up in SGLang's order and formats (FORMATS.md a.3) over time-scaled phases: argparse, the
bare `__post_init__` warnings, `server_args=...`, one forked scheduler process per TP rank
(`sglang::scheduler_TPn`, holding its GPU's memory in the ledger), torch distributed init, weight
loading, KV cache allocation, CUDA graph capture, uvicorn's lines, the warm-up and the ready line.
Then serving (see `engine`, `http`). SIGTERM drains and then SIGKILLs the whole tree, itself
included (as `kill_process_tree` does); with requests in flight the drain never ends because the
schedulers died of the same SIGTERM, so systemd's stop timeout fires. Failures: argparse errors
(exit 2), missing model path, nvidia-smi failing (lost GPU), torch CUDA OOM at load (memory held
by someone else), `Not enough memory` (KV pool or draft worker), port in use, CUDA OOM under load,
NCCL watchdog (SIGUSR1 from the sim), Xid/CUDA error (SIGUSR2).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from simhost import gpu, procs, simstate
from simhost.sglang import args as sgargs
from simhost.sglang import model, ranks, texts
from simhost.sglang.engine import Engine
from simhost.sglang.http import App
from simhost.sglang.metrics import metrics_text, server_info

CONTEXT_LEN = 262144


def stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


TP_SIZE = 1


def emit(data: str, tp: int | None = None) -> None:
    """Write to the service's stdout, from rank `tp`'s scheduler process when there is one."""
    if tp is not None and ranks.write_as(tp, data.encode("utf-8", "surrogateescape")):
        return
    sys.stdout.write(data)
    sys.stdout.flush()


def out(line: str, tp: int | None = None) -> None:
    emit(line + "\n", tp)


def _mmss(seconds: float) -> str:
    return f"{int(seconds) // 60:02d}:{int(seconds) % 60:02d}"


def log(msg: str, tp: int | None = None) -> None:
    """SGLang's logger line; scheduler lines (`tp` given) carry ` TPn` when TP > 1 (one write, so
    the traceback's continuation lines come from the same process)."""
    prefix = f" TP{tp}" if tp is not None and TP_SIZE > 1 else ""
    lines = msg.split("\n")
    emit("\n".join([f"[{stamp()}{prefix}] {lines[0]}", *lines[1:]]) + "\n", tp)


def uvicorn(level: str, msg: str) -> None:
    out(f"[{stamp()}] {(level + ':').ljust(9)} {msg}")


class Server:
    def __init__(self, adj: sgargs.Adjusted, root: Path, scale: float) -> None:
        self.adj = adj
        self.ns = adj.ns
        self.root = root
        self.scale = scale
        self.tp = max(1, int(self.ns.tp_size))
        self.shape = gpu.read_shape(root)
        self.total_mib = int(str(self.shape["memory_mib"]))
        self.total_gib = self.total_mib / 1024
        self.children: list[int] = []
        self.invocation = os.environ.get("INVOCATION_ID", "")
        self.d = adj.draft_tokens
        self.mem_fraction = float(self.ns.mem_fraction_static)
        self.engine: Engine | None = None
        self.app: App | None = None
        self.tokens = 0
        self.max_running = 0
        self.started = time.time()
        self.load_time = 0.0
        self.phase = "context"

    # ---- process tree -------------------------------------------------------------------------
    def fork_schedulers(self) -> None:
        global TP_SIZE
        TP_SIZE = self.tp
        self.children = ranks.fork_ranks(self.tp)

    def hold(self, phase: str, util: int = 0) -> None:
        self.phase = phase
        mib = model.used_mib(phase, self.d, self.mem_fraction, self.total_mib)
        for rank, pid in enumerate(self.children):
            name = ranks.title(rank, self.tp)
            gpu.hold(self.root, pid, name, {rank: mib}, {rank: util}, invocation=self.invocation)

    def kill_tree(self) -> None:
        sys.stdout.flush()
        for pid in self.children:
            procs.kill(pid, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

    def child_failed(self, lines: list[str], tp: int = 0, launching: bool = True) -> None:
        log("Scheduler hit an exception: Traceback (most recent call last):\n" + "\n".join(lines), tp=tp)
        if launching:
            log("Received sigquit from a child process. It usually means the child failed.")
        else:
            log("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
        self.kill_tree()

    async def phase_sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds * self.scale)

    async def progress(self, label: str, total: int, seconds: float, ascii_bar: bool = False) -> None:
        """A tqdm bar as TP0 writes it: `\r`-separated refreshes, one newline at the end (so the
        journal stores the whole history as one entry whose MESSAGE is a byte array)."""
        steps = 8
        for i in range(steps + 1):
            done = total * i // steps
            elapsed = seconds * i / steps
            left = seconds - elapsed
            rate = f"{seconds / total:.2f}s/it" if i else "?it/s"
            pct = 100 * done // total
            if ascii_bar:
                bar = f"{label}: {pct:3d}% Completed | {done}/{total} [{_mmss(elapsed)}<{_mmss(left)}, {rate}]"
            else:
                filled = "█" * (pct // 10) + " " * (10 - pct // 10)
                bar = f"{label}: {pct:3d}%|{filled}| {done}/{total} [{_mmss(elapsed)}<{_mmss(left)}, {rate}]"
            emit("\r" + bar, tp=0)
            if i < steps:
                await self.phase_sleep(seconds / steps)
        emit("\n", tp=0)

    # ---- start-up -----------------------------------------------------------------------------
    async def startup(self) -> bool:
        state = simstate.read(self.root)
        residual = float(state.get("residual_gib", 0.0))
        others = gpu.used_mib(self.root)
        for pid in self.children:
            for h in gpu.holders(self.root):
                if h.pid == pid:
                    for i, mib in h.mib.items():
                        others[i] -= mib
        mine = {pid for pid in self.children}
        foreign = [h for h in gpu.holders(self.root) if h.pid not in mine]
        self.hold("context")
        for rank in range(self.tp):
            log("Init torch distributed begin.", tp=rank)
        count = int(str(self.shape.get("count", 4)))
        if self.tp > count:  # more TP ranks than GPUs: rank `count` has no device
            await self.phase_sleep(1.0)
            self.child_failed(["torch.AcceleratorError: CUDA error: invalid device ordinal",
                               *texts.cuda_error_lines()[1:]], tp=count)
        await self.phase_sleep(2.0)
        for rank in range(self.tp):
            log("Init torch distributed ends. elapsed=2.03 s, mem usage=0.52 GB", tp=rank)
        avail = [self.total_gib - others.get(r, 0) / 1024 - 0.5 for r in range(self.tp)]
        if min(avail) < 0.9 * max(avail):
            for rank in range(self.tp):
                log("The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
                    f"min_per_gpu_memory={min(avail):.2f}, local_gpu_memory={avail[rank]:.2f}, "
                    f"local_gpu_memory * 0.9={avail[rank] * 0.9:.2f}", tp=rank)
        for rank in range(self.tp):
            log(f"Load weight begin. avail mem={avail[rank]:.2f} GB", tp=rank)
        weights = model.WEIGHTS_GIB
        slow = 3.0 if state.get("slow_load") else 1.0
        for rank in range(self.tp):
            if avail[rank] < weights:
                await self.phase_sleep(70.0 * slow * max(0.05, avail[rank] / weights))
                holders = [(h.pid, h.mib.get(rank, 0) / 1024) for h in foreign if h.mib.get(rank)]
                self.child_failed(texts.torch_oom(rank, 1.17, self.total_gib, max(0.0, avail[rank] - 0.2),
                                                  avail[rank] - 0.2 + 0.5 - max(0.0, avail[rank] - weights),
                                                  holders, "load"), tp=rank)
        await self.progress("Loading safetensors checkpoint shards", 47, 70.0 * slow, ascii_bar=True)
        self.hold("weights")
        self.load_time = 70.0 * slow
        for rank in range(self.tp):
            log(f"Load weight end. elapsed={70.0 * slow + 0.13:.2f} s, type=Qwen3_5MoeForCausalLM, "
                f"dtype=torch.bfloat16, avail mem={avail[rank] - weights:.2f} GB, mem usage={weights:.2f} GB.",
                tp=rank)
        other_gib = max(others.values()) / 1024 if others else 0.0
        frac_eff = self.mem_fraction - other_gib / self.total_gib
        self.tokens = model.max_total_num_tokens(self.d, frac_eff, self.total_mib)
        if self.ns.max_total_tokens:
            self.tokens = min(self.tokens, int(self.ns.max_total_tokens))
        await self.phase_sleep(1.5)
        if self.tokens <= 0:
            self.child_failed(texts.not_enough_memory(self.mem_fraction, draft=False))
        kv_gib = (self.mem_fraction * self.total_gib - weights)
        for rank in range(self.tp):
            log(f"KV Cache is allocated. #tokens: {self.tokens}, K size: {kv_gib / 2:.2f} GB, "
                f"V size: {kv_gib / 2:.2f} GB", tp=rank)
        self.hold("kv")
        free_after = (1 - self.mem_fraction) * self.total_gib - other_gib
        for rank in range(self.tp):
            log(f"Memory pool end. avail mem={free_after:.2f} GB", tp=rank)
        workspace = model.workspace_gib(self.d, self.mem_fraction, self.total_mib, residual + other_gib)
        if self.adj.spec and workspace < 0:
            await self.phase_sleep(3.0)
            self.child_failed(texts.not_enough_memory(self.mem_fraction, draft=True))
        graph_gib = model.BASE_GIB + model.GRAPH_GIB_PER_DRAFT * self.d
        if not self.ns.disable_cuda_graph:
            for rank in range(self.tp):
                log("Capture cuda graph begin. This can take up to several minutes. "
                    f"avail mem={free_after:.2f} GB", tp=rank)
            await self.progress(f"Capturing batches (bs=1 avail_mem={free_after - 0.8:.2f} GB)", 23, 22.0)
            for rank in range(self.tp):
                log(f"Capture cuda graph end. Time elapsed: 22.41 s. mem usage={graph_gib:.2f} GB. "
                    f"avail mem={free_after - graph_gib:.2f} GB.", tp=rank)
            if self.adj.spec:
                left = free_after - graph_gib
                for label, secs in (("draft", 4.0), ("draft extend", 3.0)):
                    for rank in range(self.tp):
                        log(f"Capture {label} cuda graph begin. This can take up to several minutes. "
                            f"avail mem={left:.2f} GB", tp=rank)
                    await self.phase_sleep(secs)
                    used = model.DRAFT_NEED_GIB / 2
                    left -= used
                    for rank in range(self.tp):
                        log(f"Capture {label} cuda graph end. Time elapsed: {secs + 0.37:.2f} s. "
                            f"mem usage={used:.2f} GB. avail mem={left:.2f} GB.", tp=rank)
        self.hold("serving")
        self.max_running = model.max_running_requests(self.tokens, self.ns.max_running_requests)
        log(f"max_total_num_tokens={self.tokens}, chunked_prefill_size={self.ns.chunked_prefill_size}, "
            f"max_prefill_tokens={self.ns.max_prefill_tokens}, max_running_requests={self.max_running}, "
            f"context_len={CONTEXT_LEN}, available_gpu_mem={max(0.0, workspace):.2f} GB", tp=0)
        self.engine = Engine(steps=self.adj.steps, draft_tokens=self.d, max_running=max(1, self.max_running),
                             max_total_tokens=self.tokens, workspace_gib=workspace,
                             decode_log_interval=self.ns.decode_log_interval, log=lambda m: log(m, tp=0),
                             on_oom=self.on_oom, spec=self.adj.spec, cuda_graph=not self.ns.disable_cuda_graph,
                             noise_pct=float(os.environ.get("SIMHOST_NOISE_PCT") or 0.0),
                             noise_seed=f"{os.environ.get('SIMHOST_NOISE_SEED', '0')}:{self.start_number()}")
        return True

    def start_number(self) -> int:
        """How many servers this host started before this one (seeds the noise of each start apart)."""
        n = int(simstate.read(self.root).get("server_starts") or 0)
        simstate.update(self.root, server_starts=n + 1)
        return n

    def on_oom(self, batch: int) -> None:
        simstate.update(self.root, residual_gib=model.OOM_RESIDUAL_GIB)
        need = batch * self.d * model.ACT_GIB
        ws = self.engine.workspace if self.engine else 0.0
        used = model.used_mib("serving", self.d, self.mem_fraction, self.total_mib) / 1024
        free = max(0.0, self.total_gib - used)
        lines = texts.torch_oom(0, need - max(0.0, ws) + 0.25, self.total_gib, free, used, [], "decode")
        self.child_failed(lines, tp=0, launching=False)

    # ---- serving ------------------------------------------------------------------------------
    async def serve(self) -> None:
        assert self.engine is not None
        ns = self.ns
        self.app = App(engine=self.engine, served_name=ns.served_model_name, model_path=ns.model_path,
                       context_len=CONTEXT_LEN, server_info=lambda: server_info(self),
                       metrics=(lambda: metrics_text(self)) if ns.enable_metrics else None,
                       access_log=lambda m: uvicorn("INFO", m))
        self.app.health_timeout = 20.0 * self.scale
        self.app.error_log = log
        self.app.received = lambda prompt, stream, max_tokens: simstate.record_received(
            self.root, prompt, stream=stream, max_tokens=max_tokens)
        engine_task = asyncio.create_task(self.engine.run())
        uvicorn("INFO", f"Started server process [{os.getpid()}]")
        uvicorn("INFO", "Waiting for application startup.")
        uvicorn("INFO", "Application startup complete.")
        try:
            server = await asyncio.start_server(self.app.handle, ns.host, ns.port, reuse_address=True)
        except OSError as exc:
            uvicorn("ERROR", f"[Errno {exc.errno}] error while attempting to bind on address "
                    f"('{ns.host}', {ns.port}): {os.strerror(exc.errno or 98).lower()}")
            await self.phase_sleep(120.0)
            for line in texts.warmup_failed(ns.host, ns.port):
                out(line) if not line.startswith("Initialization") else log(line)
            self.kill_tree()
            return
        uvicorn("INFO", f"Uvicorn running on http://{ns.host}:{ns.port} (Press CTRL+C to quit)")
        await self.phase_sleep(1.0)
        uvicorn("INFO", f'127.0.0.1:{40000 + os.getpid() % 20000} - "GET /model_info HTTP/1.1" 200 OK')
        if not ns.skip_server_warmup:
            log("Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, "
                "#queue-req: 0, ", tp=0)
            await self.phase_sleep(2.0)
            uvicorn("INFO", f'127.0.0.1:{40001 + os.getpid() % 20000} - "POST /generate HTTP/1.1" 200 OK')
        self.app.status = "ready"
        log("The server is fired up and ready to roll!")
        util_task = asyncio.create_task(self.util_loop())
        async with server:
            await engine_task
        util_task.cancel()

    async def util_loop(self) -> None:
        busy = False
        while True:
            await asyncio.sleep(0.5)
            now_busy = bool(self.engine and self.engine.running and not self.engine.halted)
            if now_busy != busy:
                busy = now_busy
                self.hold("serving", util=97 if busy else 0)

    def on_sigterm(self) -> None:
        log("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
        if self.app is not None:
            self.app.status = "draining"
        asyncio.get_running_loop().create_task(self.drain())

    async def drain(self) -> None:
        await asyncio.sleep(0.05)
        if self.engine is not None and not any(procs.alive(p) for p in self.children):
            self.engine.halted = True
        while self.engine is not None and self.engine.in_flight():
            rids = [r.rid for r in self.engine.in_flight()]
            log(f"Gracefully exiting... Remaining number of requests {len(rids)}. "
                f"Remaining requests remaining_rids={rids}.")
            await self.phase_sleep(5.0)
        self.kill_tree()

    def on_nccl(self) -> None:
        for rank in range(self.tp):
            emit("".join(line + "\n" for line in texts.nccl_watchdog(rank, 48213)), tp=rank)
        for pid in self.children:
            procs.kill(pid, signal.SIGABRT)
        if self.engine is not None:
            self.engine.halted = True
        if self.app is not None:
            self.app.last_heartbeat = time.strftime("%H:%M:%S")

    def on_xid(self) -> None:
        self.child_failed(texts.cuda_error_lines(), tp=0, launching=self.app is None)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.on_sigterm)
        loop.add_signal_handler(signal.SIGUSR1, self.on_nccl)
        loop.add_signal_handler(signal.SIGUSR2, self.on_xid)
        await self.startup()
        await self.serve()


def main(argv: list[str]) -> int:
    procs.set_comm("python3")
    root = Path(os.environ.get("SIMHOST_DIR", "."))
    scale = float(os.environ.get("SIMHOST_TIME_SCALE", "1.0"))
    ns = sgargs.build_parser().parse_args(argv)
    adj = sgargs.adjust(ns)
    for warning in adj.warnings:
        print(warning, file=sys.stderr, flush=True)
    shape = gpu.read_shape(root)
    if shape.get("lost"):
        from simhost.tools.nvidia_smi import bus_id

        lost = int(shape["lost"][0])  # type: ignore[index]
        for line in texts.nvidia_smi_failed(f"Unable to determine the device handle for GPU{bus_id(lost)}: "
                                            "Unknown Error"):
            print(line, file=sys.stderr, flush=True)
        return 1
    if not Path(ns.model_path).exists():
        for line in texts.model_path_missing(ns.model_path):
            print(line, file=sys.stderr, flush=True)
        return 1
    log(sgargs.server_args_repr(ns))
    server = Server(adj, root, scale)
    server.fork_schedulers()
    try:
        asyncio.run(server.run())
    finally:
        server.kill_tree()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
