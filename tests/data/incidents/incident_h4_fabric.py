"""holdout4 cases, theme `fabric` (see incident_h4_base.py): scored only, never tuned on.

GPU interconnect (NCCL), GPU hardware (kernel `NVRM: Xid` lines) and native crashes (segfaults) of SGLang and vLLM.
Each case is rebuilt from one public report; the error lines are quoted from it, the rest (systemd, journald, the
engines' start-up/serving templates) comes from incident_kit/incident_scenes (FORMATS.md). Labels follow
docs/DIAGNOSIS.md "Labels" only; this module was written without reading or running the diagnoser.
"""

from __future__ import annotations

from incident_h4_base import Case, case4, expect4
from incident_kit import STAMP_G, STAMP_S, Inv
from incident_scenes import (
    sglang_boot,
    sglang_decode,
    sglang_sched_exception,
    sglang_sigquit,
    vllm_boot,
    vllm_clean_shutdown,
    vllm_engine_dead,
    vllm_serve,
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


def sgl_health(c: Case, inv: Inv, n: int, *, every: float = 30.0, ip: str = "10.0.5.9", port: int = 41300,
               path: str = "/health") -> None:
    """Load-balancer probes the HTTP server still answers (SGLang's main-process access lines)."""
    for i in range(n):
        c.app(inv, c.slog(f'INFO:     {ip}:{port + 7 * i} - "GET {path} HTTP/1.1" 200 OK', None), dt=every)


def vhead(c: Case, inv: Inv) -> None:
    """vLLM V1 start-up lines before the workers' device set-up."""
    c.app(inv, c.vlog("INFO", "api_server.py:1839", f"vLLM API server version {c.version}"), dt=4.0)
    c.app(inv, c.vlog("INFO", "utils.py:233", f"non-default args: {{'model_tag': '{c.model}', 'model': "
                      f"'{c.model}', 'tensor_parallel_size': {c.tp}}}"))
    c.app(inv, c.vlog("INFO", "core.py:77", f"Initializing a V1 LLM engine (v{c.version}) with config: "
                      f"model='{c.model}', speculative_config=None, tokenizer='{c.model}', "
                      "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, trust_remote_code=False, "
                      f"dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size={c.tp}, "
                      "pipeline_parallel_size=1"), "engine", dt=3.0)


def ray_v0_boot(c: Case, inv: Inv) -> None:
    """vLLM V0 start-up with the Ray executor: the driver worker logs from the MQLLMEngine process."""
    v = c.vlog
    c.app(inv, v("INFO", "api_server.py:912", f"vLLM API server version {c.version}"), dt=4.0)
    c.app(inv, v("INFO", "api_server.py:913", f"args: Namespace(model='{c.model}', tensor_parallel_size={c.tp}, "
                 "distributed_executor_backend='ray', trust_remote_code=True, max_model_len=32768)"))
    c.app(inv, v("INFO", "llm_engine.py:234", f"Initializing a V0 LLM engine (v{c.version}) with config: "
                 f"model='{c.model}', speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, "
                 "tokenizer_mode=auto, revision=None, trust_remote_code=True, dtype=torch.bfloat16, "
                 f"max_seq_len=32768, tensor_parallel_size={c.tp}, pipeline_parallel_size=1, quantization=fp8"),
          "engine", dt=3.0)
    c.app(inv, v("INFO", "ray_distributed_executor.py:153", "use_ray_spmd_worker: False"), "engine", dt=1.0)
    c.app(inv, v("INFO", "model_runner.py:1110", f"Starting to load model {c.model}..."), "engine", dt=6.0)
    c.app(inv, v("INFO", "model_runner.py:1115", "Loading model weights took 41.8761 GB"), "engine", dt=180.0)
    c.app(inv, v("INFO", "executor_base.py:111", "# cuda blocks: 4839, # CPU blocks: 976"), "engine", dt=20.0)
    c.app(inv, v("INFO", "model_runner.py:1562", "Graph capturing finished in 31 secs, total memory: 1.12 GiB"),
          "engine", dt=31.0)
    c.app(inv, v("INFO", "llm_engine.py:436", "init engine (profile, create kv cache, warmup model) took 58.14 "
                 "seconds"), "engine")
    c.app(inv, v("INFO", "api_server.py:958", "Starting vLLM API server on http://0.0.0.0:8000"), dt=0.5)
    c.app(inv, f"INFO:     Started server process [{inv.main}]")
    c.app(inv, "INFO:     Waiting for application startup.")
    c.app(inv, "INFO:     Application startup complete.")


# ============================== nccl_failure ===================================================


@case4
def nccl4_vllm_0110_v1_warmup_allreduce_loop() -> Case:
    c = Case("nccl4_vllm_0110_v1_warmup_allreduce_loop", "vllm", "0.11.0", day=11, hour=19, tp=2,
             model="/models/Qwen3-30B-A3B-Instruct-2507")
    dp = "/usr/local/lib/python3.12/dist-packages/vllm"
    where = "v1/executor/multiproc_executor.py:597"
    for k in range(3):
        inv = c.start(dt=0.3 if k == 0 else 0.1)
        vhead(c, inv)
        w1 = c._proc(inv, "worker1")[0]
        c.app(inv, c.vlog("ERROR", where, "WorkerProc failed to start."), "worker1", dt=6.0)
        c.many(inv, [c.vlog("ERROR", where, m) for m in [
            "Traceback (most recent call last):",
            f'  File "{dp}/v1/executor/multiproc_executor.py", line 571, in worker_main',
            "    worker = WorkerProc(*args, **kwargs)",
            f'  File "{dp}/distributed/parallel_state.py", line 1212, in init_model_parallel_group',
            "    return GroupCoordinator(",
            f'  File "{dp}/distributed/device_communicators/cuda_communicator.py", line 50, in __init__',
            "    self.pynccl_comm = PyNcclCommunicator(",
            f'  File "{dp}/distributed/device_communicators/pynccl.py", line 139, in __init__',
            "    self.all_reduce(data)",
            f'  File "{dp}/distributed/device_communicators/pynccl.py", line 162, in all_reduce',
            "    self.nccl.ncclAllReduce(buffer_type(in_tensor.data_ptr()),",
            f'  File "{dp}/distributed/device_communicators/pynccl_wrapper.py", line 337, in ncclAllReduce',
            '    self.NCCL_CHECK(self._funcs["ncclAllReduce"](sendbuff, recvbuff, count,',
            f'  File "{dp}/distributed/device_communicators/pynccl_wrapper.py", line 291, in NCCL_CHECK',
            '    raise RuntimeError(f"NCCL error: {error_str}")',
            "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        ]], "worker1")
        raw(c, inv, [f"gpu-7:{w1}:{w1} [1] NCCL INFO cudaDriverVersion 12080"], "worker1")
        c.app(inv, c.vlog("ERROR", "core.py:708", "EngineCore failed to start."), "engine", dt=0.4)
        c.many(inv, [c.vlog("ERROR", "core.py:708", m) for m in [
            "Traceback (most recent call last):",
            f'  File "{dp}/v1/executor/multiproc_executor.py", line 497, in wait_for_ready',
            "    raise e from None",
            "Exception: WorkerProc initialization failed due to an exception in a background process. See stack "
            "trace for root cause.",
        ]], "engine")
        c.app(inv, "Traceback (most recent call last):", dt=0.3)
        c.many(inv, [
            f'  File "{dp}/v1/engine/utils.py", line 759, in wait_for_engine_startup',
            '    raise RuntimeError("Engine core initialization failed. "',
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        ])
        c.exit(inv, "exited", "1", restart=k < 2, cpu="31.207s")
    c.start_limit(inv)
    return expect4(c, "nccl_failure", True,
                   ["RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"],
                   ["healthy", "engine_exception", "kv_cache_oom", "unknown", "model_load_failure"],
                   "https://github.com/vllm-project/vllm/issues/21661",
                   "Comment on the report from November 2025 (vLLM 0.11.0, V1, multiproc workers, TP=2): the worker's "
                   "traceback from pynccl.py line 139 `self.all_reduce(data)` (the warm-up all-reduce in "
                   "PyNcclCommunicator.__init__) through pynccl.py:162, pynccl_wrapper.py:337/291 to `RuntimeError: "
                   "NCCL error: unhandled cuda error`, the `[v1/executor/multiproc_executor.py:597]` location and the "
                   "`NCCL INFO cudaDriverVersion 12080` line are the report's (host name and pids ours). The frames "
                   "above pynccl.py:139, the EngineCore/API server wrappers and the start-up lines are vLLM 0.11 "
                   "templates (ours); the model is ours. Restart=always: three failed starts, then the start limit.")


@case4
def nccl4_vllm_v0_070_allreduce_watchdog_restart() -> Case:
    c = Case("nccl4_vllm_v0_070_allreduce_watchdog_restart", "vllm", "0.7.0", v1=False, day=12, hour=19, tp=2,
             model="/models/Llama-3.3-70B-Instruct-AWQ")
    dp = "/usr/local/lib/python3.12/dist-packages/vllm"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 4, gen=388.0)
    wh = "multiproc_worker_utils.py:240"
    c.many(inv, [c.vlog("ERROR", wh, m) for m in [
        "Exception in worker VllmWorkerProcess while processing method start_worker_execution_loop.",
        "Traceback (most recent call last):",
        f'  File "{dp}/distributed/device_communicators/pynccl_wrapper.py", line 276, in ncclAllReduce',
        '    self.NCCL_CHECK(self._funcs["ncclAllReduce"](sendbuff, recvbuff, count,',
        f'  File "{dp}/distributed/device_communicators/pynccl_wrapper.py", line 254, in NCCL_CHECK',
        '    raise RuntimeError(f"NCCL error: {error_str}")',
        "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        f'  File "{dp}/executor/multiproc_worker_utils.py", line 234, in _run_worker_process',
        "    output = run_method(worker, method, args, kwargs)",
    ]], "worker1", dt=0.0)
    timeout = ("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48213, OpType=GATHER, "
               "NumelIn=32064, NumelOut=0, Timeout(ms)=600000) ran for 600022 milliseconds before timing out.")
    raw(c, inv, [
        f"[rank0]:[E{STAMP_G}.412087113 ProcessGroupNCCL.cpp:616] {timeout}",
        f"[rank0]:[E{STAMP_G}.412911640 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 0] Exception (either an "
        "error or timeout) detected by watchdog at work: 48213, last enqueued NCCL work: 48213, last completed NCCL "
        "work: 48212.",
        f"[rank0]:[E{STAMP_G}.412978015 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 0] Process group watchdog "
        f"thread terminated with exception: {timeout}",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
    ], "engine", first=600.0)
    c.many(inv, [
        c.vlog("ERROR", "client.py:300", f"RuntimeError('Engine process (pid {c._proc(inv, 'engine')[0]}) died.')"),
        c.vlog("ERROR", "client.py:300", "NoneType: None"),
        c.vlog("CRITICAL", "launcher.py:101", "MQLLMEngine is already dead, terminating server process"),
        'INFO:     10.0.3.8:52981 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    ], dt=2.0)
    vllm_clean_shutdown(c, inv)
    c.clean_exit(inv, restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 3, gen=392.0)
    return expect4(c, "nccl_failure", False,
                   ["RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
                    "Watchdog caught collective operation timeout"],
                   ["healthy", "unknown", "cuda_oom_runtime"],
                   "https://github.com/vllm-project/vllm/issues/12625",
                   "`stack trace for Watchdog caught collective operation timeout` (January 2025, V0 multiproc "
                   "workers; version estimated as 0.7.0): the worker's `(VllmWorkerProcess pid=N) ERROR ... "
                   "multiproc_worker_utils.py:240]` traceback with `self.NCCL_CHECK(self._funcs[\"ncclAllReduce\"]...`, "
                   "pynccl_wrapper.py line 254, `NCCL error: unhandled cuda error`, the `direct cause` chain and "
                   "multiproc_worker_utils.py line 234 `_run_worker_process` are the report's. The rank-0 watchdog "
                   "lines follow torch's template (SeqNum/numbers ours), the MQLLMEngine death, the orderly exit 0 and "
                   "the Restart=always restart that serves again are ours. Not a loop (one failure).")


@case4
def nccl4_sgl_044_watchdog_coalesced_http_up() -> Case:
    c = Case("nccl4_sgl_044_watchdog_coalesced_http_up", "sglang", "0.4.4.post1", day=13, hour=19, tp=2,
             model="/models/Qwen2.5-72B-Instruct")
    lib = "/usr/local/envs/ao25/lib/python3.10/site-packages/torch/lib"
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 5, tput=905.0, running=17)
    timeout = ("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=610, OpType=COALESCED, "
               "NumelIn=56320, NumelOut=450560, Timeout(ms)=600000) ran for 600007 milliseconds before timing out.")
    frames = [
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent "
        "call first):",
        f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f9c34fca446 in {lib}/libc10.so)",
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        f"std::ratio<1l, 1000l> > >) + 0x282 (0x7f9c3622a772 in {lib}/libtorch_cuda.so)",
        f"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f9c36231bb3 in {lib}/libtorch_cuda.so)",
        f"frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f9c3623361d in {lib}/libtorch_cuda.so)",
        f"frame #4: <unknown function> + 0x145c0 (0x7f9c803e85c0 in {lib}/libtorch.so)",
        "frame #5: <unknown function> + 0x94ac3 (0x7f9c81702ac3 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
        "frame #6: <unknown function> + 0x126850 (0x7f9c81794850 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
        "",
    ]
    raw(c, inv, [
        f"[rank1]:[E{STAMP_G}.723537752 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 9 Rank 1] Process group watchdog "
        f"thread terminated with exception: {timeout}",
    ] + frames + [
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  [PG ID 2 PG GUID 9 Rank 1] Process group watchdog thread terminated with exception: {timeout}",
    ] + frames, "sched1", first=600.0)
    # the TP1 scheduler aborted in C++ (no Python exception, no SIGQUIT): the HTTP server keeps answering probes
    sgl_health(c, inv, 6, every=20.0)
    c.extra["systemctl_show"] = {"MainPID": str(inv.main), "ActiveState": "active", "SubState": "running",
                                 "NRestarts": "0", "Result": "success"}
    return expect4(c, "nccl_failure", False,
                   ["Watchdog caught collective operation timeout: WorkNCCL(SeqNum=610, OpType=COALESCED"],
                   ["healthy", "segfault", "unknown"],
                   "https://github.com/modelscope/DiffSynth-Studio/issues/458",
                   "The report (ModelParallelStrategy, torch 2.5, March 2025) shows the rank-1 line "
                   "`[rank1]:[E318 07:39:53.723537752 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 9 Rank 1] Process group "
                   "watchdog thread terminated with exception ... WorkNCCL(SeqNum=610, OpType=COALESCED, NumelIn=56320, "
                   "NumelOut=450560, Timeout(ms)=600000) ran for 600007 milliseconds` with checkTimeout at "
                   "ProcessGroupNCCL.cpp:618 and frames #0-#5 (the /usr/local/envs/ao25 paths are the report's; frame "
                   "#5's tail and frame #6 complete the cut text by torch's template). The SGLang side is ours: the "
                   "same torch error aborts the TP1 scheduler of a TP=2 SGLang 0.4.4.post1 unit (same torch 2.5 era), "
                   "no SIGQUIT reaches the main process, which keeps answering /health (FORMATS a.6) while nothing is "
                   "generated; the unit is still active at the end.")


@case4
def nccl4_sgl_042_init_system_error_once() -> Case:
    c = Case("nccl4_sgl_042_init_system_error_once", "sglang", "0.4.2.post4", day=14, hour=19, tp=4,
             model="/models/DeepSeek-R1-Distill-Llama-70B")
    s = "/sgl-workspace/sglang/python/sglang/srt"
    inv = c.start()
    c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...) is ~10 KB: null in journalctl -o json
    c.app(inv, c.slog("Init torch distributed begin.", "TP0"), "sched", dt=3.0)
    c.app(inv, c.slog("Init torch distributed begin.", "TP1"), "sched1")
    sglang_sched_exception(c, inv, [
        f'  File "{s}/managers/scheduler.py", line 1787, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
        f'  File "{s}/managers/scheduler.py", line 240, in __init__',
        "    self.tp_worker = TpWorkerClass(",
        f'  File "{s}/managers/tp_worker_overlap_thread.py", line 63, in __init__',
        "    self.worker = TpModelWorker(server_args, gpu_id, tp_rank, dp_rank, nccl_port)",
        f'  File "{s}/managers/tp_worker.py", line 68, in __init__',
        "    self.model_runner = ModelRunner(",
        f'  File "{s}/model_executor/model_runner.py", line 178, in __init__',
        "    min_per_gpu_memory = self.init_torch_distributed()",
        f'  File "{s}/model_executor/model_runner.py", line 253, in init_torch_distributed',
        "    initialize_model_parallel(tensor_model_parallel_size=self.tp_size)",
        f'  File "{s}/distributed/parallel_state.py", line 1055, in initialize_model_parallel',
        "    _TP = init_model_parallel_group(",
        f'  File "{s}/distributed/parallel_state.py", line 890, in init_model_parallel_group',
        "    return GroupCoordinator(",
        f'  File "{s}/distributed/parallel_state.py", line 233, in __init__',
        "    self.pynccl_comm = PyNcclCommunicator(",
        f'  File "{s}/distributed/device_communicators/pynccl.py", line 108, in __init__',
        "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(",
        f'  File "{s}/distributed/device_communicators/pynccl_wrapper.py", line 351, in ncclCommInitRank',
        "    self.NCCL_CHECK(",
        f'  File "{s}/distributed/device_communicators/pynccl_wrapper.py", line 330, in NCCL_CHECK',
        '    raise RuntimeError(f"NCCL error: {error_str}")',
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    ])
    sglang_sigquit(c, inv, serving=False)
    c.exit(inv, "killed", "9", cpu="22.618s")
    return expect4(c, "nccl_failure", False,
                   ["RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"],
                   ["healthy", "engine_exception", "port_in_use", "unknown"],
                   "https://github.com/sgl-project/sglang/issues/3460",
                   "SGLang docker build of February 2025 (0.4.2.postN; the report's L40 containers with a TP size "
                   "that does not divide evenly): the scheduler traceback from scheduler.py line 1787 "
                   "run_scheduler_process through scheduler.py:240, tp_worker_overlap_thread.py:63, tp_worker.py:68 to "
                   "model_runner.py:178 `min_per_gpu_memory = self.init_torch_distributed()` and the title's `NCCL "
                   "error: unhandled system error (run with NCCL_DEBUG=INFO for details)` are the report's; the frames "
                   "below model_runner.py:178 follow the same build's pynccl path (line numbers as in "
                   "sgl-project/sglang#3451, ours), the single-node TP=4 unit, SIGQUIT and systemd lines are ours. "
                   "Restart=no: one failed start.")


# ============================== gpu_hardware_xid ===============================================


@case4
def xid4_vllm_092_xid94_contained_restart_recovers() -> Case:
    c = Case("xid4_vllm_092_xid94_contained_restart_recovers", "vllm", "0.9.2", day=15, hour=19, tp=8,
             model="/models/Qwen3-235B-A22B-FP8")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 4, gen=702.0)
    c.kernel_line("NVRM: GPU at PCI:0000:1b:00: GPU-2f6c1e0a-93b4-5d71-a0c2-7e8f3d5b9a14", dt=3.0)
    for pci in ("0000:1b:00", "0000:43:00", "0000:52:00", "0000:61:00", "0000:9d:00", "0000:c3:00"):
        c.kernel_line(f"NVRM: Xid (PCI:{pci}): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, "
                      "D-RST: No", dt=0.01)
    # the engine hangs in a collective, the RPC to the workers times out after VLLM_RPC_TIMEOUT
    vllm_engine_dead(c, inv, [
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 237, in '
        "collective_rpc",
        '    raise TimeoutError(f"RPC call to {method} timed out.") from e',
        "TimeoutError: RPC call to execute_model timed out.",
    ], where="core.py:517", restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 4, gen=698.0)
    return expect4(c, "gpu_hardware_xid", False,
                   ["Contained: SM (0x1). RST: No, D-RST: No"],
                   ["healthy", "nccl_failure", "engine_exception", "unknown"],
                   "https://forums.developer.nvidia.com/t/h200-xid-94-contained-sm-0x1-rst-no-d-rst-no-with-zero-ecc-"
                   "counter-increment-preceded-by-xid-137-tlc-rx-priv-error-cascade/369786",
                   "NVIDIA forum report of a multi-node vLLM deployment on 8x H200 (driver 575.51.03): XID 94 with the "
                   "payload `Contained: SM (0x1). RST: No, D-RST: No` on 6 of 8 GPUs within the same second (after a "
                   "cascade of XID 137 NVLink TLC RX PRIV errors whose text the post does not quote, so they are left "
                   "out); the application hung and recovered after a restart. The Xid payload is the report's; the "
                   "line prefix (FORMATS d.2), PCI addresses, the vLLM side (V1 0.9.2, version ours: the RPC to the "
                   "workers times out, EngineCore dies, exit 0) and the Restart=always restart that serves again are "
                   "ours. The contained ECC error still needs the GPUs checked/reset, so the Xid decides although the "
                   "unit recovered.")


@case4
def xid4_vllm_0102_xid62_gsp_reset_required_loop() -> Case:
    c = Case("xid4_vllm_0102_xid62_gsp_reset_required_loop", "vllm", "0.10.2", day=16, hour=19,
             model="/models/Qwen3-30B-A3B-Instruct-2507-AWQ")
    dp = "/opt/vllm/lib/python3.12/site-packages/vllm"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 4, gen=142.0)
    c.kernel_line("NVRM: Xid (PCI:0000:01:00): 62, 323f0f30 0000c3d8 00000000 206dae68 206da022 206da190 206d85f6 "
                  "206d8d86", dt=2.0)
    c.kernel_line("NVRM: GPU0 _kgspRpcGspEventPmuHalted: Received signal from GSP that PMU has halted.")
    c.kernel_line("NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset "
                  "Required)")
    vllm_engine_dead(c, inv, [
        f'  File "{dp}/v1/engine/core.py", line 287, in step',
        "    model_output = self.execute_model_with_error_logging(",
        f'  File "{dp}/v1/worker/gpu_model_runner.py", line 1808, in execute_model',
        "    valid_sampled_token_ids = sampled_token_ids.tolist()",
        "torch.AcceleratorError: CUDA error: unspecified launch failure",
        "Search for `cudaErrorLaunchFailure' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
        "for more information.",
    ] + CUDA_ERR_TAIL, where="core.py:711", restart=True)
    for k in range(3):
        inv = c.start(dt=0.1)
        vhead(c, inv)
        c.app(inv, c.vlog("ERROR", "core.py:708", "EngineCore failed to start."), "engine", dt=2.0)
        c.many(inv, [c.vlog("ERROR", "core.py:708", m) for m in [
            "Traceback (most recent call last):",
            f'  File "{dp}/v1/worker/gpu_worker.py", line 166, in init_device',
            "    torch.cuda.set_device(self.device)",
            "torch.AcceleratorError: CUDA error: unknown error",
            "Search for `cudaErrorUnknown' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
            "for more information.",
        ] + CUDA_ERR_TAIL], "engine")
        c.app(inv, "Traceback (most recent call last):", dt=0.3)
        c.many(inv, [
            f'  File "{dp}/v1/engine/utils.py", line 759, in wait_for_engine_startup',
            '    raise RuntimeError("Engine core initialization failed. "',
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
            "{'EngineCore_DP0': 1}",
        ])
        c.exit(inv, "exited", "1", restart=k < 2, cpu="8.914s")
    c.start_limit(inv)
    return expect4(c, "gpu_hardware_xid", True,
                   ["Xid (PCI:0000:01:00): 62, 323f0f30", "Xid (PCI:0000:01:00): 154, GPU recovery action changed"],
                   ["healthy", "engine_exception", "unknown"],
                   "https://forums.developer.nvidia.com/t/bug-xid-62-gsp-watchdog-timeout-on-rtx-5080-during-high-"
                   "context-llm-inference/371272",
                   "NVIDIA forum report: RTX 5080 (16 GB, open kernel module 595.71.05) enters an unrecoverable state "
                   "during long-context LLM inference; the three kernel lines (Xid 62 with its eight words, "
                   "`_kgspRpcGspEventPmuHalted`, Xid 154 `GPU recovery action changed from 0x0 (None) to 0x1 (GPU "
                   "Reset Required)`) are the report's. The report ran llama.cpp; the vLLM 0.10.2 (V1) side is ours: "
                   "EngineCore dies with a CUDA launch failure while serving, the API server exits 0, Restart=always "
                   "restarts it and every start fails in init_device with a CUDA error until the start limit (the GPU "
                   "needs a reset).")


@case4
def xid4_vllm_v0_085_xid13_43_exit0() -> Case:
    c = Case("xid4_vllm_v0_085_xid13_43_exit0", "vllm", "0.8.5", v1=False, day=17, hour=19,
             model="/models/Mistral-Small-24B-Instruct-2501")
    sp = "/opt/vllm/lib/python3.12/site-packages/vllm"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 5, gen=512.0)
    c.kernel_line("NVRM: Xid (PCI:0000:1b:00): 13, Graphics SM Warp Exception on (GPC 2, TPC 0, SM 0): Out Of Range "
                  "Address", dt=1.5)
    c.kernel_line("NVRM: Xid (PCI:0000:1b:00): 13, Graphics Exception: ESR 0x514730=0x201000e 0x514734=0x20 "
                  "0x514728=0x4c1eb72 0x51472c=0x174", dt=0.0)
    c.kernel_line("NVRM: Xid (PCI:0000:1b:00): 43, Ch 00000030", dt=0.001)
    c.many(inv, [c.vlog("ERROR", "engine.py:160", m) for m in [
        "CUDA error: an illegal memory access was encountered",
    ] + CUDA_ERR_TAIL + [
        "Traceback (most recent call last):",
        f'  File "{sp}/engine/multiprocessing/engine.py", line 158, in start',
        "    self.run_engine_loop()",
        f'  File "{sp}/engine/multiprocessing/engine.py", line 221, in run_engine_loop',
        "    request_outputs = self.engine_step()",
        f'  File "{sp}/worker/model_runner.py", line 1844, in execute_model',
        "    output: SamplerOutput = self.sampler(",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]], "engine", dt=0.0)
    c.many(inv, [
        c.vlog("CRITICAL", "launcher.py:116", "MQLLMEngine is already dead, terminating server process"),
        'INFO:     10.0.3.7:53107 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    ], dt=0.5)
    vllm_clean_shutdown(c, inv)
    c.clean_exit(inv)
    c.extra["systemctl_show"] = {"ActiveState": "inactive", "SubState": "dead", "MainPID": "0", "NRestarts": "0",
                                 "Result": "success", "ExecMainStatus": "0"}
    return expect4(c, "gpu_hardware_xid", False,
                   ["Xid (PCI:0000:1b:00): 13, Graphics SM Warp Exception on (GPC 2, TPC 0, SM 0): Out Of Range",
                    "Xid (PCI:0000:1b:00): 43, Ch 00000030"],
                   ["healthy", "unknown", "cuda_oom_runtime"],
                   "https://github.com/enfiskutensykkel/ssd-gpu-dma/issues/29",
                   "The kernel lines (Xid 13 `Graphics SM Warp Exception on (GPC 2, TPC 0, SM 0): Out Of Range Address`, "
                   "Xid 13 `Graphics Exception: ESR ...`, Xid 43 `Ch 00000030` on PCI:0000:1b:00, a V100) are the "
                   "report's dmesg, where a CUDA program died with `an illegal memory access was encountered`. The vLLM "
                   "side is ours: a V0 (VLLM_USE_V1=0) 0.8.5 MQLLMEngine dies with the same CUDA error while serving, "
                   "the API server exits 0 after `MQLLMEngine is already dead`, and Restart=on-failure does not restart "
                   "it (inactive at the end). Xid 13 may be an application bug, but the Xid rule still decides.")


# ============================== segfault =======================================================


@case4
def seg4_sgl_043_main_sigsegv_dumped_start_limit() -> Case:
    c = Case("seg4_sgl_043_main_sigsegv_dumped_start_limit", "sglang", "0.4.3", day=18, hour=19,
             model="/models/DeepSeek-R1-Distill-Qwen-32B")
    home = "/home/ubuntu/miniconda3/envs/sglang/lib/python3.10"
    ext = ("Extension modules: numpy.core._multiarray_umath, numpy.core._multiarray_tests, "
           "numpy.linalg._umath_linalg, numpy.fft._pocketfft_internal, numpy.random._common, "
           "numpy.random.bit_generator, numpy.random._bounded_integers, numpy.random._mt19937, numpy.random.mtrand, "
           "numpy.random._philox, numpy.random._pcg64, numpy.random._sfc64, numpy.random._generator, "
           "charset_normalizer.md, requests.packages.charset_normalizer.md, requests.packages.chardet.md, "
           "multidict._multidict, yarl._quoting_c, propcache._helpers_c, aiohttp._http_writer, aiohttp._http_parser, "
           "aiohttp._websocket.mask, aiohttp._websocket.reader_c, frozenlist._frozenlist, uvloop.loop, torch._C, "
           "torch._C._dynamo.autograd_compiler, torch._C._dynamo.eval_frame, torch._C._dynamo.guards, "
           "torch._C._dynamo.utils, torch._C._fft, torch._C._linalg, torch._C._nested, torch._C._nn, "
           "torch._C._sparse, torch._C._special, psutil._psutil_linux, psutil._psutil_posix, setproctitle, "
           "zmq.backend.cython._zmq, yaml._yaml, markupsafe._speedups, PIL._imaging, PIL._imagingft, "
           "msgspec._core, msgpack._cmsgpack, google._upb._message, ray._raylet, sentencepiece._sentencepiece, "
           "regex._regex (total: 50)")
    for k in range(5):
        inv = c.start(dt=0.2 if k == 0 else 0.1)
        c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...)
        raw(c, inv, [
            "Fatal Python error: Segmentation fault",
            "",
            "Current thread 0x0000763bcdcde1c0 (most recent call first):",
            f'  File "{home}/site-packages/sglang/srt/hf_transformers_utils.py", line 174 in get_tokenizer',
            f'  File "{home}/site-packages/sglang/srt/managers/tokenizer_manager.py", line 158 in __init__',
            f'  File "{home}/site-packages/sglang/srt/entrypoints/engine.py", line 484 in _launch_subprocesses',
            f'  File "{home}/site-packages/sglang/srt/entrypoints/http_server.py", line 480 in launch_server',
            f'  File "{home}/site-packages/sglang/launch_server.py", line 14 in <module>',
            '  File "<frozen runpy>", line 88 in _run_code',
            '  File "<frozen runpy>", line 198 in _run_module_as_main',
            "",
            ext,
        ], first=6.0)
        c.exit(inv, "dumped", "11", restart=k < 4, cpu="11.402s")
    c.start_limit(inv, "core-dump")
    return expect4(c, "segfault", True, ["Fatal Python error: Segmentation fault"],
                   ["healthy", "unknown", "model_load_failure", "engine_exception"],
                   "https://github.com/sgl-project/sglang/issues/3778",
                   "`I encountered an error when using the command to deploy the model, but there was no error "
                   "message` (February 2025, 0.4.3): the `Extension modules: ... (total: 50)` list, `Fatal Python error: "
                   "Segmentation fault` and `Current thread 0x0000763bcdcde1c0 (most recent call first):` are the "
                   "report's; its frame list is cut at `File \"/home/ub...`, so the frames (tokenizer set-up in the "
                   "main process) and their order (faulthandler prints the module list last) are ours. The main "
                   "process itself crashes: systemd logs code=dumped, status=11/SEGV; Restart=always until the start "
                   "limit.")


@case4
def seg4_vllm_v0_073_ray_addcbdcoll_sigsegv_restart() -> Case:
    c = Case("seg4_vllm_v0_073_ray_addcbdcoll_sigsegv_restart", "vllm", "0.7.3", v1=False, day=19, hour=19, tp=16,
             model="/models/DeepSeek-R1")
    inv = c.start()
    ray_v0_boot(c, inv)
    vllm_serve(c, inv, 4, gen=221.0)
    w = "\x1b[36m(RayWorkerWrapper pid=812)\x1b[0m "
    r = f"{w}[2025-04-17 15:09:14,925 E 812 812] logging.cc:447: "
    raw(c, inv, [
        w + "*** SIGSEGV received at time=1744873754 on cpu 137 ***",
        w + "PC: @     0x7f817f64c0ad  (unknown)  addCBDCollToPlan()",
        w + "    @     0x7fb1a2173520  (unknown)  (unknown)",
        w + "    @     0x7f8159fc7872         80  (unknown)",
        w + "    @            0x96000  (unknown)  (unknown)",
        w + "    @ ... and at least 1000 more frames",
        r + "*** SIGSEGV received at time=1744873754 on cpu 137 ***",
        r + "PC: @     0x7f817f64c0ad  (unknown)  addCBDCollToPlan()",
        r + "    @     0x7fb1a2173520  (unknown)  (unknown)",
        r + "    @     0x7f8159fc7872         80  (unknown)",
        w + "Fatal Python error: Segmentation fault",
    ], first=3.0)
    c.many(inv, [
        c.vlog("ERROR", "client.py:300", f"RuntimeError('Engine process (pid {c._proc(inv, 'engine')[0]}) died.')"),
        c.vlog("ERROR", "client.py:300", "NoneType: None"),
        c.vlog("CRITICAL", "launcher.py:101", "MQLLMEngine is already dead, terminating server process"),
        'INFO:     10.0.3.7:53311 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    ], dt=5.0)
    vllm_clean_shutdown(c, inv)
    c.clean_exit(inv, restart=True)
    inv2 = c.start(dt=0.1)
    ray_v0_boot(c, inv2)
    vllm_serve(c, inv2, 3, gen=219.0)
    return expect4(c, "segfault", False,
                   ["SIGSEGV received at time=1744873754 on cpu 137", "addCBDCollToPlan()"],
                   ["healthy", "nccl_failure", "unknown"],
                   "https://github.com/vllm-project/vllm/issues/16766",
                   "vLLM v0.7.3, V0 engine, TP=16 over Ray serving DeepSeek-R1 crashes while inferring: the Ray "
                   "worker's block `*** SIGSEGV received at time=1744873754 on cpu 137 ***`, `PC: @ 0x7f817f64c0ad "
                   "(unknown) addCBDCollToPlan()` (inside NCCL), the `@` frames, `... and at least 1000 more frames` "
                   "and the logging.cc:447 lines with their own time are the report's, including the ANSI-coloured "
                   "`(RayWorkerWrapper pid=812)` prefix (byte-array MESSAGE). The Ray V0 start-up lines, the "
                   "faulthandler line, the V0 client's "
                   "`Engine process ... died` / `MQLLMEngine is already dead` lines, the exit 0 and the Restart=always "
                   "restart that serves again are ours. No NCCL error text: the crash is native.")


@case4
def seg4_sgl_0510_dsa_scheduler_segfault_http_up() -> Case:
    c = Case("seg4_sgl_0510_dsa_scheduler_segfault_http_up", "sglang", "0.5.10", day=20, hour=19, tp=8,
             model="/models/DeepSeek-V3.2")
    inv = c.start()
    c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...)
    c.app(inv, c.slog("Init torch distributed begin.", "DP0 TP0"), "sched", dt=3.0)
    c.app(inv, c.slog("Load weight begin. avail mem=94.61 GB", "DP0 TP0"), "sched", dt=2.5)
    c.app(inv, c.slog("Load weight end. type=DeepseekV32ForCausalLM, dtype=torch.bfloat16, avail mem=9.88 GB, "
                      "mem usage=84.73 GB.", "DP0 TP0"), "sched", dt=240.0)
    c.app(inv, c.slog("Capture cuda graph end. Time elapsed: 38.42 s. mem usage=1.93 GB. avail mem=3.02 GB.",
                      "DP0 TP0"), "sched", dt=45.0)
    c.app(inv, f"INFO:     Started server process [{inv.main}]", dt=1.0)
    c.app(inv, "INFO:     Waiting for application startup.")
    c.app(inv, "INFO:     Application startup complete.")
    c.app(inv, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    c.app(inv, c.slog('INFO:     127.0.0.1:40110 - "GET /model_info HTTP/1.1" 200 OK', None), dt=1.0)
    c.app(inv, c.slog("The server is fired up and ready to roll!", None), dt=2.0)
    for i in range(4):
        c.app(inv, c.slog(f"Decode batch, #running-req: 6, #token: {38110 + 977 * i}, token usage: 0.04, cuda graph: "
                          f"True, gen throughput (token/s): {311.2 + 4 * i:.2f}, #queue-req: 1", "DP5 TP5"),
              "sched", dt=7.0)
        c.app(inv, c.slog(f'INFO:     10.0.6.{21 + i}:5{2210 + 11 * i} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
                          None), dt=0.5)
    raw(c, inv, [
        f"[{STAMP_S} DP5 TP5] Prefill batch, #new-seq: 1, #new-token: 1280, #cached-token: 0, token usage: 0.01, "
        "#running-req: 0, #queue-req: 1, #pending-token: 13898, cuda graph: False, input throughput (token/s): 556.48",
        f"[{STAMP_S} DP4 TP4] Prefill batch, #new-seq: 1, #new-token: 1280, #cached-token: 0, token usage: 0.01, "
        "#running-req: 0, #queue-req: 1, #pending-token: 13898, cuda graph: False, input throughput (token/s): 556.46",
    ], "sched", first=5.0)
    raw(c, inv, [
        "Fatal Python error: Segmentation fault",
        "",
        "Thread 0x00007f3173ff16c0 (most recent call first):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/utils/watchdog.py", line 147 in _watchdog_once',
        '  File "/sgl-workspace/sglang/python/sglang/srt/utils/watchdog.py", line 127 in _watchdog_thread',
        '  File "/usr/lib/python3.12/threading.py", line 1010 in run',
        '  File "/usr/lib/python3.12/threading.py", line 1073 in _bootstrap_inner',
        '  File "/usr/lib/python3.12/threading.py", line 1030 in _bootstrap',
        "",
        "Current thread 0x00007f3a4e9fe740 (most recent call first):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1183 in event_loop_overlap',
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 3120 in run_scheduler_process',
    ], "sched", first=0.3)
    # no Python exception, so no SIGQUIT: the main process keeps answering its probes, nothing is generated
    sgl_health(c, inv, 6, every=20.0)
    c.extra["systemctl_show"] = {"MainPID": str(inv.main), "ActiveState": "active", "SubState": "running",
                                 "NRestarts": "0", "Result": "success"}
    return expect4(c, "segfault", False, ["Fatal Python error: Segmentation fault"],
                   ["healthy", "engine_exception", "unknown", "nccl_failure"],
                   "https://github.com/sgl-project/sglang/issues/22757",
                   "DeepSeek V3.2 with DSA and mooncake L3 cache on H20 (April 2026; SGLang version estimated as 0.5.10): "
                   "the two `DP5 TP5`/`DP4 TP4` Prefill batch lines, `Fatal Python error: Segmentation fault` and the "
                   "watchdog thread's frames (watchdog.py:147 _watchdog_once, :127 _watchdog_thread, threading.py:1010) "
                   "are the report's; the rest of the dump (threading frames below, the current thread's frames) is "
                   "ours, as are the start-up, Decode and probe lines. The scheduler segfaults without a Python "
                   "exception, sends no SIGQUIT and the main process keeps answering /health (FORMATS a.6): HTTP stays "
                   "up while nothing is generated; the unit is active at the end.")
