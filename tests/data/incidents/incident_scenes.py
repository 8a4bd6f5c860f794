"""Engine start-up, serving and failure sequences shared by the cases of incident_build.py.

The lines here are the engines' own templates (SGLang 0.4/0.5 and vLLM 0.8-0.11 start-up, Decode and
throughput lines, the failure wrappers: FORMATS a.3/a.4/b.3/b.4/b.5); the lines that carry each failure are
passed in by the case and quoted from its public report.
"""

from __future__ import annotations

from typing import Any

from incident_kit import Case, Inv

ALL = (
    "kv_cache_oom", "cuda_oom_runtime", "cuda_graph_capture_oom", "stop_timeout_sigkill", "operator_action",
    "gpu_memory_held_by_stale_process", "port_in_use", "bad_argument", "model_load_failure", "nccl_failure",
    "gpu_hardware_xid", "segfault", "engine_exception", "host_oom_kill", "healthy", "unknown",
)
NOT_HEALTHY = tuple(x for x in ALL if x != "healthy")


def sver(c: Case) -> tuple[int, int, int]:
    parts = c.version.split(".")
    return int(parts[0]), int(parts[1]), int(parts[2][:1] if len(parts) > 2 else 0)


# --- SGLang -------------------------------------------------------------------------------------


def sglang_boot(c: Case, inv: Inv, until: str = "ready", *, avail: float = 78.54) -> None:
    """SGLang start-up up to `until` (load | weights | capture | ready)."""
    s = c.slog
    c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...) is ~10 KB: null in journalctl -o json
    c.app(inv, s("Init torch distributed begin."), "sched", dt=2.0)
    c.app(inv, s(f"Load weight begin. avail mem={avail:.2f} GB"), "sched", dt=2.2)
    if until == "load":
        return
    c.app(inv, "\rLoading safetensors checkpoint shards:  47% Completed | 8/17 [00:15<00:17,  1.98s/it]"
               "\rLoading safetensors checkpoint shards: 100% Completed | 17/17 [00:33<00:00,  1.95s/it]\r",
          "sched", dt=34.0)
    c.app(inv, s(f"Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem={avail - 61.5:.2f} GB, "
                 "mem usage=61.53 GB."), "sched")
    if until == "weights":
        return
    c.app(inv, s("KV Cache is allocated. #tokens: 201522, K size: 6.15 GB, V size: 6.15 GB"), "sched", dt=1.0)
    c.app(inv, s(f"Memory pool end. avail mem={avail - 73.8:.2f} GB"), "sched")
    c.app(inv, s("Capture cuda graph begin. This can take up to several minutes." +
                 (f" avail mem={avail - 73.9:.2f} GB" if sver(c) >= (0, 4, 4) else "")), "sched")
    if until == "capture":
        return
    c.app(inv, "\rCapturing batches (bs=160 avail_mem=4.51 GB):   4%|▍         | 1/23 [00:00<00:10,  2.11it/s]"
               "\rCapturing batches (bs=1 avail_mem=3.93 GB): 100%|██████████| 23/23 [00:09<00:00,  2.47it/s]\r",
          "sched", dt=9.5)
    c.app(inv, s("Capture cuda graph end. Time elapsed: 9.61 s. mem usage=0.98 GB. avail mem=3.73 GB."), "sched")
    c.app(inv, s("max_total_num_tokens=201522, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                 "max_running_requests=2049, context_len=32768, available_gpu_mem=3.73 GB"), "sched")
    c.app(inv, f"INFO:     Started server process [{inv.main}]", dt=1.0)
    c.app(inv, "INFO:     Waiting for application startup.")
    c.app(inv, "INFO:     Application startup complete.")
    c.app(inv, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    info = "/get_model_info" if sver(c) < (0, 5, 5) else "/model_info"
    c.app(inv, s(f'INFO:     127.0.0.1:40110 - "GET {info} HTTP/1.1" 200 OK', None), dt=1.0)
    c.app(inv, s(f"Prefill batch{'.' if sver(c) < (0, 5, 5) else ','} #new-seq: 1, #new-token: 6, #cached-token: 0, "
                 "token usage: 0.00, #running-req: 0, #queue-req: 0,"), "sched")
    c.app(inv, s('INFO:     127.0.0.1:40116 - "POST /generate HTTP/1.1" 200 OK', None), dt=0.8)
    c.app(inv, s("The server is fired up and ready to roll!", None), dt=0.1)


def sglang_decode(c: Case, inv: Inv, n: int = 4, *, tput: float = 1480.0, running: int = 24,
                  access: bool = True) -> None:
    """`Decode batch` lines (version's template) with client access lines between them."""
    v = sver(c)
    head = "Decode batch." if v < (0, 5, 5) else "Decode batch,"
    tail = ", " if (0, 5, 2) <= v < (0, 5, 9) else ""
    for i in range(n):
        g = tput + 37.0 * ((i * 7) % 5) - 60.0
        c.app(inv, c.slog(f"{head} #running-req: {running}, #token: {52000 + 913 * i}, token usage: 0.26, "
                          f"cuda graph: True, gen throughput (token/s): {g:.2f}, #queue-req: 0{tail}").rstrip(),
              "sched", dt=6.0)
        if access:
            c.app(inv, c.slog(f'INFO:     10.0.4.{17 + i}:5{1200 + 17 * i} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
                              None), dt=0.4)


def sglang_sched_exception(c: Case, inv: Inv, lines: list[str], *, role: str = "sched") -> None:
    c.app(inv, c.slog("Scheduler hit an exception: Traceback (most recent call last):"), role, dt=0.5)
    c.many(inv, lines, role)


def sglang_sigquit(c: Case, inv: Inv, serving: bool) -> None:
    if serving and sver(c) >= (0, 5, 5):
        c.app(inv, c.slog("SIGQUIT received. signum=None, frame=None. It usually means one child failed.", None))
    else:
        c.app(inv, c.slog("Received sigquit from a child process. It usually means the child failed.", None))


def sglang_start_fails(c: Case, attempts: int, until: str, lines: list[str], *, restart_last: bool = True,
                       tp_extra: bool = False) -> list[Inv]:
    """`attempts` starts that each die in start-up with the scheduler's traceback (`lines`)."""
    invs = []
    for k in range(attempts):
        inv = c.start(dt=0.3 if k == 0 else 0.1)
        invs.append(inv)
        sglang_boot(c, inv, until)
        sglang_sched_exception(c, inv, lines)
        if tp_extra:
            sglang_sched_exception(c, inv, lines[-1:], role="sched1")
        sglang_sigquit(c, inv, serving=False)
        c.exit(inv, "killed", "9", restart=k < attempts - 1 or restart_last, cpu="1min 12.517s")
    return invs


def sglang_drain(c: Case, inv: Inv, n: int, remaining: int = 3) -> None:
    c.app(inv, c.slog("SIGTERM received. signum=None frame=None. Draining requests and shutting down...", None),
          dt=0.05)
    for _ in range(n):
        c.app(inv, c.slog(f"Gracefully exiting... Remaining number of requests {remaining}. Remaining requests "
                          "remaining_rids=['5d1f0a', '9c2e44', 'b07a13'].", None), dt=5.0)


# --- vLLM ---------------------------------------------------------------------------------------


def vproc(c: Case) -> str:
    """Where model loading is logged: the worker with TP > 1, else EngineCore (V1) / main (V0)."""
    if c.tp > 1:
        return "worker"
    return "engine" if c.v1 else "main"


def vllm_boot(c: Case, inv: Inv, until: str = "ready") -> None:
    """vLLM start-up up to `until` (load | weights | profile | capture | ready)."""
    v, p = c.vlog, vproc(c)
    eng = "engine" if c.v1 else "main"
    c.app(inv, v("INFO", "api_server.py:1839" if c.v1 else "api_server.py:1044",
                 f"vLLM API server version {c.version}"), dt=4.0)
    c.app(inv, v("INFO", "utils.py:233", f"non-default args: {{'model_tag': '{c.model}', 'model': '{c.model}', "
                 f"'tensor_parallel_size': {c.tp}}}"))
    c.app(inv, v("INFO", "core.py:77" if c.v1 else "llm_engine.py:240",
                 f"Initializing a {'V1' if c.v1 else 'V0'} LLM engine (v{c.version}) with config: model='{c.model}', "
                 f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
                 f"revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=32768, "
                 f"tensor_parallel_size={c.tp}, pipeline_parallel_size=1"), eng, dt=3.0)
    c.app(inv, v("INFO", "gpu_model_runner.py:2602" if c.v1 else "model_runner.py:1110",
                 f"Starting to load model {c.model}..."), p, dt=2.0)
    if until == "load":
        return
    c.app(inv, "\rLoading safetensors checkpoint shards:  41% Completed | 7/17 [00:06<00:09,  1.09it/s]"
               "\rLoading safetensors checkpoint shards: 100% Completed | 17/17 [00:15<00:00,  1.12it/s]\r",
          p, dt=15.0)
    c.app(inv, v("INFO", "default_loader.py:267", "Loading weights took 15.21 seconds"), p)
    c.app(inv, v("INFO", "gpu_model_runner.py:2653" if c.v1 else "model_runner.py:1140",
                 "Model loading took 61.0323 GiB and 15.402271 seconds"), p)
    if until == "weights":
        return
    if c.v1:
        c.app(inv, v("INFO", "gpu_worker.py:298", "Available KV cache memory: 8.71 GiB"), p, dt=9.0)
        c.app(inv, v("INFO", "kv_cache_utils.py:1087", "GPU KV cache size: 35,664 tokens"), "engine")
        c.app(inv, v("INFO", "kv_cache_utils.py:1091", "Maximum concurrency for 32,768 tokens per request: 1.09x"),
              "engine")
    else:
        c.app(inv, v("INFO", "worker.py:267", "Memory profiling takes 4.26 seconds"), p, dt=9.0)
        c.app(inv, v("INFO", "executor_base.py:112", "# cuda blocks: 7299, # CPU blocks: 2048"))
        c.app(inv, v("INFO", "executor_base.py:117", "Maximum concurrency for 32768 tokens per request: 3.56x"))
    if until == "profile":
        return
    if c.v1:
        c.app(inv, "\rCapturing CUDA graph shapes:   9%|▉         | 6/67 [00:00<00:07,  7.71it/s]", p, dt=1.0)
    else:
        c.app(inv, v("INFO", "model_runner.py:1456",
                     "Capturing cudagraphs for decoding. This may lead to unexpected consequences if the model is not "
                     "static. To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in "
                     "the CLI. If out-of-memory error occurs during cudagraph capture, consider decreasing "
                     "`gpu_memory_utilization` or switching to eager mode. You can also reduce the `max_num_seqs` as "
                     "needed to decrease memory usage."), p, dt=1.0)
    if until == "capture":
        return
    c.app(inv, v("INFO", "gpu_model_runner.py:3480" if c.v1 else "model_runner.py:1598",
                 "Graph capturing finished in 9 secs, took 0.61 GiB"), p, dt=9.0)
    c.app(inv, v("INFO", "core.py:210" if c.v1 else "llm_engine.py:437",
                 "init engine (profile, create kv cache, warmup model) took 41.33 seconds"), eng)
    c.app(inv, v("INFO", "api_server.py:1912" if c.v1 else "api_server.py:1081",
                 "Starting vLLM API server 0 on http://0.0.0.0:8000"), dt=0.5)
    c.app(inv, f"INFO:     Started server process [{inv.main}]")
    c.app(inv, "INFO:     Waiting for application startup.")
    c.app(inv, "INFO:     Application startup complete.")


def vllm_serve(c: Case, inv: Inv, n: int = 4, *, gen: float = 431.9, errors: list[list[str]] | None = None) -> None:
    """Throughput lines every 10 s with access lines; `errors[i]` (client-error lines) after the i-th."""
    for i in range(n):
        for k in range(2):
            c.app(inv, f'INFO:     10.0.3.{7 + k}:5{2814 + 31 * i + k} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
                  dt=4.0)
        g = gen + 23.0 * ((i * 3) % 4) - 30.0
        if c.v1:
            msg = (f"Engine 000: Avg prompt throughput: {812.4 + i:.1f} tokens/s, Avg generation throughput: {g:.1f} "
                   f"tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 18.{i}%, Prefix cache hit "
                   f"rate: 41.0%")
            c.app(inv, c.vlog("INFO", "loggers.py:127", msg), dt=2.0)
        else:
            msg = (f"Avg prompt throughput: {812.4 + i:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, "
                   f"Running: 12 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 18.{i}%, CPU KV cache "
                   "usage: 0.0%.")
            c.app(inv, c.vlog("INFO", "metrics.py:486", msg), dt=2.0)
        if errors and i < len(errors):
            c.many(inv, errors[i], dt=0.01)


def vllm_start_fail(c: Case, inv: Inv, until: str, lines: list[str], *, where: str | None = None,
                    role: str = "engine", api_tail: list[str] | None = None) -> None:
    """A start-up failure in EngineCore (V1) or MQLLMEngine (V0) and the API server's wrapper traceback."""
    vllm_boot(c, inv, until)
    if c.v1:
        old = c.vtuple < (0, 9)
        where = where or ("core.py:387" if old else "core.py:700")
        head = "EngineCore hit an exception: Traceback (most recent call last):" if old else "EngineCore failed to start."
        c.app(inv, c.vlog("ERROR", where, head), role, dt=0.6)
        if not old:
            c.app(inv, c.vlog("ERROR", where, "Traceback (most recent call last):"), role)
        for line in lines:
            c.app(inv, c.vlog("ERROR", where, line), role, dt=0.0)
        c.app(inv, "Traceback (most recent call last):", dt=0.3)
        tail = api_tail or [
            '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/engine/utils.py", line 759, in '
            "wait_for_engine_startup",
            '    raise RuntimeError("Engine core initialization failed. "',
            "RuntimeError: Engine core initialization failed. See root cause above." +
            ("" if old else " Failed core proc(s): {'EngineCore_DP0': 1}"),
        ]
        c.many(inv, tail)
    else:
        where = where or "engine.py:448"
        for line in lines:
            c.app(inv, c.vlog("ERROR", where, line), "engine", dt=0.0)
        c.app(inv, "Traceback (most recent call last):", dt=0.4)
        c.many(inv, api_tail or [
            '  File "/opt/vllm/lib/python3.12/site-packages/vllm/entrypoints/openai/api_server.py", line 223, in '
            "build_async_engine_client_from_engine_args",
            "    raise RuntimeError(",
            "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
        ])


def vllm_engine_dead(c: Case, inv: Inv, lines: list[str], *, where: str = "core.py:720",
                     restart: bool = True, pre: list[str] | None = None) -> None:
    """V1 >= 0.10 runtime death: EngineCore fatal error, EngineDeadError, 500s, orderly uvicorn exit 0."""
    if pre:
        c.many(inv, pre, dt=0.2)
    c.app(inv, c.vlog("ERROR", where, "EngineCore encountered a fatal error."), "engine", dt=0.3)
    c.app(inv, c.vlog("ERROR", where, "Traceback (most recent call last):"), "engine")
    for line in lines:
        c.app(inv, c.vlog("ERROR", where, line), "engine", dt=0.0)
    c.app(inv, c.vlog("ERROR", "async_llm.py:485", "AsyncLLM output_handler failed."), dt=0.05)
    c.app(inv, c.vlog("ERROR", "async_llm.py:485", "Traceback (most recent call last):"))
    c.app(inv, c.vlog("ERROR", "async_llm.py:485", "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered "
                      "an issue. See stack trace (above) for the root cause."))
    c.app(inv, 'INFO:     10.0.3.7:52990 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error')
    c.app(inv, "INFO:     Shutting down", dt=4.0)
    c.app(inv, "INFO:     Waiting for application shutdown.")
    c.app(inv, "INFO:     Application shutdown complete.")
    c.app(inv, f"INFO:     Finished server process [{inv.main}]")
    c.clean_exit(inv, restart=restart)


def vllm_clean_shutdown(c: Case, inv: Inv) -> None:
    c.app(inv, "INFO:     Shutting down", dt=0.1)
    c.app(inv, "INFO:     Waiting for application shutdown.")
    c.app(inv, "INFO:     Application shutdown complete.")
    c.app(inv, f"INFO:     Finished server process [{inv.main}]")


def ownership(c: Case, inv: Inv, roles: list[tuple[str, int]], *, extra_apps: list[dict[str, Any]] | None = None,
              extra_procs: list[dict[str, Any]] | None = None) -> None:
    """Side evidence: nvidia-smi apps of the current invocation's own processes, with ppid and cgroup."""
    apps, procs = [], [{"pid": inv.main, "ppid": 1, "user": c.engine, "cgroup": f"/system.slice/{c.unit}",
                        "cmdline": c._proc(inv, "main")[2], "started": c.iso(inv.start_t)}]
    names = {"sched": "sglang::scheduler", "sched1": "sglang::scheduler_TP1", "engine": "VLLM::EngineCore",
             "worker": "VLLM::Worker_TP0", "worker1": "VLLM::Worker_TP1", "main": "python3"}
    for role, mib in roles:
        pid, _, cmd = c._proc(inv, role)
        apps.append({"pid": pid, "process_name": names[role], "used_memory": mib})
        parent = inv.main if role in ("sched", "sched1", "engine") else inv.pids.get("engine", inv.main)
        procs.append({"pid": pid, "ppid": parent, "user": c.engine, "cgroup": f"/system.slice/{c.unit}",
                      "cmdline": cmd, "started": c.iso(inv.start_t + 3)})
    c.extra["nvidia_smi_apps"] = apps + (extra_apps or [])
    c.extra["process_info"] = procs + (extra_procs or [])
    c.extra["systemctl_show"] = {"MainPID": str(inv.main), "ActiveState": "active", "SubState": "running",
                                 "NRestarts": str(c.restarts), "Result": "success"}
