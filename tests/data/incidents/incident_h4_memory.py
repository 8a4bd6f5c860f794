"""holdout4 cases, theme `memory` (see incident_h4_base.py): scored only, never tuned on.

KV sizing at start-up, CUDA-graph capture OOM, runtime CUDA OOM and one healthy decoy under KV pressure. Every case
is rebuilt from one public report (url in expected.json); the error lines are the report's, the start-up/serving
templates and systemd's lines come from incident_kit/incident_scenes (and the boot helpers of incident_h3_memory).
Labels follow docs/DIAGNOSIS.md "Labels" only.
"""

from __future__ import annotations

from incident_h3_memory import CUDA_ERR_TAIL, sgl_boot, v_boot, vlines
from incident_h4_base import Case, case4, expect4
from incident_kit import STAMP_G, Inv
from incident_scenes import (
    NOT_HEALTHY,
    ownership,
    sglang_sched_exception,
    sglang_sigquit,
    vllm_boot,
    vllm_engine_dead,
    vllm_serve,
)

TORCH_TAIL_OLD = ("If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
                  "True to avoid fragmentation.  See documentation for Memory Management  "
                  "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
TORCH_TAIL_NEW = ("If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
                  "True to avoid fragmentation.  See documentation for Memory Management  (https://docs.pytorch.org/docs/"
                  "stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")


def prefixed(c: Case, inv: Inv, role: str, prefix: str, where: str, lines: list[str], *, level: str = "ERROR") -> None:
    """Worker lines with the report's own `(VllmWorker rank=N pid=P)` / `(VllmWorkerProcess pid=P)` prefix."""
    pid = c._proc(inv, role)[0]
    for line in lines:
        c.app(inv, prefix.format(pid=pid) + c.vlog(level, where, line), role, dt=0.0)


def failed_state(c: Case, restart: str, result: str = "exit-code", main: str = "0", active: str = "failed",
                 sub: str = "failed") -> None:
    c.extra["systemctl_show"] = {"MainPID": main, "ActiveState": active, "SubState": sub, "Result": result,
                                 "NRestarts": str(c.restarts), "Restart": restart}


# ============================== kv_cache_oom ===================================================


@case4
def kv4_vllm_080_v0_worker_profile_oom_loop() -> Case:
    c = Case("kv4_vllm_080_v0_worker_profile_oom_loop", "vllm", "0.8.0", v1=False, day=3, hour=17, tp=4,
             model="/models/DeepSeek-R1-Distill-Llama-70B")
    src = "/home/uefi/vllm/source/vllm/vllm"
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 2 has a total capacity of "
           "14.62 GiB of which 3.31 MiB is free. Including non-PyTorch memory, this process has 14.61 GiB memory in "
           "use. Of the allocated memory 14.42 GiB is allocated by PyTorch, and 23.14 MiB is reserved by PyTorch but "
           "unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF="
           "expandable_segments:True to avoid fragmentation. See documentation for Memory Management "
           "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
    worker = [
        "Exception in worker VllmWorkerProcess while processing method determine_num_available_blocks.",
        "Traceback (most recent call last):",
        f'File "{src}/executor/multiproc_worker_utils.py", line 236, in _run_worker_process',
        "output = run_method(worker, method, args, kwargs)",
        "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'File "{src}/utils.py", line 2232, in run_method',
        "return func(*args, **kwargs)",
        "^^^^^^^^^^^^^^^^^^^^^",
        'File "/home/uefi/.local/lib/python3.12/site-packages/torch/utils/_contextlib.py", line 116, in '
        "decorate_context",
        "return func(*args, **kwargs)",
        f'File "{src}/worker/worker.py", line 229, in determine_num_available_blocks',
        "self.model_runner.profile_run()",
        oom,
    ]
    for k in range(3):
        inv = c.start(dt=0.3 if k == 0 else 0.1)
        vllm_boot(c, inv, "weights")
        prefixed(c, inv, "worker1", "(VllmWorkerProcess pid={pid}) ", "multiproc_worker_utils.py:242", worker)
        c.many(inv, [
            "Process SpawnProcess-1:",
            "Traceback (most recent call last):",
            f'  File "{src}/engine/multiprocessing/engine.py", line 389, in run_mp_engine',
            "    engine = MQLLMEngine.from_vllm_config(",
            f'  File "{src}/engine/llm_engine.py", line 433, in _initialize_kv_caches',
            "    self.model_executor.determine_num_available_blocks())",
            f'  File "{src}/executor/mp_distributed_executor.py", line 185, in _run_workers',
            "    driver_worker_output = run_method(self.driver_worker, sent_method,",
            oom,
        ], "engine", dt=0.2)
        c.many(inv, [
            "Traceback (most recent call last):",
            f'  File "{src}/entrypoints/openai/api_server.py", line 227, in build_async_engine_client_from_engine_args',
            "    raise RuntimeError(",
            "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
        ], dt=0.4)
        c.exit(inv, "exited", "1", restart=True, cpu="3min 41.208s")
    failed_state(c, "always", active="activating", sub="auto-restart")
    return expect4(c, "kv_cache_oom", True, [
        "Exception in worker VllmWorkerProcess while processing method determine_num_available_blocks",
        "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 2 has a total capacity of 14.62 GiB"],
        ["healthy", "cuda_graph_capture_oom", "cuda_oom_runtime", "engine_exception", "unknown",
         "gpu_memory_held_by_stale_process"],
        "https://github.com/vllm-project/vllm/issues/14095",
        "DeepSeek-R1 70B (distill) served with `vllm serve` from a source build of early March 2025 on ~15 GB GPUs "
        "(V0, multiproc TP workers; the bracketed `[multiproc_worker_utils.py:242]` format is 0.7.4.dev/0.8.0, "
        "version estimated as 0.8.0). Verbatim: the worker's `Exception in worker VllmWorkerProcess while processing "
        "method determine_num_available_blocks.`, its frames (multiproc_worker_utils.py:236, utils.py:2232, "
        "torch _contextlib.py:116; the report prints them without indentation) and the torch OOM line (GPU 2, "
        "14.62 GiB). The worker.py profile_run frame, the MQLLMEngine frames, the engine process repeating the OOM "
        "and the API wrapper are ours, as are start-up templates and systemd lines. The OOM happens while profiling "
        "memory for the KV cache, before any graph capture: a start-up memory budget. Restart=always: three "
        "identical failing starts, systemd still restarting at the end (restart loop).")


@case4
def kv4_sgl_045_llama4_scout_pool_alloc_oom() -> Case:
    c = Case("kv4_sgl_045_llama4_scout_pool_alloc_oom", "sglang", "0.4.5.post3", day=4, hour=17, tp=8,
             model="meta-llama/Llama-4-Scout-17B-16E-Instruct")
    c.pid_base = 806478 - 212 - 1117  # the scheduler is pid 806478, the pid torch names in the OOM text
    sw = "/sgl-workspace/sglang/python/sglang/srt"
    inv = c.start()
    sgl_boot(c, inv, "weights", avail=78.51, weights=25.62, arch="Llama4ForConditionalGeneration")
    sglang_sched_exception(c, inv, [
        f'  File "{sw}/managers/scheduler.py", line 2011, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
        f'  File "{sw}/managers/scheduler.py", line 261, in __init__',
        "    self.tp_worker = TpWorkerClass(",
        f'  File "{sw}/managers/tp_worker.py", line 75, in __init__',
        "    self.model_runner = ModelRunner(",
        f'  File "{sw}/model_executor/model_runner.py", line 185, in __init__',
        "    self.initialize(min_per_gpu_memory)",
        f'  File "{sw}/model_executor/model_runner.py", line 218, in initialize',
        "    self.init_memory_pool(",
        f'  File "{sw}/model_executor/model_runner.py", line 901, in init_memory_pool',
        "    self.token_to_kv_pool = MHATokenToKVPool(",
        f'  File "{sw}/mem_cache/memory_pool.py", line 266, in _create_buffers',
        "    torch.zeros(",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 80.04 GiB. GPU 3 has a total capacity of 79.10 "
        "GiB of which 20.08 GiB is free. Process 806478 has 59.01 GiB memory in use. Of the allocated memory 56.90 "
        "GiB is allocated by PyTorch, and 125.19 MiB is reserved by PyTorch but unallocated. " + TORCH_TAIL_OLD,
    ])
    sglang_sigquit(c, inv, serving=False)
    ownership(c, inv, [("sched", 60426)])
    c.exit(inv, "killed", "9", cpu="6min 12.033s")
    failed_state(c, "no", result="signal")
    return expect4(c, "kv_cache_oom", False, ["CUDA out of memory. Tried to allocate 80.04 GiB"],
                   ["healthy", "cuda_graph_capture_oom", "cuda_oom_runtime", "gpu_memory_held_by_stale_process",
                    "engine_exception"],
                   "https://github.com/sgl-project/sglang/issues/5755",
                   "Llama-4-Scout-17B-16E on 8xH200 with `--tp 8 --disable-cuda-graph` on SGLang main of late April "
                   "2025 (version estimated as 0.4.5.post3): the torch OOM line (80.04 GiB on GPU 3, `Process 806478 "
                   "has 59.01 GiB memory in use`) is verbatim; the report shows nothing else. Ours: the scheduler "
                   "frames placing it in the KV pool allocation after weight loading (the report only says the OOM "
                   "hits during launch_server with CUDA graphs disabled), start-up templates, systemd lines. Process "
                   "806478 is the unit's own TP scheduler (pid chosen to match; nvidia-smi/process side evidence ours), "
                   "so no stale holder. Restart=no.")


# ============================== cuda_graph_capture_oom =========================================


@case4
def cap4_vllm_090_v1_capture_end_oom_tp4() -> Case:
    c = Case("cap4_vllm_090_v1_capture_end_oom_tp4", "vllm", "0.9.0", day=5, hour=17, tp=4,
             model="/models/Qwen2.5-72B-Instruct")
    lp = "/usr/local/lib/python3.10/site-packages"
    inv = c.start()
    v_boot(c, inv, "capture", weights=33.9810, kv_gib=28.14, kv_tokens="368,832", conc="11.26", compile_s=71.8)
    worker = [
        "WorkerProc hit an exception.",
        "Traceback (most recent call last):",
        f'  File "{lp}/vllm/v1/executor/multiproc_executor.py", line 465, in worker_busy_loop',
        "    output = func(*args, **kwargs)",
        f'  File "{lp}/vllm/v1/worker/gpu_worker.py", line 276, in compile_or_warm_up_model',
        "    self.model_runner.capture_model()",
        f'  File "{lp}/vllm/compilation/backends.py", line 681, in __call__',
        "    with torch.cuda.graph(cudagraph, pool=self.graph_pool):",
        f'  File "{lp}/torch/cuda/graphs.py", line 186, in __exit__',
        "    self.cuda_graph.capture_end()",
        f'  File "{lp}/torch/cuda/graphs.py", line 84, in capture_end',
        "    super().capture_end()",
        "RuntimeError: CUDA error: out of memory",
    ] + CUDA_ERR_TAIL
    prefixed(c, inv, "worker1", "(VllmWorker rank=3 pid={pid}) ", "multiproc_executor.py:470", worker)
    c.app(inv, c.vlog("ERROR", "core.py:500", "EngineCore failed to start."), "engine", dt=0.3)
    vlines(c, inv, "core.py:500", [
        "Traceback (most recent call last):",
        f'  File "{lp}/vllm/v1/engine/core.py", line 491, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
        f'  File "{lp}/vllm/v1/engine/core.py", line 87, in __init__',
        "    self._initialize_kv_caches(vllm_config)",
        "Exception: Call to compile_or_warm_up_model method failed: CUDA error: out of memory",
    ], "engine")
    c.many(inv, [
        "Traceback (most recent call last):",
        f'  File "{lp}/vllm/v1/utils.py", line 526, in wait_for_engine_startup',
        '    raise RuntimeError("Engine core initialization failed. "',
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ], dt=0.3)
    c.exit(inv, "exited", "1", cpu="7min 30.112s")
    failed_state(c, "no")
    return expect4(c, "cuda_graph_capture_oom", False, ["super().capture_end()", "RuntimeError: CUDA error: out of memory"],
                   ["healthy", "kv_cache_oom", "engine_exception", "cuda_oom_runtime"],
                   "https://github.com/vllm-project/vllm/issues/19186",
                   "`Setting gpu-memory-utilization too high can cause OOM` (June 2025, torch 2.6, V1 engine, "
                   "`(VllmWorker rank=3 ...) [multiproc_executor.py:470]`; version estimated as 0.9.0). Verbatim: the "
                   "worker frames compilation/backends.py:681 `with torch.cuda.graph(...)`, torch graphs.py:186/84 "
                   "capture_end, `RuntimeError: CUDA error: out of memory` and the CUDA hint lines. Ours: the frames "
                   "above backends.py (worker_busy_loop, compile_or_warm_up_model), model, KV and capture-progress "
                   "template lines, EngineCore's `Call to compile_or_warm_up_model method failed`, the API wrapper and "
                   "systemd. The KV cache was sized; the OOM is inside CUDA-graph capture. Restart=no.")


# ============================== cuda_oom_runtime ===============================================


@case4
def rt4_sgl_046_llama4_image_overlap_oom_dead() -> Case:
    c = Case("rt4_sgl_046_llama4_image_overlap_oom_dead", "sglang", "0.4.6.post5", day=6, hour=17, tp=4,
             model="meta-llama/Llama-4-Scout-17B-16E-Instruct")
    sw = "/sgl-workspace/sglang/python/sglang/srt"
    s = c.slog
    inv = c.start()
    sgl_boot(c, inv, avail=78.43, weights=51.11, arch="Llama4ForConditionalGeneration", kv_tokens=207104,
             kv_gb=11.85, graph_gb=1.12, ctx=196608, max_req=2048)
    for k in range(3):
        c.app(inv, s(f"Decode batch. #running-req: {58 + k}, #token: {152011 + 4127 * k}, token usage: 0.7{3 + k}, "
                     f"cuda graph: True, gen throughput (token/s): {931.27 - 11.4 * k:.2f}, #queue-req: {4 - k}"),
              "sched", dt=6.0)
        c.app(inv, s(f'INFO:     127.0.0.1:404{61 + 7 * k} - "POST /v1/chat/completions HTTP/1.1" 200 OK', None),
              dt=0.4)
    c.app(inv, s('INFO:     127.0.0.1:40484 - "POST /v1/chat/completions HTTP/1.1" 200 OK', None), dt=2.0)
    c.app(inv, s("Decode batch. #running-req: 62, #token: 167777, token usage: 0.81, cuda graph: True, gen throughput "
                 "(token/s): 896.73, #queue-req: 2"), "sched", dt=0.1)
    c.app(inv, s("Prefill batch. #new-seq: 2, #new-token: 4992, #cached-token: 0, token usage: 0.81, #running-req: 61, "
                 "#queue-req: 0"), "sched", dt=0.1)
    c.app(inv, s('INFO:     127.0.0.1:40488 - "POST /v1/chat/completions HTTP/1.1" 200 OK', None), dt=0.2)
    c.app(inv, s("Prefill batch. #new-seq: 1, #new-token: 2489, #cached-token: 0, token usage: 0.83, #running-req: 63, "
                 "#queue-req: 0"), "sched", dt=0.6)
    c.app(inv, s("TpModelWorkerClient hit an exception: Traceback (most recent call last):"), "sched", dt=0.1)
    c.many(inv, [
        f'  File "{sw}/managers/tp_worker_overlap_thread.py", line 118, in forward_thread_func',
        "    self.forward_thread_func_()",
        '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/_contextlib.py", line 116, in decorate_context',
        "    return func(*args, **kwargs)",
        f'  File "{sw}/managers/tp_worker_overlap_thread.py", line 151, in forward_thread_func_',
        "    self.worker.forward_batch_generation(",
        f'  File "{sw}/managers/tp_worker.py", line 202, in forward_batch_generation',
        "    logits_output, can_run_cuda_graph = self.model_runner.forward(",
        f'  File "{sw}/model_executor/model_runner.py", line 1145, in forward',
        "    return self.forward_extend(",
        f'  File "{sw}/models/mllama4.py", line 104, in forward',
        "    hs = general_mm_embed_routine(",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.94 GiB. GPU 0 has a total capacity of 79.10 "
        "GiB of which 2.71 GiB is free. Including non-PyTorch memory, this process has 76.38 GiB memory in use. Of "
        "the allocated memory 71.96 GiB is allocated by PyTorch, with 1.02 GiB allocated in private pools (e.g., CUDA "
        "Graphs), and 1.83 GiB is reserved by PyTorch but unallocated. " + TORCH_TAIL_OLD,
    ], "sched")
    sglang_sigquit(c, inv, serving=False)
    c.exit(inv, "killed", "9", cpu="38min 4.117s")
    failed_state(c, "no", result="signal")
    return expect4(c, "cuda_oom_runtime", False, ["TpModelWorkerClient hit an exception",
                                                  "CUDA out of memory. Tried to allocate 3.94 GiB"],
                   ["healthy", "kv_cache_oom", "cuda_graph_capture_oom", "gpu_memory_held_by_stale_process",
                    "engine_exception"],
                   "https://github.com/sgl-project/sglang/issues/6933",
                   "Llama-4-Scout on 4 GPUs (`--tp-size=4 --mem-fraction-static=0.95 --context-length=196608 "
                   "--enable-multimodal`) under an image benchmark (June 2025; version estimated as 0.4.6.post5). "
                   "Verbatim: the last Decode/Prefill lines (62 running, token usage 0.81-0.83, 896.73 tok/s) and "
                   "access lines, `TpModelWorkerClient hit an exception` and the overlap-thread frames down to "
                   "tp_worker.py:202. Our copy of the report is cut there: the model_runner/mllama4 frames and the "
                   "torch OOM text (numbers ours) follow SGLang 0.4.6 and torch's template; the title says CUDA OOM. "
                   "Earlier Decode lines, start-up templates and systemd's lines are ours. The server had been ready "
                   "and serving. Restart=no: the unit stays dead.")


# ============================== healthy (decoy) ================================================


@case4
def ok4_vllm_092_v1_kv_usage_95_serving() -> Case:
    c = Case("ok4_vllm_092_v1_kv_usage_95_serving", "vllm", "0.9.2", day=7, hour=17, model="/models/Qwen3-8B")
    inv = c.start()
    v_boot(c, inv, weights=15.2683, kv_gib=4.61, kv_tokens="33,568", conc="1.02")
    usage = [91.2, 91.6, 91.9, 92.3, 92.7, 93.1, 93.5, 93.9, 94.3, 94.7, 95.0, 95.4, 95.8]
    gen = [239.2, 239.2, 240.0, 240.8, 240.8, 240.8, 240.8, 240.8, 241.6, 241.6, 240.8, 240.8, 240.0]
    for i, (u, g) in enumerate(zip(usage, gen, strict=True)):
        if i % 4 == 0:
            c.app(inv, f'INFO:     10.0.3.{21 + i}:5{3114 + 7 * i} - "POST /v1/completions HTTP/1.1" 200 OK', dt=1.5)
        c.app(inv, c.vlog("INFO", "loggers.py:118", f"Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
                          f"throughput: {g:.1f} tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: {u}%, "
                          "Prefix cache hit rate: 0.0%"), dt=10.0)
    return expect4(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/vllm-project/vllm/issues/18115",
                   "Comment of 2025-07-28: the V1 engine (no --preemption-mode, version estimated from the untagged "
                   "`[loggers.py:118]` lines as 0.9.2) fills its KV cache while 8 long requests decode. The "
                   "throughput lines (0.0 prompt tok/s, ~240 gen tok/s, Running: 8, Waiting: 0, KV usage 91.2% -> "
                   "95.8%) are verbatim in content (times ours); the model, the start-up templates and the access "
                   "lines are ours. KV pressure handled by the engine while it keeps serving: healthy.")


# ============================== second batch ===================================================


@case4
def kv4_vllm_091_v1_llama4_worker_oom_start_limit() -> Case:
    c = Case("kv4_vllm_091_v1_llama4_worker_oom_start_limit", "vllm", "0.9.1", day=8, hour=17, tp=8,
             model="/models/Llama-4-Scout-17B-16E-Instruct")
    vp = "/home/ubuntu/vllm_venv/lib/python3.10/site-packages/vllm"
    oom = ("CUDA out of memory. Tried to allocate 2.50 GiB. GPU 5 has a total capacity of 79.25 GiB of which 1.79 GiB "
           "is free. Including non-PyTorch memory, this process has 77.46 GiB memory in use. Of the allocated memory "
           "76.04 GiB is allocated by PyTorch, and 13.88 MiB is reserved by PyTorch but unallocated. " + TORCH_TAIL_OLD)
    worker = [
        "WorkerProc hit an exception.",
        "Traceback (most recent call last):",
        f'  File "{vp}/v1/executor/multiproc_executor.py", line 487, in worker_busy_loop',
        "    output = func(*args, **kwargs)",
        f'  File "{vp}/v1/worker/gpu_worker.py", line 205, in determine_available_memory',
        "    self.model_runner.profile_run()",
        "torch.OutOfMemoryError: " + oom,
    ]
    engine = [
        f'  File "{vp}/v1/engine/core.py", line 506, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
        f'  File "{vp}/v1/engine/core.py", line 390, in __init__',
        "    super().__init__(vllm_config, executor_class, log_stats,",
        f'  File "{vp}/v1/engine/core.py", line 83, in __init__',
        "    self._initialize_kv_caches(vllm_config)",
        f'  File "{vp}/v1/engine/core.py", line 141, in _initialize_kv_caches',
        "    available_gpu_memory = self.model_executor.determine_available_memory()",
        f'  File "{vp}/v1/executor/multiproc_executor.py", line 220, in collective_rpc',
        "    raise RuntimeError(",
        f"RuntimeError: Worker failed with error '{oom[:88]}', please check the stack trace above for the root cause",
    ]
    for k in range(3):
        inv = c.start(dt=0.3 if k == 0 else 0.1)
        v_boot(c, inv, "weights", weights=27.0915, kv_gib=0.0, kv_tokens="", conc="", max_len="131,072",
               compile_s=54.2)
        prefixed(c, inv, "worker1", "(VllmWorker rank=5 pid={pid}) ", "multiproc_executor.py:492", worker)
        c.app(inv, c.vlog("ERROR", "core.py:515", "EngineCore failed to start."), "engine", dt=3.0)
        vlines(c, inv, "core.py:515", ["Traceback (most recent call last):"] + engine, "engine")
        c.many(inv, [
            "Traceback (most recent call last):",
            f'  File "{vp}/v1/utils.py", line 569, in wait_for_engine_startup',
            '    raise RuntimeError("Engine core initialization failed. "',
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        ], dt=0.3)
        c.exit(inv, "exited", "1", restart=k < 2, cpu="4min 58.310s")
    c.start_limit(inv)
    failed_state(c, "on-failure")
    return expect4(c, "kv_cache_oom", True, ["CUDA out of memory. Tried to allocate 2.50 GiB. GPU 5",
                                             "EngineCore failed to start."],
                   ["healthy", "cuda_graph_capture_oom", "cuda_oom_runtime", "engine_exception", "unknown",
                    "gpu_memory_held_by_stale_process"],
                   "https://github.com/vllm-project/vllm/issues/20581",
                   "Llama 4 served as Llama4ForCausalLM on 8xH100 with the V1 engine (July 2025; `[core.py:515] "
                   "EngineCore failed to start.` and `[multiproc_executor.py:492]`: version estimated as 0.9.1). "
                   "Verbatim: the rank-5 worker's torch OOM line (2.50 GiB, GPU 5, 77.46 GiB in use), `EngineCore failed "
                   "to start.` and the EngineCore frames core.py:506/390. Ours: the worker frames placing the OOM in "
                   "determine_available_memory -> profile_run (after weight loading, before any capture; the report "
                   "only shows it is during start-up), the frames below core.py:390, the collective_rpc RuntimeError, "
                   "the API wrapper, templates and systemd lines. Restart=on-failure: three failing starts, then "
                   "systemd's start limit.")


@case4
def cap4_vllm_092_v0_draft_spec_capture_oom() -> Case:
    c = Case("cap4_vllm_092_v0_draft_spec_capture_oom", "vllm", "0.9.2", v1=False, day=9, hour=17,
             model="/models/Qwen3-1.7B")
    mf = "/root/miniforge3/envs/vllm_infer"
    sp = f"{mf}/lib/python3.9/site-packages"
    inv = c.start()
    vllm_boot(c, inv, "capture")
    c.many(inv, [
        "Process SpawnProcess-1:",
        "Traceback (most recent call last):",
        f'  File "{sp}/vllm/engine/multiprocessing/engine.py", line 433, in run_mp_engine',
        "    engine = MQLLMEngine.from_vllm_config(",
        f'  File "{sp}/vllm/worker/model_runner.py", line 1588, in capture_model',
        "    graph_runner.capture(**capture_inputs)",
        f'  File "{sp}/vllm/worker/model_runner.py", line 1982, in capture',
        "    gc.collect()",
        f'  File "{sp}/torch/cuda/graphs.py", line 186, in __exit__',
        "    self.cuda_graph.capture_end()",
        f'  File "{sp}/torch/cuda/graphs.py", line 84, in capture_end',
        "    super().capture_end()",
        "RuntimeError: CUDA error: out of memory",
    ] + CUDA_ERR_TAIL + [
        "",
        f"[rank0]:[W{STAMP_G}.479680531 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() was not "
        "called before program exit, which can leak resources. For more info, please see "
        "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())",
    ], "engine", dt=0.3)
    c.many(inv, [
        "Traceback (most recent call last):",
        f'  File "{mf}/bin/vllm", line 8, in <module>',
        "    sys.exit(main())",
        f'  File "{sp}/vllm/entrypoints/cli/main.py", line 53, in main',
        "    args.dispatch_function(args)",
        f'  File "{sp}/vllm/entrypoints/cli/serve.py", line 52, in cmd',
        "    uvloop.run(run_server(args))",
        f'  File "{sp}/vllm/entrypoints/openai/api_server.py", line 291, in build_async_engine_client_from_engine_args',
        "    raise RuntimeError(",
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
    ], dt=0.5)
    c.exit(inv, "exited", "1", cpu="1min 37.402s")
    failed_state(c, "no")
    return expect4(c, "cuda_graph_capture_oom", False, ["in capture", "RuntimeError: CUDA error: out of memory"],
                   ["healthy", "kv_cache_oom", "engine_exception", "cuda_oom_runtime", "nccl_failure"],
                   "https://github.com/vllm-project/vllm/issues/22624",
                   "Qwen3 1.7B fp16 with a 0.6B draft model for speculative decoding at gpu_memory_utilization 0.9 on an "
                   "A800 (August 2025; draft-model speculation runs on the V0 engine; version estimated as 0.9.2 from "
                   "the engine args and the untagged lines). Verbatim: model_runner.py:1982 `capture` / `gc.collect()`, "
                   "torch graphs.py:186/84 capture_end, `RuntimeError: CUDA error: out of memory` and its hint lines, the "
                   "`[rank0]:[W811 ...] ProcessGroupNCCL.cpp:1496 ... destroy_process_group() was not called` warning "
                   "(time ours) and the CLI frames bin/vllm:8 and cli/main.py:53. Ours: the MQLLMEngine and "
                   "capture_model frames, serve.py/api_server frames and the final RuntimeError, V0 start-up templates up "
                   "to `Capturing cudagraphs for decoding`, systemd. The NCCL line is an exit-time warning, not a "
                   "collective failure. Restart=no.")


@case4
def cap4_sgl_0523_dsv41_decode_graph_oom_loop() -> Case:
    c = Case("cap4_sgl_0523_dsv41_decode_graph_oom_loop", "sglang", "0.5.23", day=10, hour=17, tp=2,
             model="/models/DeepSeek-V4.1")
    sw = "/sgl-workspace/sglang/python/sglang/srt"
    r = "DP0 TP0"
    for k in range(3):
        inv = c.start(dt=0.3 if k == 0 else 0.1)
        s = c.slog
        c.app(inv, None, dt=4.0)
        c.app(inv, s("Init torch distributed begin.", r), "sched", dt=2.0)
        c.app(inv, s("Load weight begin. avail mem=139.28 GB", r), "sched", dt=2.2)
        c.app(inv, "\rLoading safetensors checkpoint shards: 100% Completed | 64/64 [02:41<00:00,  2.52s/it]\r",
              "sched", dt=161.0)
        c.app(inv, s("Load weight end. type=DeepseekV4ForCausalLM, dtype=torch.bfloat16, avail mem=58.12 GB, "
                     "mem usage=81.16 GB.", r), "sched")
        c.app(inv, s("KV Cache is allocated. #tokens: 1104768, KV size: 41.37 GB", r), "sched", dt=1.0)
        c.app(inv, s("Memory pool end. avail mem=15.93 GB", r), "sched")
        c.app(inv, s("Capture cuda graph begin. This can take up to several minutes. avail mem=15.51 GB", r), "sched")
        c.app(inv, s("Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, "
                     "128, 136, 144, 152, 160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256]", r), "sched")
        c.app(inv, "\rCapturing batches (bs=256 avail_mem=15.40 GB):   0%|          | 0/36 [00:00<?, ?it/s]"
                   "\rCapturing batches (bs=248 avail_mem=2.07 GB):   3%|▎         | 1/36 [00:06<03:31,  6.04s/it]\r",
              "sched", dt=6.5)
        c.app(inv, s("Scheduler hit an exception: Traceback (most recent call last):", r), "sched", dt=0.5)
        c.many(inv, [
            f'  File "{sw}/managers/scheduler.py", line 3130, in run_scheduler_process',
            "    scheduler = Scheduler(",
            f'  File "{sw}/managers/scheduler.py", line 564, in init_model_worker',
            "    self.init_tp_model_worker()",
            f'  File "{sw}/managers/tp_worker.py", line 330, in _init_model_runner',
            "    self._model_runner = ModelRunner(",
            f'  File "{sw}/model_executor/model_runner.py", line 2013, in init_device_graphs',
            "    self.graph_runner = graph_runners[self.device](self)",
            f'  File "{sw}/model_executor/decode_cuda_graph_runner.py", line 412, in __init__',
            "    raise Exception(",
            "Exception: Capture cuda graph failed: CUDA out of memory.",
        ], "sched")
        sglang_sigquit(c, inv, serving=False)
        c.exit(inv, "killed", "9", restart=True, cpu="5min 48.771s")
    failed_state(c, "always", result="signal", active="activating", sub="auto-restart")
    return expect4(c, "cuda_graph_capture_oom", True, ["Capture cuda graph failed: CUDA out of memory"],
                   ["healthy", "kv_cache_oom", "engine_exception", "cuda_oom_runtime"],
                   "https://github.com/sgl-project/sglang/pull/38861",
                   "DeepSeek-V4.1 low-latency recipe on H200 with the `lmsysorg/sglang:dev-dsv41` image (September 2026; "
                   "version estimated as 0.5.23): the server never becomes ready, `Exception: Capture cuda graph failed: "
                   "CUDA out of memory.` is verbatim (the PR quotes it without the torch detail or the possible-"
                   "solutions block, so we leave them out), raised while capturing the decode graphs "
                   "(decode_cuda_graph_runner, derived --cuda-graph-max-bs-decode too large). Ours: the frames, "
                   "the DP/TP prefixes, weight/KV/capture template lines and numbers, systemd. Restart=always: three "
                   "identical failing starts, still restarting at the end.")


@case4
def rt4_sgl_045_llama4_400k_prefill_oom_restart() -> Case:
    c = Case("rt4_sgl_045_llama4_400k_prefill_oom_restart", "sglang", "0.4.5", day=11, hour=17, tp=8,
             model="meta-llama/Llama-4-Scout-17B-16E-Instruct")
    sw = "/sgl-workspace/sglang/python/sglang/srt"
    s = c.slog
    boot = dict(avail=78.43, weights=27.36, arch="Llama4ForConditionalGeneration", kv_tokens=3704384, kv_gb=17.66,
                graph_gb=1.48, ctx=1000000, max_req=4096)
    inv = c.start()
    sgl_boot(c, inv, **boot)
    for k in range(3):
        c.app(inv, s(f"Decode batch. #running-req: {3 + k}, #token: {41220 + 5102 * k}, token usage: 0.01, cuda graph: "
                     f"True, gen throughput (token/s): {221.64 + 9.3 * k:.2f}, #queue-req: 0"), "sched", dt=7.0)
        c.app(inv, s(f'INFO:     10.0.5.{31 + k}:4{8121 + 13 * k} - "POST /v1/chat/completions HTTP/1.1" 200 OK', None),
              dt=0.5)
    c.app(inv, s("Prefill batch. #new-seq: 1, #new-token: 8192, #cached-token: 0, token usage: 0.02, #running-req: 2, "
                 "#queue-req: 0"), "sched", dt=3.0)
    c.app(inv, s("Received sigquit from a child process. It usually means the child failed.", None), dt=4.0)
    c.app(inv, s("Scheduler hit an exception: Traceback (most recent call last):", "TP5"), "sched", dt=0.0)
    c.many(inv, [
        f'  File "{sw}/managers/scheduler.py", line 2045, in run_scheduler_process',
        "    scheduler.event_loop_normal()",
        '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/_contextlib.py", line 116, in decorate_context',
        "    return func(*args, **kwargs)",
        f'  File "{sw}/managers/scheduler.py", line 608, in event_loop_normal',
        "    result = self.run_batch(batch)",
        f'  File "{sw}/managers/scheduler.py", line 1395, in run_batch',
        "    logits_output, next_token_ids = self.tp_worker.forward_batch_generation(",
        f'  File "{sw}/managers/tp_worker.py", line 175, in forward_batch_generation',
        "    logits_output = self.model_runner.forward(forward_batch)",
        f'  File "{sw}/model_executor/model_runner.py", line 1001, in forward',
        "    return self.forward_extend(",
        f'  File "{sw}/model_executor/model_runner.py", line 962, in forward_extend',
        "    return self.model.forward(",
        f'  File "{sw}/models/mllama4.py", line 83, in forward',
        "    hs = general_mm_embed_routine(",
        f'  File "{sw}/models/llama4.py", line 351, in forward',
        "    hidden_states, residual = layer(",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.10 GiB. GPU 5 has a total capacity of 79.10 "
        "GiB of which 4.42 GiB is free. Including non-PyTorch memory, this process has 74.66 GiB memory in use. Of "
        "the allocated memory 69.81 GiB is allocated by PyTorch, with 1.44 GiB allocated in private pools (e.g., CUDA "
        "Graphs), and 2.07 GiB is reserved by PyTorch but unallocated. " + TORCH_TAIL_OLD,
    ], "sched")
    c.exit(inv, "killed", "9", restart=True, cpu="21min 40.002s")
    inv2 = c.start(dt=0.1)
    sgl_boot(c, inv2, **boot)
    for k in range(3):
        c.app(inv2, s(f"Decode batch. #running-req: {1 + k}, #token: {9120 + 3311 * k}, token usage: 0.00, cuda graph: "
                      f"True, gen throughput (token/s): {118.02 + 40.5 * k:.2f}, #queue-req: 0"), "sched", dt=7.0)
        c.app(inv2, s(f'INFO:     10.0.5.{40 + k}:4{9122 + 17 * k} - "POST /v1/chat/completions HTTP/1.1" 200 OK', None),
              dt=0.5)
    c.extra["systemctl_show"] = {"MainPID": str(inv2.main), "ActiveState": "active", "SubState": "running",
                                 "Result": "success", "NRestarts": "1", "Restart": "always"}
    return expect4(c, "cuda_oom_runtime", False, ["Scheduler hit an exception", "CUDA out of memory. Tried to allocate "
                                                  "6.10 GiB"],
                   ["healthy", "kv_cache_oom", "cuda_graph_capture_oom", "gpu_memory_held_by_stale_process",
                    "engine_exception"],
                   "https://github.com/sgl-project/sglang/issues/5212",
                   "Llama-4-Scout on 8xH100 (`--tp-size 8 --attention-backend=fa3 --mem-fraction-static=0.8 "
                   "--context-length 1000000`, SGLang of April 2025, version estimated as 0.4.5) crashes on a 400k-token "
                   "request. Verbatim: `Received sigquit from a child process. It usually means the child failed.` "
                   "printed before the TP5 scheduler's `Scheduler hit an exception` and its frames from "
                   "run_scheduler_process/event_loop_normal down to mllama4.py:83. Our copy of the report is cut "
                   "there: the llama4 frame and the torch OOM text (numbers ours) follow torch's template, the title "
                   "says OOM. Earlier Decode/Prefill lines, start-up templates and systemd lines are ours. The server "
                   "was ready and serving; Restart=always brings it back once and it serves again: still a runtime "
                   "OOM, not healthy.")


@case4
def rt4_vllm_022_v1_long_prefill_oom_exit0_restart() -> Case:
    c = Case("rt4_vllm_022_v1_long_prefill_oom_exit0_restart", "vllm", "0.22.0", day=12, hour=17, tp=2,
             model="/models/ds4-vision-jovian-judgement-r9")
    vp = "/opt/infernal-invocation/vllm/vllm"
    dp = "/usr/local/lib/python3.12/dist-packages"
    boot = dict(weights=71.2204, kv_gib=14.37, kv_tokens="412,288", conc="3.15", max_len="131,072", compile_s=38.6)
    inv = c.start()
    v_boot(c, inv, **boot)
    vllm_serve(c, inv, 4, gen=88.0)
    oom = ("CUDA out of memory. Tried to allocate 3.12 GiB. GPU 0 has a total capacity of 94.97 GiB of which 1.86 GiB "
           "is free. Including non-PyTorch memory, this process has 93.09 GiB memory in use. Of the allocated memory "
           "89.40 GiB is allocated by PyTorch, with 412.00 MiB allocated in private pools (e.g., CUDA Graphs), and "
           "2.31 GiB is reserved by PyTorch but unallocated. " + TORCH_TAIL_NEW)
    c.app(inv, 'INFO:     172.20.0.1:51190 - "POST /v1/chat/completions HTTP/1.1" 200 OK', dt=2.0)
    vlines(c, inv, "multiproc_executor.py:1052", [
        "WorkerProc hit an exception.",
        "Traceback (most recent call last):",
        f'  File "{vp}/v1/executor/multiproc_executor.py", line 1047, in _execute_worker_rpc',
        "    output = func(*args, **kwargs)",
        "             ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{vp}/v1/worker/worker_base.py", line 369, in execute_model',
        "    return self.worker.execute_model(scheduler_output)",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/torch/utils/_contextlib.py", line 124, in decorate_context',
        "    return func(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{vp}/v1/worker/gpu_worker.py", line 1213, in execute_model',
        "    output = self.model_runner.execute_model(",
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{vp}/v1/worker/gpu/model_runner.py", line 1911, in execute_model',
        "    model_output = self.model(**model_inputs)",
        "                   ^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/torch/nn/modules/module.py", line 1778, in _wrapped_call_impl',
        "    return self._call_impl(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "torch.OutOfMemoryError: " + oom,
    ], "worker")
    vllm_engine_dead(c, inv, [
        f'  File "{vp}/v1/executor/multiproc_executor.py", line 409, in collective_rpc',
        "    raise RuntimeError(",
        f"RuntimeError: Worker failed with error '{oom[:84]}', please check the stack trace above for the root cause",
    ], where="core.py:1184", restart=True)
    inv2 = c.start(dt=0.1)
    v_boot(c, inv2, **boot)
    vllm_serve(c, inv2, 2, gen=91.0)
    c.extra["systemctl_show"] = {"MainPID": str(inv2.main), "ActiveState": "active", "SubState": "running",
                                 "Result": "success", "NRestarts": "1", "Restart": "always"}
    return expect4(c, "cuda_oom_runtime", False, ["EngineCore encountered a fatal error",
                                                  "CUDA out of memory. Tried to allocate 3.12 GiB"],
                   ["healthy", "kv_cache_oom", "cuda_graph_capture_oom", "unknown", "engine_exception",
                    "gpu_memory_held_by_stale_process"],
                   "https://github.com/local-inference-lab/rtx6kpro/issues/103",
                   "A production DeepSeek-V4 vision deployment on RTX PRO 6000 GPUs with a vLLM fork (V1, model runner "
                   "V2 paths `v1/worker/gpu/model_runner.py`; 2026, version estimated as 0.22.0) hits a delayed CUDA OOM "
                   "when a long-context prefill exceeds the profiled peak by ~3 GiB (the report's title). Verbatim: "
                   "`WorkerProc hit an exception.` and the worker frames _execute_worker_rpc (multiproc_executor.py:1047) "
                   "-> worker_base.py:369 -> gpu_worker.py:1213 -> gpu/model_runner.py:1911 -> module.py:1778. Ours: the "
                   "torch OOM text (3.12 GiB; our copy of the report is cut before it), EngineCore's `EngineCore "
                   "encountered a fatal error` and collective_rpc lines, AsyncLLM/500/uvicorn shutdown lines, start-up "
                   "and throughput templates, systemd. The API server exits 0 (`Deactivated successfully`), "
                   "Restart=always starts it again and it serves: a runtime OOM, not healthy.")
