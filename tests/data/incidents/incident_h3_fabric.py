"""holdout3 cases, theme `fabric` (see incident_h3_base.py): scored only, never tuned on.

GPU interconnect (NCCL), GPU hardware (kernel `NVRM: Xid` lines) and native crashes (segfaults) of SGLang and vLLM.
Each case is rebuilt from one public report; the error lines are quoted from it, the rest (systemd, journald, the
engines' start-up/serving templates) comes from incident_kit/incident_scenes (FORMATS.md). Labels follow
docs/DIAGNOSIS.md "Labels" only; this module was written without reading or running the diagnoser.
"""

from __future__ import annotations

from incident_h3_base import case3, expect3
from incident_kit import STAMP_G, STAMP_S, STAMP_V, Case, Inv
from incident_scenes import (
    sglang_boot,
    sglang_decode,
    sglang_sched_exception,
    sglang_sigquit,
    vllm_boot,
    vllm_engine_dead,
    vllm_serve,
    vllm_start_fail,
)

CUDA_ERR_TAIL = [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]


def raw(c: Case, inv: Inv, msgs: list[str], role: str = "main", *, dt: float = 0.0, first: float = 0.02) -> None:
    """Lines written exactly as given (no vLLM process tag added by the kit)."""
    for i, m in enumerate(msgs):
        c.app(inv, m, role, dt=first if i == 0 else dt, tag=False)


def sgl_health(c: Case, inv: Inv, n: int, *, every: float = 30.0, ip: str = "10.0.4.9", port: int = 51300,
               info: str = "/health") -> None:
    """Load-balancer probes the HTTP server still answers (SGLang's main-process access lines)."""
    for i in range(n):
        c.app(inv, c.slog(f'INFO:     {ip}:{port + 7 * i} - "GET {info} HTTP/1.1" 200 OK', None), dt=every)


# ============================== nccl_failure ===================================================


@case3
def nccl3_vllm_0100_init_cuda_failure_not_supported() -> Case:
    c = Case("nccl3_vllm_0100_init_cuda_failure_not_supported", "vllm", "0.10.0", day=1, hour=7, tp=2,
             model="/models/gemma-3-27b-it-FP8-Dynamic/")
    venv = "/environments/venv/lib64/python3.11/site-packages/vllm"
    inv = c.start()
    w0, w1 = c._proc(inv, "worker")[0], c._proc(inv, "worker1")[0]
    raw(c, inv, [
        f"INFO {STAMP_V} [__init__.py:235] Automatically detected platform cuda.",
    ], first=2.0)
    raw(c, inv, [
        f"INFO {STAMP_V} [api_server.py:1755] vLLM API server version 0.10.0",
        f"INFO {STAMP_V} [cli_args.py:261] non-default args: {{'model_tag': '{c.model}', 'model': '{c.model}', "
        "'max_model_len': 1024, 'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.8}",
    ], first=2.0)
    raw(c, inv, [
        f"INFO {STAMP_V} [config.py:1604] Using max model len 1024",
        f"INFO {STAMP_V} [config.py:2434] Chunked prefill is enabled with max_num_batched_tokens=2048.",
    ], first=4.0)
    raw(c, inv, [f"INFO {STAMP_V} [__init__.py:235] Automatically detected platform cuda."], "engine", first=4.0)
    raw(c, inv, [
        f"INFO {STAMP_V} [core.py:572] Waiting for init message from front-end.",
        f"INFO {STAMP_V} [core.py:71] Initializing a V1 LLM engine (v0.10.0) with config: model='{c.model}', "
        f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
        "revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=1024, tensor_parallel_size=2, "
        "pipeline_parallel_size=1, quantization=compressed-tensors, enforce_eager=False",
    ], "engine", first=2.0)
    raw(c, inv, [f"[{STAMP_S}] gpu-7:{w0}:{w0} [0] init.cc:416 NCCL WARN Cuda failure 'operation not supported'",
                 f"gpu-7:{w0}:{w0} [0] NCCL INFO init.cc:1397 -> 1",
                 f"gpu-7:{w0}:{w0} [0] NCCL INFO init.cc:1704 -> 1"], "worker", first=16.0)
    raw(c, inv, [f"gpu-7:{w1}:{w1} [1] NCCL INFO init.cc:1730 -> 1"], "worker1")
    raw(c, inv, [f"gpu-7:{w0}:{w0} [0] NCCL INFO init.cc:1730 -> 1"], "worker")
    pre = f"(VllmWorker rank=1 pid={w1}) ERROR {STAMP_V} [multiproc_executor.py:511] "
    raw(c, inv, [pre + m for m in [
        "WorkerProc failed to start.",
        "Traceback (most recent call last):",
        f'  File "{venv}/v1/executor/multiproc_executor.py", line 485, in worker_main',
        "    worker = WorkerProc(*args, **kwargs)",
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{venv}/v1/executor/multiproc_executor.py", line 381, in __init__',
        "    self.worker.init_device()",
        f'  File "{venv}/worker/worker_base.py", line 603, in init_device',
        "    self.worker.init_device()  # type: ignore",
        f'  File "{venv}/v1/worker/gpu_worker.py", line 164, in init_device',
        "    init_worker_distributed_environment(self.vllm_config, self.rank,",
        f'  File "{venv}/v1/worker/gpu_worker.py", line 370, in init_worker_distributed_environment',
        "    ensure_model_parallel_initialized(parallel_config.tensor_parallel_size,",
        f'  File "{venv}/distributed/parallel_state.py", line 1084, in ensure_model_parallel_initialized',
        "    initialize_model_parallel(tensor_model_parallel_size,",
        f'  File "{venv}/distributed/parallel_state.py", line 1026, in initialize_model_parallel',
        "    _TP = init_model_parallel_group(group_ranks,",
        "          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{venv}/distributed/parallel_state.py", line 849, in init_model_parallel_group',
        "    return GroupCoordinator(",
        f'  File "{venv}/distributed/device_communicators/pynccl.py", line 99, in __init__',
        "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(",
        f'  File "{venv}/distributed/device_communicators/pynccl_wrapper.py", line 277, in ncclCommInitRank',
        '    self.NCCL_CHECK(self._funcs["ncclCommInitRank"](ctypes.byref(comm),',
        f'  File "{venv}/distributed/device_communicators/pynccl_wrapper.py", line 256, in NCCL_CHECK',
        '    raise RuntimeError(f"NCCL error: {error_str}")',
        "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
    ]], "worker1")
    core = f"ERROR {STAMP_V} [core.py:632] "
    raw(c, inv, [core + m for m in [
        "EngineCore failed to start.",
        "Traceback (most recent call last):",
        f'  File "{venv}/v1/executor/multiproc_executor.py", line 427, in wait_for_ready',
        "    raise e from None",
        "Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace "
        "for root cause.",
    ]], "engine", first=0.4)
    raw(c, inv, [
        "Traceback (most recent call last):",
        f'  File "{venv}/v1/engine/utils.py", line 710, in wait_for_engine_startup',
        '    raise RuntimeError("Engine core initialization failed. "',
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ], first=0.5)
    c.exit(inv, "exited", "1", cpu="38.912s")
    return expect3(c, "nccl_failure", False,
                   ["RuntimeError: NCCL error: unhandled cuda error", "NCCL WARN Cuda failure 'operation not supported'"],
                   ["healthy", "engine_exception", "kv_cache_oom", "unknown"],
                   "https://github.com/vllm-project/vllm/issues/20226",
                   "gemma-3-27b-it-FP8-Dynamic with --tensor-parallel-size 2 on vLLM 0.10.0 (V1, plain log lines: 0.10.0 "
                   "has no process tags yet). The start-up lines, the NCCL WARN `Cuda failure 'operation not "
                   "supported'` with its `-> 1` chain, `WorkerProc failed to start.` (multiproc_executor.py:511), the "
                   "frames down to `_TP = init_model_parallel_group` and the EngineCore `WorkerProc initialization "
                   "failed` text are the report's (the frames from its first post on 0.9.x, the NCCL output from the "
                   "0.10.0 comment); host name, pids, the frames below init_model_parallel_group and the API server's "
                   "wrapper are ours. Restart=no: one failed start.")


@case3
def nccl3_sgl_042_watchdog_allgather_http_up() -> Case:
    c = Case("nccl3_sgl_042_watchdog_allgather_http_up", "sglang", "0.4.2.post2", day=2, hour=7, tp=16,
             model="/models/DeepSeek-R1")
    lib = "/home/miniconda3/envs/sglang/lib/python3.10/site-packages/torch/lib"
    inv = c.start()
    sglang_boot(c, inv, avail=78.38)
    tok = 3698
    for i in range(6):
        g = 50.46 - 0.04 * i
        c.app(inv, c.slog(f"Decode batch. #running-req: 2, #token: {tok + 80 * i}, token usage: 0.01, gen throughput "
                          f"(token/s): {g:.2f}, #queue-req: 0"), "sched", dt=1.5)
    c.app(inv, c.slog('INFO:     10.39.13.144:48590 - "POST /v1/chat/completions HTTP/1.1" 200 OK', None), dt=1.2)
    c.app(inv, c.slog("Prefill batch. #new-seq: 2, #new-token: 632, #cached-token: 126, cache hit rate: 80.75%, token "
                      "usage: 0.00, #running-req: 0, #queue-req: 0"), "sched", dt=40.0)
    timeout = ("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1522789, OpType=_ALLGATHER_BASE, "
               "NumelIn=298960, NumelOut=4783360, Timeout(ms)=600000) ran for 600003 milliseconds before timing out.")
    frames = [
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent "
        "call first):",
        f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f55772b9446 in {lib}/libc10.so)",
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        f"std::ratio<1l, 1000l> > >) + 0x1d2 (0x7effaa1cc8d2 in {lib}/libtorch_cuda.so)",
        f"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7effaa1d3bb3 in {lib}/libtorch_cuda.so)",
        f"frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7effaa1d561d in {lib}/libtorch_cuda.so)",
        f"frame #4: <unknown function> + 0x145c0 (0x7efff6e015c0 in {lib}/libtorch.so)",
        "frame #5: <unknown function> + 0x94ac3 (0x7f0099294ac3 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
        "frame #6: <unknown function> + 0x126850 (0x7f0099326850 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
        "",
    ]
    raw(c, inv, [
        f"[rank1]:[E{STAMP_G}.346961842 ProcessGroupNCCL.cpp:616] {timeout}",
        f"[rank1]:[E{STAMP_G}.347781210 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 1] Exception (either an "
        "error or timeout) detected by watchdog at work: 1522789, last enqueued NCCL work: 1522789, last completed "
        "NCCL work: 1522788.",
        f"[rank1]:[E{STAMP_G}.347835395 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 1] Process group watchdog "
        f"thread terminated with exception: {timeout}",
    ] + frames + [
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  [PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread terminated with exception: {timeout}",
    ] + frames, "sched1", first=600.0)
    # the TP1 scheduler aborted (no Python exception, no SIGQUIT): the HTTP server keeps answering its probes
    sgl_health(c, inv, 5, every=20.0)
    c.extra["systemctl_show"] = {"MainPID": str(inv.main), "ActiveState": "active", "SubState": "running",
                                 "NRestarts": "0", "Result": "success"}
    return expect3(c, "nccl_failure", False,
                   ["Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1522789, OpType=_ALLGATHER_BASE"],
                   ["healthy", "segfault", "unknown"],
                   "https://github.com/sgl-project/sglang/issues/3424",
                   "DeepSeek-R1 over two H100 nodes with IB (sglang>=0.4.2.post2) crashes occasionally under load: the "
                   "Decode line template, the client address and the rank-1 `Process group watchdog thread terminated "
                   "with exception` line with WorkNCCL(SeqNum=1522789, _ALLGATHER_BASE), `checkTimeout at "
                   "ProcessGroupNCCL.cpp:618` and frames #0/#2-#6 are the report's; the 616/1785 lines, frame #1 and "
                   "`terminate called after throwing an instance of 'c10::DistBackendError'` follow torch's template. "
                   "The aborted TP1 scheduler sends no SIGQUIT, so the main process keeps answering /health (ours); "
                   "the unit is still active at the end.")


@case3
def nccl3_vllm_v0_082_ray_init_internal_error() -> Case:
    c = Case("nccl3_vllm_v0_082_ray_init_internal_error", "vllm", "0.8.2", v1=False, day=3, hour=7, tp=8,
             model="/models/DeepSeek-R1")
    sp = "/root/miniconda3/envs/ray/lib/python3.12/site-packages"
    inv = c.start()
    raw(c, inv, [f"INFO {STAMP_V} [__init__.py:239] Automatically detected platform cuda."], first=3.0)
    raw(c, inv, [
        f"INFO {STAMP_V} [api_server.py:981] vLLM API server version 0.8.2",
        f"INFO {STAMP_V} [api_server.py:982] args: Namespace(model='{c.model}', tensor_parallel_size=8, "
        "pipeline_parallel_size=2, distributed_executor_backend='ray', disable_frontend_multiprocessing=True, "
        "trust_remote_code=True, max_model_len=32768)",
    ], first=1.5)
    raw(c, inv, [
        f"INFO {STAMP_V} [config.py:585] This model supports multiple tasks: {{'generate', 'reward', 'classify', "
        "'embed', 'score'}. Defaulting to 'generate'.",
        f"INFO {STAMP_V} [config.py:1519] Defaulting to use ray for distributed inference",
        f"INFO {STAMP_V} [llm_engine.py:241] Initializing a V0 LLM engine (v0.8.2) with config: model='{c.model}', "
        f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
        "revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=8, "
        "pipeline_parallel_size=2, quantization=fp8",
        f"INFO {STAMP_V} [ray_utils.py:335] No current placement group found. Creating a new placement group.",
        f"INFO {STAMP_V} [ray_distributed_executor.py:176] use_ray_spmd_worker: False",
    ], first=4.0)
    raw(c, inv, [
        f"INFO {STAMP_V} [utils.py:990] Found nccl from library libnccl.so.2",
        f"INFO {STAMP_V} [pynccl.py:69] vLLM is using nccl==2.21.5",
        f"(RayWorkerWrapper pid=3614806) ERROR {STAMP_V} [worker_base.py:620] Error executing method "
        "'init_device'. This might cause deadlock in distributed execution.",
    ], first=9.0, dt=0.3)
    r = "[rank0]: "
    raw(c, inv, [r + m for m in [
        "Traceback (most recent call last):",
        f'  File "{sp}/vllm/entrypoints/openai/api_server.py", line 1016, in run_server',
        "    async with build_async_engine_client(args) as engine_client:",
        "               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/vllm/entrypoints/openai/api_server.py", line 141, in build_async_engine_client',
        "    async with build_async_engine_client_from_engine_args(",
        "               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/vllm/entrypoints/openai/api_server.py", line 178, in build_async_engine_client_from_engine_args',
        "    engine_client = AsyncLLMEngine.from_vllm_config(",
        f'  File "{sp}/vllm/executor/ray_distributed_executor.py", line 373, in _init_workers_ray',
        '    self._run_workers("init_device")',
        f'  File "{sp}/vllm/worker/worker.py", line 166, in init_device',
        "    init_worker_distributed_environment(self.vllm_config, self.rank,",
        f'  File "{sp}/vllm/distributed/device_communicators/cuda_communicator.py", line 39, in __init__',
        "    self.pynccl_comm = PyNcclCommunicator(",
        "                       ^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/vllm/distributed/device_communicators/pynccl.py", line 99, in __init__',
        "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(",
        "                            ^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/vllm/distributed/device_communicators/pynccl_wrapper.py", line 277, in ncclCommInitRank',
        '    self.NCCL_CHECK(self._funcs["ncclCommInitRank"](ctypes.byref(comm),',
        f'  File "{sp}/vllm/distributed/device_communicators/pynccl_wrapper.py", line 256, in NCCL_CHECK',
        '    raise RuntimeError(f"NCCL error: {error_str}")',
        "RuntimeError: NCCL error: internal error - please report this issue to the NCCL developers",
    ]], first=0.4)
    raw(c, inv, [f"[rank0]:[W{STAMP_G}.118806213 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() "
                 "was not called before program exit, which can leak resources. For more info, please see "
                 "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())"], first=1.0)
    c.exit(inv, "exited", "1", cpu="1min 2.334s")
    return expect3(c, "nccl_failure", False,
                   ["RuntimeError: NCCL error: internal error - please report this issue to the NCCL developers"],
                   ["healthy", "engine_exception", "unknown"],
                   "https://github.com/vllm-project/vllm/issues/17160",
                   "Distributed inference with Ray on vLLM 0.8.2: the driver's `[rank0]:` traceback (api_server run_server/"
                   "build_async_engine_client frames, cuda_communicator.py:39 -> pynccl.py:99 -> pynccl_wrapper.py "
                   "277/256) ending in `NCCL error: internal error` (ncclInternalError) and the Ray worker's `Error "
                   "executing method 'init_device'` line are the report's; the engine is V0 in the API server process "
                   "(the traceback runs through api_server), the start-up lines, the middle frames and the "
                   "destroy_process_group warning are ours. Restart=no.")


@case3
def nccl3_sgl_043_multinode_no_route_start_limit() -> Case:
    c = Case("nccl3_sgl_043_multinode_no_route_start_limit", "sglang", "0.4.3", day=4, hour=7, tp=16,
             model="/models/DeepSeek-R1")
    s = "/sgl-workspace/sglang/python/sglang/srt"
    for k in range(5):
        inv = c.start(dt=0.2 if k == 0 else 0.1)
        c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...) is ~10 KB: null in journalctl -o json
        c.app(inv, c.slog("Init torch distributed begin.", "TP14"), "sched", dt=6.0)
        p = c._proc(inv, "sched")[0]
        raw(c, inv, [f"gpu-7:{p}:{p} [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> "
                     "returned 113(No route to host) errno 115(Operation now in progress)"] +
            [f"gpu-7:{p}:{p} [6] NCCL INFO {w} -> 2" for w in ("misc/socket.cc:570", "misc/socket.cc:621",
                                                              "bootstrap.cc:285", "init.cc:1534", "init.cc:1799",
                                                              "init.cc:1837")], "sched", first=3.1)
        c.app(inv, c.slog("Scheduler hit an exception: Traceback (most recent call last):", "TP14"), "sched", dt=0.2)
        c.many(inv, [
            f'  File "{s}/managers/scheduler.py", line 1816, in run_scheduler_process',
            "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
            f'  File "{s}/managers/scheduler.py", line 240, in __init__',
            "    self.tp_worker = TpWorkerClass(",
            f'  File "{s}/managers/tp_worker_overlap_thread.py", line 63, in __init__',
            "    self.worker = TpModelWorker(server_args, gpu_id, tp_rank, dp_rank, nccl_port)",
            f'  File "{s}/managers/tp_worker.py", line 68, in __init__',
            "    self.model_runner = ModelRunner(",
            f'  File "{s}/model_executor/model_runner.py", line 187, in __init__',
            "    min_per_gpu_memory = self.init_torch_distributed()",
            f'  File "{s}/model_executor/model_runner.py", line 265, in init_torch_distributed',
            "    initialize_model_parallel(tensor_model_parallel_size=self.tp_size)",
            f'  File "{s}/distributed/parallel_state.py", line 1100, in initialize_model_parallel',
            "    _TP = init_model_parallel_group(",
            f'  File "{s}/distributed/parallel_state.py", line 927, in init_model_parallel_group',
            "    return GroupCoordinator(",
            f'  File "{s}/distributed/parallel_state.py", line 255, in __init__',
            "    self.pynccl_comm = PyNcclCommunicator(",
            f'  File "{s}/distributed/device_communicators/pynccl.py", line 108, in __init__',
            "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(",
            f'  File "{s}/distributed/device_communicators/pynccl_wrapper.py", line 350, in ncclCommInitRank',
            "    self.NCCL_CHECK(",
            f'  File "{s}/distributed/device_communicators/pynccl_wrapper.py", line 329, in NCCL_CHECK',
            '    raise RuntimeError(f"NCCL error: {error_str}")',
            "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
        ], "sched")
        sglang_sigquit(c, inv, serving=False)
        c.exit(inv, "killed", "9", restart=k < 4, cpu="19.406s")
    c.start_limit(inv, "signal")
    return expect3(c, "nccl_failure", True,
                   ["socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No route to host)",
                    "RuntimeError: NCCL error: unhandled system error"],
                   ["healthy", "port_in_use", "engine_exception"],
                   "https://github.com/sgl-project/sglang/issues/3820",
                   "Second node (node-rank 1) of a 2-node DeepSeek-R1 deployment (February 2025, 0.4.3): the NCCL WARN "
                   "`socketPollConnect ... 113(No route to host)` with its `-> 2` chain and the TP14 scheduler's "
                   "traceback down to model_runner.py:187 are the report's (host name and pids ours); the frames "
                   "below it and the final `NCCL error: unhandled system error` (result 2 = ncclSystemError) follow "
                   "SGLang 0.4.3's pynccl template. Restart=always until the start limit: a loop.")


# ============================== gpu_hardware_xid ===============================================


@case3
def xid3_sgl_052_xid79_fallen_off_bus_loop() -> Case:
    c = Case("xid3_sgl_052_xid79_fallen_off_bus_loop", "sglang", "0.5.2", day=5, hour=7,
             model="/models/Qwen2.5-32B-Instruct")
    sp = "/opt/sglang/lib/python3.12/site-packages/sglang"
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 5, tput=1302.0, running=18)
    c.kernel_line("NVRM: GPU at PCI:0000:a1:00: GPU-979426f2-893a-7cbb-c4cf-81472f89a462", dt=2.0)
    c.kernel_line("NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
    c.kernel_line("NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus.")
    c.kernel_line("NVRM: A GPU crash dump has been created. If possible, please run")
    c.kernel_line("NVRM: nvidia-bug-report.sh as root to collect this data before")
    c.kernel_line("NVRM: the NVIDIA kernel module is unloaded.")
    sglang_sched_exception(c, inv, [
        f'  File "{sp}/srt/managers/scheduler.py", line 2552, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        f'  File "{sp}/srt/managers/scheduler.py", line 824, in event_loop_overlap',
        "    self.process_batch_result(tmp_batch, tmp_result)",
        "RuntimeError: CUDA error: unspecified launch failure",
    ] + CUDA_ERR_TAIL)
    sglang_sigquit(c, inv, serving=True)
    c.exit(inv, "killed", "9", restart=True)
    for k in range(3):
        inv = c.start(dt=0.1)
        c.many(inv, [
            "Traceback (most recent call last):",
            '  File "<frozen runpy>", line 198, in _run_module_as_main',
            '  File "<frozen runpy>", line 88, in _run_code',
            f'  File "{sp}/launch_server.py", line 11, in <module>',
            "    server_args = prepare_server_args(sys.argv[1:])",
            f'  File "{sp}/srt/server_args.py", line 2113, in prepare_server_args',
            "    server_args = ServerArgs.from_cli_args(raw_args)",
            f'  File "{sp}/srt/server_args.py", line 288, in __post_init__',
            "    gpu_mem = get_device_memory_capacity(self.device)",
            f'  File "{sp}/srt/utils.py", line 1354, in get_nvgpu_memory_capacity',
            '    raise RuntimeError(f"nvidia-smi error: {result.stderr.strip()}")',
            "RuntimeError: nvidia-smi error: Unable to determine the device handle for GPU0000:A1:00.0: Unknown Error",
        ], dt=0.0)
        c.exit(inv, "exited", "1", restart=k < 2, cpu="4.117s", dt=0.3)
    c.start_limit(inv)
    return expect3(c, "gpu_hardware_xid", True,
                   ["79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
                    "Unable to determine the device handle for GPU0000:A1:00.0: Unknown Error"],
                   ["healthy", "engine_exception", "bad_argument", "unknown"],
                   "https://github.com/akash-network/support/issues/209",
                   "A provider node's GPU falls off the bus (driver 535.161.07): the kernel lines (Xid 79 on "
                   "PCI:0000:a1:00 with the crash-dump notice) and nvidia-smi's `Unable to determine the device handle "
                   "for GPU0000:A1:00.0: Unknown Error` are the report's. The SGLang side is ours: the scheduler dies "
                   "with a CUDA error while serving, and every restart fails in ServerArgs, which runs nvidia-smi "
                   "(FORMATS a.6), until the start limit. The Xid decides, not the argument-parsing stage.")


@case3
def xid3_vllm_v0_085_xid94_contained_ecc_loop() -> Case:
    c = Case("xid3_vllm_v0_085_xid94_contained_ecc_loop", "vllm", "0.8.5", v1=False, day=6, hour=7,
             model="/models/Meta-Llama-3.1-8B-Instruct")
    sp = "/usr/local/lib/python3.12/dist-packages/vllm"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 4)
    c.kernel_line("NVRM: GPU at PCI:0000:00:08: GPU-c24840ec-8de1-83d5-b126-08000173ae32", dt=1.5)
    c.kernel_line("NVRM: GPU Board Serial Number: 1652923018111")
    c.kernel_line("NVRM: Xid (PCI:0000:00:08): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, "
                  "D-RST: No")
    c.many(inv, [c.vlog("ERROR", "engine.py:160", m) for m in [
        "CUDA error: uncorrectable ECC error encountered",
    ] + CUDA_ERR_TAIL + [
        "Traceback (most recent call last):",
        f'  File "{sp}/engine/multiprocessing/engine.py", line 158, in start',
        "    self.run_engine_loop()",
        f'  File "{sp}/worker/model_runner.py", line 1844, in execute_model',
        "    output: SamplerOutput = self.sampler(",
        "RuntimeError: CUDA error: uncorrectable ECC error encountered",
    ]], "engine", dt=0.0)
    c.many(inv, [
        c.vlog("CRITICAL", "launcher.py:116", "MQLLMEngine is already dead, terminating server process"),
        'INFO:     10.0.3.7:52990 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        "INFO:     Shutting down",
        "INFO:     Waiting for application shutdown.",
        "INFO:     Application shutdown complete.",
        f"INFO:     Finished server process [{inv.main}]",
    ], dt=0.5)
    c.clean_exit(inv, restart=True)
    for k in range(2):
        inv = c.start(dt=0.1)
        vllm_start_fail(c, inv, "load", [
            "CUDA error: uncorrectable ECC error encountered",
            "Traceback (most recent call last):",
            f'  File "{sp}/engine/multiprocessing/engine.py", line 434, in run_mp_engine',
            "    engine = MQLLMEngine.from_vllm_config(",
            f'  File "{sp}/model_executor/model_loader/loader.py", line 441, in load_model',
            "    model = _initialize_model(vllm_config=vllm_config)",
            "RuntimeError: CUDA error: uncorrectable ECC error encountered",
        ], where="engine.py:448")
        c.exit(inv, "exited", "1", restart=k == 0, cpu="21.880s")
    c.start_limit(inv)
    return expect3(c, "gpu_hardware_xid", True,
                   ["Contained: SM (0x1). RST: No, D-RST: No", "uncorrectable ECC error encountered"],
                   ["healthy", "engine_exception", "cuda_oom_runtime", "kv_cache_oom"],
                   "https://github.com/akash-network/support/issues/244",
                   "The report's dmesg shows a contained ECC error, Xid 94 `Contained: SM (0x1). RST: No, D-RST: No` "
                   "on PCI:0000:00:08 (lines verbatim), after which the vllm app would not work again until the node "
                   "was rebooted. The vLLM side is ours (V0 MQLLMEngine, VLLM_USE_V1=0): `CUDA error: uncorrectable ECC "
                   "error encountered` while serving, an orderly exit 0, then Restart=always starts that fail the same "
                   "way until the start limit.")


@case3
def xid3_vllm_019_xid62_gsp_timeout_exit0() -> Case:
    c = Case("xid3_vllm_019_xid62_gsp_timeout_exit0", "vllm", "0.19.0", day=7, hour=7, tp=8,
             model="/models/Kimi-K2.6")
    c.pid_base = 22884 - 140 - 1117  # the first worker is pid 22884, the VLLM::Worker the Xid 45 lines name
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3, gen=118.0)
    for line in [
        "NVRM: GPU at PCI:0000:48:00: GPU-5fc0bcec-c2e1-38dc-8994-2a9f9f3b709e",
        "nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Severity 1 Engine instance 12 Sub-engine instance 00",
        "NVRM: GPU Board Serial Number: 1563521020414",
        "nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Data {0x10000000, 0x10008100, 0x10000000, 0x10008100, "
        "0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}",
        "NVRM: Xid (PCI:0000:48:00): 62, 00002740 00002b08 00001126 0000117a 0000279f 0002a91a 00000011 00000000",
        "NVRM: Xid (PCI:0000:48:00): 45, pid=22884, name=VLLM::Worker, channel 0x0000000a",
        "NVRM: Xid (PCI:0000:48:00): 45, pid=22884, name=VLLM::Worker, channel 0x0000000b",
    ]:
        c.kernel_line(line, dt=0.01)
    c.kernel_line("NVRM: Xid (PCI:0000:0b:00): 119, pid=11431, name=gpu-feature-dis, Timeout after 45s of waiting for "
                  "RPC response from GPU3 GSP! Expected function 76 (GSP_RM_CONTROL) sequence 4128 (0x20803039 0xb0).",
                  dt=90.0)
    c.kernel_line("NVRM: nvAssertFailedNoLog: Assertion failed: Back to back GSP RPC timeout detected! GPU marked for "
                  "reset @ kernel_gsp.c:2387", dt=0.02)
    vllm_engine_dead(c, inv, [
        "torch.AcceleratorError: CUDA error: unspecified launch failure",
        "Search for `cudaErrorLaunchFailure' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
        "for more information.",
    ] + CUDA_ERR_TAIL, restart=False)
    c.extra["systemctl_show"] = {"ActiveState": "inactive", "SubState": "dead", "MainPID": "0", "NRestarts": "0",
                                 "Result": "success"}
    return expect3(c, "gpu_hardware_xid", False,
                   ["Xid (PCI:0000:48:00): 62", "Xid (PCI:0000:48:00): 45, pid=22884, name=VLLM::Worker"],
                   ["healthy", "engine_exception", "unknown", "nccl_failure"],
                   "https://github.com/vllm-project/vllm/issues/40652",
                   "Kimi 2.6 on 8x A100 SXM4 (April 2026): the kernel lines (NVSwitch SXid 24007, Xid 62 on "
                   "PCI:0000:48:00, Xid 45 for pid=22884 name=VLLM::Worker, then Xid 119 GSP RPC timeouts and `GPU "
                   "marked for reset`) are the report's (version estimated as 0.19.0). The vLLM side is ours: after the "
                   "GSP timeouts the EngineCore dies with a CUDA launch failure, the API server exits 0 and "
                   "Restart=on-failure does not restart it. A newer Xid (62/119) still decides.")


@case3
def xid3_sgl_046_xid31_mmu_fault_recovers() -> Case:
    c = Case("xid3_sgl_046_xid31_mmu_fault_recovers", "sglang", "0.4.6", day=8, hour=7,
             model="/models/Qwen2.5-14B-Instruct")
    c.pid_base = 13641 - 212 - 1117  # the scheduler is pid 13641, the pid of the Xid 31 line
    sp = "/usr/local/lib/python3.10/dist-packages/sglang"
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 4, tput=2210.0, running=31)
    c.kernel_line("NVRM: GPU at PCI:0000:db:00: GPU-4a28de72-2645-de9a-eb35-a394cef3f4da", dt=2.0)
    c.kernel_line("NVRM: GPU Board Serial Number:")
    c.kernel_line("NVRM: Xid (PCI:0000:db:00): 31, pid=13641, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS "
                  "GPCCLIENT_T1_10 faulted @ 0x7fd7_90743000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ")
    sglang_sched_exception(c, inv, [
        f'  File "{sp}/srt/managers/scheduler.py", line 2043, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        f'  File "{sp}/srt/managers/scheduler.py", line 658, in event_loop_overlap',
        "    self.process_batch_result(tmp_batch, tmp_result)",
        f'  File "{sp}/srt/managers/tp_worker_overlap_thread.py", line 210, in resolve_last_batch_result',
        "    copy_done.synchronize()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ] + CUDA_ERR_TAIL)
    sglang_sigquit(c, inv, serving=True)
    c.exit(inv, "killed", "9", restart=True)
    inv2 = c.start(dt=0.1)
    sglang_boot(c, inv2)
    sglang_decode(c, inv2, 5, tput=2180.0, running=28)
    return expect3(c, "gpu_hardware_xid", False, ["Xid (PCI:0000:db:00): 31, pid=13641"],
                   ["healthy", "engine_exception"],
                   "https://github.com/pytorch/pytorch/issues/51382",
                   "Kernel lines verbatim from the report (`likely a faulty device`: repeated Xid 31 MMU faults on "
                   "PCI:0000:db:00, the process pid 13641 is our scheduler's). The SGLang side is ours: the scheduler "
                   "dies with an illegal memory access, Restart=always brings it back and it serves again. Recovered, "
                   "but the Xid in the window still decides (the GPU needs checking).")


# ============================== segfault =======================================================


@case3
def seg3_sgl_043_allreduce_segfault_http_up() -> Case:
    c = Case("seg3_sgl_043_allreduce_segfault_http_up", "sglang", "0.4.3", day=9, hour=7, tp=8,
             model="/models/DeepSeek-V2-Chat")
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 5, tput=640.0, running=22)
    raw(c, inv, [
        "Fatal Python error: Segmentation fault",
        "",
        "Thread 0x00007f2e93fff640 (most recent call first):",
        '  File "/XXXX/sglang/python/sglang/srt/managers/scheduler.py", line 462 in watchdog_thread',
        '  File "/usr/lib/python3.10/threading.py", line 953 in run',
        '  File "/usr/lib/python3.10/threading.py", line 1016 in _bootstrap_inner',
        '  File "/usr/lib/python3.10/threading.py", line 973 in _bootstrap',
        "",
        "Current thread 0x00007f2ea0870640 (most recent call first):",
        '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 2501 in all_reduce',
        '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/c10d_logger.py", line 83 in wrapper',
        '  File "/XXXX/sglang/python/sglang/srt/distributed/parallel_state.py", line 415 in all_reduce',
        '  File "/XXXX/sglang/python/sglang/srt/distributed/communication_op.py", line 13 in '
        "tensor_model_parallel_all_reduce",
    ], "sched1", first=3.0)
    # no Python exception, so no SIGQUIT: the main process and its HTTP server stay up, generation stops
    c.app(inv, c.slog('INFO:     10.0.4.21:51344 - "POST /v1/chat/completions HTTP/1.1" 200 OK', None), dt=4.0)
    sgl_health(c, inv, 6, every=20.0, info="/health")
    c.extra["systemctl_show"] = {"MainPID": str(inv.main), "ActiveState": "active", "SubState": "running",
                                 "NRestarts": "0", "Result": "success"}
    return expect3(c, "segfault", False, ["Fatal Python error: Segmentation fault"],
                   ["healthy", "nccl_failure", "engine_exception", "unknown"],
                   "https://github.com/sgl-project/sglang/issues/3745",
                   "`torch.distributed.all_reduce raised Segmentation fault` (February 2025, 0.4.3): the faulthandler "
                   "dump (watchdog_thread at scheduler.py:462, all_reduce at distributed_c10d.py:2501, c10d_logger.py:83, "
                   "`/XXXX/` paths) is the report's; the report's line is cut at parallel_state.py and the two frames "
                   "from there are ours. The report ran 2x8 H800 and the crash hit the second node; ours puts it in "
                   "the TP1 scheduler of a single-node TP=8 unit, where the main process gets no SIGQUIT and keeps "
                   "answering /health (FORMATS a.6) while nothing is generated. The journal ends before SGLang's "
                   "300 s watchdog or torch's NCCL watchdog would fire.")


@case3
def seg3_sgl_042_ncclcomminit_segfault_loop() -> Case:
    c = Case("seg3_sgl_042_ncclcomminit_segfault_loop", "sglang", "0.4.2.post4", day=10, hour=7, tp=2,
             model="/models/DeepSeek-V2-Lite")
    py = "/home/tiger/.pyenv/versions/3.11.2/lib/python3.11"
    sp = f"{py}/site-packages/sglang/srt"
    tail = [
        f'  File "{sp}/managers/tp_worker.py", line 68 in __init__',
        f'  File "{sp}/managers/tp_worker_overlap_thread.py", line 63 in __init__',
        f'  File "{sp}/managers/scheduler.py", line 240 in __init__',
        f'  File "{sp}/managers/scheduler.py", line 1787 in run_scheduler_process',
        f'  File "{py}/multiprocessing/process.py", line 108 in run',
        f'  File "{py}/multiprocessing/process.py", line 314 in _bootstrap',
        f'  File "{py}/multiprocessing/spawn.py", line 133 in _main',
        f'  File "{py}/multiprocessing/spawn.py", line 120 in spawn_main',
        '  File "<string>", line 1 in <module>',
    ]

    def dump(thread: str) -> list[str]:
        return [
            "Fatal Python error: Segmentation fault",
            "",
            f"Current thread {thread} (most recent call first):",
            f'  File "{sp}/distributed/device_communicators/pynccl_wrapper.py", line 351 in ncclCommInitRank',
            f'  File "{sp}/distributed/device_communicators/pynccl.py", line 108 in __init__',
            f'  File "{sp}/distributed/parallel_state.py", line 233 in __init__',
            f'  File "{sp}/distributed/parallel_state.py", line 890 in init_model_parallel_group',
            f'  File "{sp}/distributed/parallel_state.py", line 1055 in initialize_model_parallel',
            f'  File "{sp}/model_executor/model_runner.py", line 253 in init_torch_distributed',
            f'  File "{sp}/model_executor/model_runner.py", line 178 in __init__',
        ] + tail

    for k in range(3):
        inv = c.start(dt=0.2 if k == 0 else 0.1)
        c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...)
        c.app(inv, c.slog("Init torch distributed begin."), "sched", dt=3.0)
        c.app(inv, c.slog("Init torch distributed begin.", "TP1"), "sched1")
        raw(c, inv, dump("0x00007f2d1a3c7740"), "sched1", first=2.5)
        raw(c, inv, dump("0x00007f4858f86740"), "sched", first=0.01)
        c.many(inv, [
            "Traceback (most recent call last):",
            '  File "<frozen runpy>", line 198, in _run_module_as_main',
            '  File "<frozen runpy>", line 88, in _run_code',
            f'  File "{py}/site-packages/sglang/launch_server.py", line 14, in <module>',
            "    launch_server(server_args)",
            f'  File "{sp}/server.py", line 485, in launch_server',
            "    launch_engine(server_args=server_args)",
            f'  File "{sp}/server.py", line 451, in launch_engine',
            "    data = scheduler_pipe_readers[i].recv()",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            f'  File "{py}/multiprocessing/connection.py", line 250, in recv',
            "    buf = self._recv_bytes()",
            "          ^^^^^^^^^^^^^^^^^^",
            f'  File "{py}/multiprocessing/connection.py", line 430, in _recv_bytes',
            "    buf = self._recv(4)",
            "          ^^^^^^^^^^^^^",
            f'  File "{py}/multiprocessing/connection.py", line 382, in _recv',
            "    raise EOFError",
            "EOFError",
        ], dt=0.0)
        c.exit(inv, "exited", "1", restart=True, cpu="16.204s")
    return expect3(c, "segfault", True, ["Fatal Python error: Segmentation fault"],
                   ["healthy", "nccl_failure", "engine_exception", "unknown"],
                   "https://github.com/sgl-project/sglang/issues/3451",
                   "DeepSeek-V2-Lite on NVIDIA A40-48Q (February 2025, 0.4.2.postN): the scheduler segfaults inside "
                   "pynccl's ncclCommInitRank. The faulthandler text, the frames from pynccl_wrapper.py:351 to "
                   "model_runner.py:178, the tail `spawn.py, line 120 in spawn_main` / `<string>, line 1`, and the main "
                   "process's EOFError ending (`buf = self._recv(4)` ... connection.py:382) are the report's; the "
                   "frames between and the launch frames are ours. No NCCL error text: the crash is native. "
                   "Restart=on-failure, three failing starts.")


@case3
def seg3_vllm_084_v1_ray_proxy_sigsegv_load() -> Case:
    c = Case("seg3_vllm_084_v1_ray_proxy_sigsegv_load", "vllm", "0.8.4", day=11, hour=7, tp=16,
             model="deepseek-ai/DeepSeek-R1")
    sp = "/usr/local/lib/python3.12/dist-packages/vllm"
    inv = c.start()
    raw(c, inv, [f"INFO {STAMP_V} [__init__.py:239] Automatically detected platform cuda."], first=3.0)
    raw(c, inv, [
        f"INFO {STAMP_V} [api_server.py:1034] vLLM API server version 0.8.4",
        f"INFO {STAMP_V} [api_server.py:1035] args: Namespace(model_tag='{c.model}', model='{c.model}', "
        "block_size=128, max_model_len=3500, max_num_batched_tokens=3500, tensor_parallel_size=16, "
        "disable_log_requests=True)",
    ], first=1.5)
    raw(c, inv, [
        f"INFO {STAMP_V} [core.py:61] Initializing a V1 LLM engine (v0.8.4) with config: model='{c.model}', "
        f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
        "revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=3500, tensor_parallel_size=16, "
        "pipeline_parallel_size=1, quantization=fp8",
        f"INFO {STAMP_V} [ray_utils.py:335] No current placement group found. Creating a new placement group.",
    ], "engine", first=6.0)
    w = "(RayWorkerWrapper pid=2191173, ip=10.52.51.232) "
    raw(c, inv, [
        f"{w}INFO {STAMP_V} [pynccl.py:69] vLLM is using nccl==2.21.5",
        w + "*** SIGSEGV received at time=1746566409 on cpu 131 ***",
        w + "PC: @     0x7fcfcd849b8a  (unknown)  addProxyOpIfNeeded()",
        w + "    @     0x7ffff7c9e520  267994832  (unknown)",
        w + "    @            0x80000  (unknown)  (unknown)",
        w + "[2025-05-06 14:20:09,187 E 2191173 2191173] logging.cc:484: *** SIGSEGV received at time=1746566409 on "
            "cpu 131 ***",
        w + "[2025-05-06 14:20:09,187 E 2191173 2191173] logging.cc:484: PC: @     0x7fcfcd849b8a  (unknown)  "
            "addProxyOpIfNeeded()",
        w + "Fatal Python error: Segmentation fault",
    ], "engine", first=21.0)
    raw(c, inv, [c.vlog("ERROR", "core.py:387", m) for m in [
        "EngineCore hit an exception: Traceback (most recent call last):",
        f'  File "{sp}/v1/engine/core.py", line 378, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
        f'  File "{sp}/executor/ray_distributed_executor.py", line 531, in _run_workers',
        "    ray_worker_outputs = ray.get(ray_worker_outputs)",
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
    ]], "engine", first=3.0)
    raw(c, inv, [
        "Traceback (most recent call last):",
        f'  File "{sp}/v1/engine/core_client.py", line 380, in _wait_for_engine_startup',
        '    raise RuntimeError("Engine core initialization failed. "',
        "RuntimeError: Engine core initialization failed. See root cause above.",
    ], first=0.5)
    c.exit(inv, "exited", "1", cpu="2min 40.215s")
    return expect3(c, "segfault", False, ["SIGSEGV received at time=1746566409 on cpu 131"],
                   ["healthy", "nccl_failure", "engine_exception", "unknown"],
                   "https://github.com/vllm-project/vllm/issues/17770",
                   "DeepSeek-R1 on two nodes with Ray, TP=16, vllm/vllm-openai:v0.8.4 on the V1 engine (V0 starts fine): "
                   "the Ray worker's `*** SIGSEGV received at time=1746566409 on cpu 131 ***` block with "
                   "`addProxyOpIfNeeded()` (NCCL's proxy) and the logging.cc lines are the report's; Ray forwards them "
                   "into EngineCore's output. The start-up lines, the faulthandler line, EngineCore's ActorDiedError "
                   "and the API server's wrapper are ours. No NCCL error text: the crash is native. Restart=no.")
