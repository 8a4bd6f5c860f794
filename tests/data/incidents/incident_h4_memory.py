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
from incident_scenes import NOT_HEALTHY, ownership, sglang_sched_exception, sglang_sigquit, vllm_boot

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
