"""holdout3 cases, theme `memory` (see incident_h3_base.py): scored only, never tuned on.

KV sizing at start-up, CUDA-graph capture OOM, runtime CUDA OOM and one healthy KV-retraction decoy. Every case is
rebuilt from one public report (url in expected.json); the error lines are the report's, the start-up/serving
templates and systemd's lines come from incident_kit/incident_scenes. Labels follow docs/DIAGNOSIS.md "Labels" only.
"""

from __future__ import annotations

from incident_h3_base import Case, case3, expect3
from incident_kit import Inv
from incident_scenes import (
    NOT_HEALTHY,
    ownership,
    sglang_sched_exception,
    sglang_sigquit,
    sver,
    vllm_engine_dead,
    vllm_serve,
)

CUDA_ERR_TAIL = [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]


def sgl_boot(c: Case, inv: Inv, until: str = "ready", *, avail: float, weights: float, arch: str,
             dtype: str = "torch.bfloat16", kv_tokens: int = 201522, kv_gb: float = 6.15, graph_gb: float = 0.98,
             ctx: int = 32768, max_req: int = 2049) -> None:
    """SGLang start-up (incident_scenes.sglang_boot's lines) with this case's memory figures."""
    s = c.slog
    c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...) is ~10 KB: null in journalctl -o json
    c.app(inv, s("Init torch distributed begin."), "sched", dt=2.0)
    c.app(inv, s(f"Load weight begin. avail mem={avail:.2f} GB"), "sched", dt=2.2)
    c.app(inv, "\rLoading safetensors checkpoint shards:  47% Completed | 8/17 [00:15<00:17,  1.98s/it]"
               "\rLoading safetensors checkpoint shards: 100% Completed | 17/17 [00:33<00:00,  1.95s/it]\r",
          "sched", dt=34.0)
    left = avail - weights
    c.app(inv, s(f"Load weight end. type={arch}, dtype={dtype}, avail mem={left:.2f} GB, mem usage={weights:.2f} GB."),
          "sched")
    if until == "weights":
        return
    pool = left - 2 * kv_gb
    c.app(inv, s(f"KV Cache is allocated. #tokens: {kv_tokens}, K size: {kv_gb:.2f} GB, V size: {kv_gb:.2f} GB"), "sched",
          dt=1.0)
    c.app(inv, s(f"Memory pool end. avail mem={pool:.2f} GB"), "sched")
    c.app(inv, s("Capture cuda graph begin. This can take up to several minutes." +
                 (f" avail mem={pool - 0.1:.2f} GB" if sver(c) >= (0, 4, 4) else "")), "sched")
    c.app(inv, f"\rCapturing batches (avail_mem={pool - 0.2:.2f} GB):   4%|▍         | 1/23 [00:00<00:10,  2.11it/s]"
               f"\rCapturing batches (avail_mem={pool - graph_gb:.2f} GB): 100%|██████████| 23/23 [00:09<00:00,  "
               "2.47it/s]\r", "sched", dt=9.5)
    end = pool - graph_gb
    c.app(inv, s(f"Capture cuda graph end. Time elapsed: 9.61 s. mem usage={graph_gb:.2f} GB. avail mem={end:.2f} GB."),
          "sched")
    c.app(inv, s(f"max_total_num_tokens={kv_tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                 f"max_running_requests={max_req}, context_len={ctx}, available_gpu_mem={end:.2f} GB"), "sched")
    c.app(inv, f"INFO:     Started server process [{inv.main}]", dt=1.0)
    c.app(inv, "INFO:     Waiting for application startup.")
    c.app(inv, "INFO:     Application startup complete.")
    c.app(inv, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    c.app(inv, s('INFO:     127.0.0.1:40110 - "GET /get_model_info HTTP/1.1" 200 OK', None), dt=1.0)
    c.app(inv, s("Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, "
                 "#queue-req: 0,"), "sched")
    c.app(inv, s('INFO:     127.0.0.1:40116 - "POST /generate HTTP/1.1" 200 OK', None), dt=0.8)
    c.app(inv, s("The server is fired up and ready to roll!", None), dt=0.1)


def v_boot(c: Case, inv: Inv, until: str = "ready", *, weights: float, kv_gib: float, kv_tokens: str, conc: str,
           max_len: str = "32,768", compile_s: float = 0.0) -> None:
    """vLLM V1 start-up (incident_scenes.vllm_boot's lines) with this case's memory figures."""
    v, p = c.vlog, ("worker" if c.tp > 1 else "engine")
    c.app(inv, v("INFO", "api_server.py:1839", f"vLLM API server version {c.version}"), dt=4.0)
    c.app(inv, v("INFO", "utils.py:233", f"non-default args: {{'model_tag': '{c.model}', 'model': '{c.model}', "
                 f"'tensor_parallel_size': {c.tp}}}"))
    c.app(inv, v("INFO", "core.py:77", f"Initializing a V1 LLM engine (v{c.version}) with config: model='{c.model}', "
                 f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
                 f"revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={max_len.replace(',', '')}, "
                 f"tensor_parallel_size={c.tp}, pipeline_parallel_size=1"), "engine", dt=3.0)
    c.app(inv, v("INFO", "gpu_model_runner.py:2602", f"Starting to load model {c.model}..."), p, dt=2.0)
    c.app(inv, "\rLoading safetensors checkpoint shards:  41% Completed | 7/17 [00:06<00:09,  1.09it/s]"
               "\rLoading safetensors checkpoint shards: 100% Completed | 17/17 [00:15<00:00,  1.12it/s]\r",
          p, dt=15.0)
    c.app(inv, v("INFO", "default_loader.py:267", "Loading weights took 15.21 seconds"), p)
    c.app(inv, v("INFO", "gpu_model_runner.py:2653", f"Model loading took {weights:.4f} GiB and 15.402271 seconds"), p)
    if compile_s:
        c.app(inv, v("INFO", "monitor.py:34", f"torch.compile takes {compile_s:.2f} s in total"), p, dt=compile_s)
    if until == "weights":
        return
    c.app(inv, v("INFO", "gpu_worker.py:298", f"Available KV cache memory: {kv_gib:.2f} GiB"), p, dt=9.0)
    c.app(inv, v("INFO", "kv_cache_utils.py:1087", f"GPU KV cache size: {kv_tokens} tokens"), "engine")
    c.app(inv, v("INFO", "kv_cache_utils.py:1091", f"Maximum concurrency for {max_len} tokens per request: {conc}x"),
          "engine")
    c.app(inv, "\rCapturing CUDA graph shapes:   9%|▉         | 6/67 [00:00<00:07,  7.71it/s]", p, dt=1.0)
    if until == "capture":
        return
    c.app(inv, v("INFO", "gpu_model_runner.py:3480", "Graph capturing finished in 9 secs, took 0.61 GiB"), p, dt=9.0)
    c.app(inv, v("INFO", "core.py:210", "init engine (profile, create kv cache, warmup model) took 41.33 seconds"),
          "engine")
    c.app(inv, v("INFO", "api_server.py:1912", "Starting vLLM API server 0 on http://0.0.0.0:8000"), dt=0.5)
    c.app(inv, f"INFO:     Started server process [{inv.main}]")
    c.app(inv, "INFO:     Waiting for application startup.")
    c.app(inv, "INFO:     Application startup complete.")


def sgl_decode(c: Case, inv: Inv, rows: list[tuple[int, int, float, float, int]], *, ip: int = 17) -> None:
    """0.4.x `Decode batch.` lines (running, #token, usage, gen throughput, queue) with a client line after each."""
    for i, (run, tok, use, gen, queue) in enumerate(rows):
        c.app(inv, c.slog(f"Decode batch. #running-req: {run}, #token: {tok}, token usage: {use:.2f}, cuda graph: True, "
                          f"gen throughput (token/s): {gen:.2f}, #queue-req: {queue}"), "sched", dt=5.0)
        c.app(inv, c.slog(f'INFO:     10.0.4.{ip + i % 5}:5{1200 + 17 * i} - "POST /v1/chat/completions HTTP/1.1" '
                          "200 OK", None), dt=0.4)


def vlines(c: Case, inv: Inv, where: str, lines: list[str], role: str, *, level: str = "ERROR") -> None:
    for line in lines:
        c.app(inv, c.vlog(level, where, line), role, dt=0.0)


def v_engine_failed(c: Case, inv: Inv, where: str, head: str, lines: list[str], api_tail: list[str]) -> None:
    """V1 start-up failure in EngineCore (its traceback) and the API server's wrapper traceback."""
    c.app(inv, c.vlog("ERROR", where, head), "engine", dt=0.3)
    if not head.endswith("Traceback (most recent call last):"):
        c.app(inv, c.vlog("ERROR", where, "Traceback (most recent call last):"), "engine")
    vlines(c, inv, where, lines, "engine")
    c.app(inv, "Traceback (most recent call last):", dt=0.3)
    c.many(inv, api_tail)


API_TAIL_08 = [
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/engine/core_client.py", line 421, in '
    "_wait_for_engine_startup",
    '    raise RuntimeError("Engine core initialization failed. "',
    "RuntimeError: Engine core initialization failed. See root cause above.",
]
API_TAIL_010 = [
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/engine/utils.py", line 759, in wait_for_engine_startup',
    '    raise RuntimeError("Engine core initialization failed. "',
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
]


# ============================== kv_cache_oom ===================================================


@case3
def kv3_sgl_044_gemma3_awq_not_enough_loop() -> Case:
    c = Case("kv3_sgl_044_gemma3_awq_not_enough_loop", "sglang", "0.4.4.post2", day=1, hour=4,
             model="/llm/model/google/gemma-3-27b-it-int4-awq/")
    sw = "/sgl-workspace/sglang/python/sglang/srt"
    lines = [
        f'  File "{sw}/managers/scheduler.py", line 1999, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
        f'  File "{sw}/managers/scheduler.py", line 249, in __init__',
        "    self.tp_worker = TpWorkerClass(",
        f'  File "{sw}/managers/tp_worker.py", line 74, in __init__',
        "    self.model_runner = ModelRunner(",
        f'  File "{sw}/model_executor/model_runner.py", line 169, in __init__',
        "    self.initialize(min_per_gpu_memory)",
        f'  File "{sw}/model_executor/model_runner.py", line 209, in initialize',
        "    self.init_memory_pool(",
        f'  File "{sw}/model_executor/model_runner.py", line 800, in init_memory_pool',
        "    raise RuntimeError(",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ]
    for k in range(3):
        inv = c.start(dt=0.3 if k == 0 else 0.1)
        sgl_boot(c, inv, "weights", avail=23.07, weights=17.23, arch="Gemma3ForConditionalGeneration",
                 dtype="torch.float16")
        sglang_sched_exception(c, inv, lines)
        sglang_sigquit(c, inv, serving=False)
        c.exit(inv, "killed", "9", restart=True, cpu="11min 2.517s")
    c.extra["systemctl_show"] = {"MainPID": "0", "ActiveState": "activating", "SubState": "auto-restart",
                                 "NRestarts": str(c.restarts), "Result": "signal", "Restart": "always"}
    return expect3(c, "kv_cache_oom", True, ["Not enough memory. Please try to increase --mem-fraction-static"],
                   ["healthy", "cuda_graph_capture_oom", "cuda_oom_runtime", "engine_exception",
                    "gpu_memory_held_by_stale_process"],
                   "https://github.com/sgl-project/sglang/issues/4895",
                   "Gemma-3-27B int4 AWQ on a 24 GB GPU, --context-length 4096, March 2025 docker image (0.4.4.postN, "
                   "version estimated). Scheduler head and frames down to tp_worker.py:74 verbatim; the report cuts the "
                   "traceback there, the model_runner frames (line numbers ours) and the RuntimeError follow SGLang "
                   "0.4.4's init_memory_pool text. Restart=always: three identical failing starts (ours), systemd "
                   "still restarting at the end. Start-up template lines are ours.")


@case3
def kv3_sgl_056_not_enough_current_value() -> Case:
    c = Case("kv3_sgl_056_not_enough_current_value", "sglang", "0.5.6.post1", day=2, hour=4, model="/models/Qwen3-8B")
    inv = c.start()
    sgl_boot(c, inv, "weights", avail=60.95, weights=15.33, arch="Qwen3ForCausalLM")
    sglang_sched_exception(c, inv, [
        '  File "/usr/local/lib/python3.11/site-packages/sglang/srt/model_executor/model_runner.py", line 1628, in '
        "init_memory_pool",
        "    raise RuntimeError(",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
        "self.server_args.mem_fraction_static=0.2",
    ])
    sglang_sigquit(c, inv, serving=False)
    c.exit(inv, "killed", "9", cpu="58.204s")
    return expect3(c, "kv_cache_oom", False, ["Current value: self.server_args.mem_fraction_static=0.2"],
                   ["healthy", "cuda_graph_capture_oom", "cuda_oom_runtime", "bad_argument", "engine_exception"],
                   "https://github.com/gpustack/gpustack/issues/3831",
                   "Qwen3-8B on SGLang 0.5.6.post1 started with a mem_fraction_static of 0.2 by its launcher: the "
                   "RuntimeError line is verbatim from the report (its host was an Ascend NPU, the text is SGLang's "
                   "own); the model_runner frame (l.1628, FORMATS a.4) and everything else are ours. The option value "
                   "passed validation, the KV pool sizing failed: a memory budget, not an argument error. Restart=no.")


@case3
def kv3_vllm_080_v1_no_cache_blocks_tp2() -> Case:
    c = Case("kv3_vllm_080_v1_no_cache_blocks_tp2", "vllm", "0.8.0", day=3, hour=4, tp=2,
             model="/models/Qwen2.5-VL-72B-Instruct-AWQ")
    core = "/root/myvllm/vllm_main_oom/vllm/v1/engine/core.py"
    inv = c.start()
    v_boot(c, inv, "weights", weights=19.6842, kv_gib=0.0, kv_tokens="", conc="")
    c.app(inv, c.vlog("INFO", "monitor.py:33", "torch.compile takes 103.55 s in total"), "worker1", dt=103.0)
    c.app(inv, c.vlog("INFO", "monitor.py:33", "torch.compile takes 103.14 s in total"), "worker")
    v_engine_failed(c, inv, "core.py:337", "EngineCore hit an exception: Traceback (most recent call last):", [
        f'  File "{core}", line 329, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
        "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{core}", line 284, in __init__',
        "    super().__init__(vllm_config, executor_class, log_stats)",
        f'  File "{core}", line 62, in __init__',
        "    num_gpu_blocks, num_cpu_blocks = self._initialize_kv_caches(",
        "                                     ^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{core}", line 124, in _initialize_kv_caches',
        "    kv_cache_configs = [",
        '  File "/root/myvllm/vllm_main_oom/vllm/v1/core/kv_cache_utils.py", line 529, in check_enough_kv_cache_memory',
        '    raise ValueError("No available memory for the cache blocks. "',
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine.",
    ], API_TAIL_08)
    c.exit(inv, "exited", "1", cpu="4min 1.377s")
    return expect3(c, "kv_cache_oom", False, ["No available memory for the cache blocks"],
                   ["healthy", "cuda_graph_capture_oom", "engine_exception", "unknown"],
                   "https://github.com/vllm-project/vllm/issues/14992",
                   "V1 on the main branch after commit 46f98893 (March 2025, released as 0.8.0; version estimated), "
                   "TP=2: the torch.compile lines of both VllmWorker ranks and the EngineCore frames down to "
                   "_initialize_kv_caches (core.py:337) are verbatim; the report's traceback is cut there, the "
                   "kv_cache_utils frame is ours and the ValueError is the issue title. Model name, API wrapper and "
                   "start-up template ours. Restart=no.")


@case3
def kv3_vllm_v0_064_max_seq_len_29k() -> Case:
    c = Case("kv3_vllm_v0_064_max_seq_len_29k", "vllm", "0.6.4.post1", v1=False, day=4, hour=4,
             model="/models/Meta-Llama-3.1-8B-Instruct")
    inv = c.start()
    v = c.vlog
    c.app(inv, v("INFO", "api_server.py:585", "vLLM API server version 0.6.4.post1"), dt=3.0)
    c.app(inv, v("INFO", "llm_engine.py:249", f"Initializing an LLM engine (v0.6.4.post1) with config: model='{c.model}', "
                 f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
                 "revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=29000, "
                 "tensor_parallel_size=1, pipeline_parallel_size=1"), "engine", dt=3.0)
    c.app(inv, v("INFO", "model_runner.py:1072", f"Starting to load model {c.model}..."), "engine", dt=2.0)
    c.app(inv, v("INFO", "model_runner.py:1077", "Loading model weights took 14.9888 GB"), "engine", dt=9.0)
    c.app(inv, v("INFO", "worker.py:232", "Memory profiling results: total_gpu_memory=23.58GiB "
                 "initial_memory_usage=15.34GiB peak_torch_memory=17.98GiB memory_usage_post_profile=15.35GiB "
                 "non_torch_memory=0.35GiB kv_cache_size=2.89GiB gpu_memory_utilization=0.90"), "engine", dt=6.0)
    c.app(inv, v("INFO", "gpu_executor.py:76", "# GPU blocks: 1478, # CPU blocks: 2048"), "engine")
    c.app(inv, v("INFO", "gpu_executor.py:80", "Maximum concurrency for 29000 tokens per request: 0.82x"), "engine")
    mq = "/opt/vllm/lib/python3.12/site-packages/vllm"
    c.many(inv, [
        "Process SpawnProcess-1:",
        "Traceback (most recent call last):",
        f'  File "{mq}/engine/multiprocessing/engine.py", line 366, in run_mp_engine',
        "    engine = MQLLMEngine.from_engine_args(engine_args=engine_args,",
        f'  File "{mq}/worker/worker.py", line 507, in raise_if_cache_size_invalid',
        "    raise ValueError(",
        "ValueError: The model's max seq len (29000) is larger than the maximum number of tokens that can be stored "
        "in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
        "the engine.",
    ], "engine", dt=0.0)
    c.many(inv, [
        "Traceback (most recent call last):",
        f'  File "{mq}/entrypoints/openai/api_server.py", line 223, in build_async_engine_client_from_engine_args',
        "    raise RuntimeError(",
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
    ], dt=0.0)
    c.exit(inv, "exited", "1", cpu="41.906s")
    return expect3(c, "kv_cache_oom", False, ["larger than the maximum number of tokens that can be stored in KV cache"],
                   ["healthy", "engine_exception", "cuda_oom_runtime", "bad_argument"],
                   "https://github.com/vllm-project/vllm/issues/10517",
                   "Comment of 2024-12-02: Llama-3.1-8B on an RTX 3090 with --max-model-len 29000 (20k and 35k start). "
                   "The memory-profiling, block and concurrency lines and the max-seq-len error are verbatim; V0 "
                   "MQLLMEngine (version estimated from the log format, 0.6.4.post1); the engine process's frames, the "
                   "`ValueError:` prefix and the API wrapper lines are ours. Restart=no.")


# ============================== cuda_graph_capture_oom =========================================


@case3
def cap3_vllm_0102_qwen235b_capture_end_oom() -> Case:
    c = Case("cap3_vllm_0102_qwen235b_capture_end_oom", "vllm", "0.10.2", day=5, hour=4, tp=8,
             model="/models/Qwen3-235B-A22B")
    tp = ("/mnt/dolphinfs/ssd_pool/docker/user/hadoop-aipnlp/INS/ruanjunhao04/miniforge3/envs/sglang/lib/python3.12/"
          "site-packages/torch/cuda/graphs.py")
    inv = c.start()
    v_boot(c, inv, "capture", weights=54.9187, kv_gib=10.77, kv_tokens="233,792", conc="7.13", compile_s=61.3)
    vw = "/mnt/dolphinfs/ssd_pool/docker/user/hadoop-aipnlp/INS/ruanjunhao04/vllm/vllm/v1/worker"
    worker = [
        "WorkerProc hit an exception.",
        "Traceback (most recent call last):",
        f'  File "{vw}/gpu_worker.py", line 344, in compile_or_warm_up_model',
        "    cuda_graph_memory_bytes = self.model_runner.capture_model()",
        "                              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{vw}/gpu_model_runner.py", line 3086, in capture_model',
        "    self._capture_cudagraphs(",
        f'  File "{vw}/gpu_model_runner.py", line 3155, in _capture_cudagraphs',
        "    self._dummy_run(num_tokens,",
        f'  File "{tp}", line 222, in __exit__',
        "    self.cuda_graph.capture_end()",
        f'  File "{tp}", line 104, in capture_end',
        "    super().capture_end()",
        "torch.AcceleratorError: CUDA error: out of memory",
    ] + CUDA_ERR_TAIL
    vlines(c, inv, "multiproc_executor.py:674", worker, "worker1")
    vlines(c, inv, "multiproc_executor.py:674", worker, "worker")
    v_engine_failed(c, inv, "core.py:718", "EngineCore failed to start.", [
        "Exception: Call to compile_or_warm_up_model method failed: CUDA error: out of memory",
    ], API_TAIL_010)
    c.exit(inv, "exited", "1", cpu="12min 40.118s")
    return expect3(c, "cuda_graph_capture_oom", False, ["torch.AcceleratorError: CUDA error: out of memory"],
                   ["healthy", "kv_cache_oom", "engine_exception", "cuda_oom_runtime"],
                   "https://github.com/vllm-project/vllm/issues/24814",
                   "Qwen3-235B on 8xA100 (September 2025, `(Worker_TPn pid=N)` tags: 0.10.2, source install). Worker "
                   "frames compile_or_warm_up_model -> capture_model -> _capture_cudagraphs -> _dummy_run (frames "
                   "between _dummy_run and graphs.py left out) and torch.cuda.graphs capture_end and CUDA's `out of memory` verbatim (multiproc_executor.py:674, the "
                   "report's rank was TP3, ours TP1/TP0), after `Capturing CUDA graph shapes` and before `Graph "
                   "capturing finished`. EngineCore `Call to ... failed` line, API wrapper and template lines ours. "
                   "Restart=no.")


@case3
def cap3_vllm_084_v1_qwen3_32b_capture_loop() -> Case:
    c = Case("cap3_vllm_084_v1_qwen3_32b_capture_loop", "vllm", "0.8.4", day=6, hour=4, tp=2,
             model="/models/Qwen3-32B")
    lp = "/home/ray/anaconda3/lib/python3.10/site-packages"
    worker = [
        "WorkerProc hit an exception.",
        "Traceback (most recent call last):",
        f'  File "{lp}/torch/nn/modules/module.py", line 1750, in _call_impl',
        "    return forward_call(*args, **kwargs)",
        f'  File "{lp}/vllm/compilation/backends.py", line 677, in __call__',
        "    with torch.cuda.graph(cudagraph, pool=self.graph_pool):",
        f'  File "{lp}/torch/cuda/graphs.py", line 186, in __exit__',
        "    self.cuda_graph.capture_end()",
        f'  File "{lp}/torch/cuda/graphs.py", line 84, in capture_end',
        "    super().capture_end()",
        "RuntimeError: CUDA error: out of memory",
    ] + CUDA_ERR_TAIL
    for _k in range(3):
        inv = c.start(dt=0.2)
        v_boot(c, inv, "capture", weights=30.5827, kv_gib=6.35, kv_tokens="52,016", conc="1.27", max_len="40,960",
               compile_s=48.7)
        vlines(c, inv, "multiproc_executor.py:380", worker, "worker")
        vlines(c, inv, "multiproc_executor.py:380", worker[-4:], "worker1")
        v_engine_failed(c, inv, "core.py:387", "EngineCore hit an exception: Traceback (most recent call last):", [
            "Exception: Call to compile_or_warm_up_model method failed: CUDA error: out of memory",
        ], API_TAIL_08)
        c.exit(inv, "exited", "1", restart=True, cpu="3min 12.550s")
    return expect3(c, "cuda_graph_capture_oom", True, ["RuntimeError: CUDA error: out of memory"],
                   ["healthy", "kv_cache_oom", "engine_exception", "cuda_oom_runtime"],
                   "https://github.com/vllm-project/vllm/issues/17462",
                   "Qwen3-32B on 2xL20 with the V1 engine of 0.8.4/0.8.5 (V0 works). The VllmWorker frames "
                   "(module.py:1750, compilation/backends.py:677 `with torch.cuda.graph(...)`, graphs.py:186 "
                   "capture_end; multiproc_executor.py:380 = 0.8.4) are verbatim; our copy of the report is cut after "
                   "capture_end, the rest (graphs.py:84 and CUDA's `out of memory`, as the title says) follows torch "
                   "2.6's text. EngineCore/API lines ours. Restart=always: three identical failing starts.")


@case3
def cap3_vllm_0110_qwen3vl_full_decode_capture() -> Case:
    c = Case("cap3_vllm_0110_qwen3vl_full_decode_capture", "vllm", "0.11.0", day=7, hour=4, tp=8,
             model="/models/Qwen3-VL-235B-A22B-Instruct-FP8")
    inv = c.start()
    v_boot(c, inv, "weights", weights=29.6154, kv_gib=0.0, kv_tokens="", conc="", max_len="100,000", compile_s=88.4)
    v = c.vlog
    c.app(inv, v("INFO", "gpu_worker.py:298", "Available KV cache memory: 35.68 GiB"), "worker", dt=40.0)
    c.app(inv, v("INFO", "kv_cache_utils.py:1087", "GPU KV cache size: 796,000 tokens"), "engine", dt=1.0)
    c.app(inv, v("INFO", "kv_cache_utils.py:1091", "Maximum concurrency for 100,000 tokens per request: 7.96x"),
          "engine")
    c.app(inv, "\rCapturing CUDA graphs (mixed prefill-decode, PIECEWISE):  85%|...| 57/67 [00:58<00:10,  1.08s/it]",
          "worker", dt=58.0)
    c.app(inv, v("INFO", "shm_broadcast.py:466", "No available shared memory broadcast block found in 60 seconds. This "
                 "typically happens when some processes are hanging or doing some time-consuming work (e.g. "
                 "compilation)."), "engine", dt=2.0)
    c.app(inv, "\rCapturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|...| 67/67 [01:08<00:00,  1.02s/it]",
          "worker", dt=8.0)
    c.app(inv, "\rCapturing CUDA graphs (decode, FULL):   0%|...| 0/35 [00:00<?, ?it/s]", "worker", dt=0.5)
    c.app(inv, v("INFO", "custom_all_reduce.py:203", "Registering 13348 cuda graph addresses"), "worker1", dt=8.0)
    c.app(inv, "\rCapturing CUDA graphs (decode, FULL):   9%|...| 3/35 [00:00<00:09,  3.30it/s]", "worker", dt=1.0)
    vlines(c, inv, "multiproc_executor.py:671", [
        "WorkerProc hit an exception.",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/cuda/graphs.py", line 225, in __exit__',
        "    self.cuda_graph.capture_end()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU 1 has a total capacity of 79.25 "
        "GiB of which 583.75 MiB is free.",
    ], "worker1")
    v_engine_failed(c, inv, "core.py:708", "EngineCore failed to start.", [
        "Exception: Call to compile_or_warm_up_model method failed: CUDA out of memory. Tried to allocate 1.02 GiB.",
    ], API_TAIL_010)
    c.exit(inv, "exited", "1", cpu="9min 5.300s")
    return expect3(c, "cuda_graph_capture_oom", False, ["Capturing CUDA graphs (decode, FULL)", "CUDA out of memory"],
                   ["healthy", "kv_cache_oom", "engine_exception", "cuda_oom_runtime"],
                   "https://github.com/QwenLM/Qwen3-VL/issues/1684",
                   "vLLM 0.11.0, Qwen3-VL-235B-FP8 on 8xA100 (TP8/EP8 in the report, our workers are TP0/TP1): the KV "
                   "size, concurrency, shm_broadcast, `Registering ... cuda graph addresses` and both capture "
                   "progress bars (PIECEWISE done, FULL decode at 3/35) are verbatim. Our copy of the report cuts the "
                   "worker's ERROR line right after `[multiproc_`; the OOM text (numbers ours) follows torch's "
                   "template, the title says OOM. The KV cache was sized fine: the failure is in graph capture. "
                   "Restart=no.")


# ============================== cuda_oom_runtime ===============================================


@case3
def rt3_sgl_041_scheduler_oom_http_up() -> Case:
    c = Case("rt3_sgl_041_scheduler_oom_http_up", "sglang", "0.4.1.post7", day=8, hour=4,
             model="/models/DeepSeek-R1-Distill-Qwen-7B")
    sw = "/sgl-workspace/sglang/python/sglang/srt"
    inv = c.start()
    sgl_boot(c, inv, avail=78.60, weights=14.27, arch="Qwen2ForCausalLM", kv_tokens=1095372, kv_gb=30.70,
             graph_gb=0.61, ctx=131072, max_req=4096)
    sgl_decode(c, inv, [(388, 401882, 0.37, 5120.41, 1412), (641, 689105, 0.63, 6011.87, 1159),
                        (873, 951277, 0.87, 6380.02, 927), (1012, 1071530, 0.98, 6102.55, 788)])
    sglang_sched_exception(c, inv, [
        f'  File "{sw}/managers/scheduler.py", line 1785, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        f'  File "{sw}/managers/scheduler.py", line 494, in event_loop_overlap',
        "    result = self.run_batch(batch)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 616.00 MiB. GPU 0 has a total capacity of 79.10 "
        "GiB of which 401.88 MiB is free. Including non-PyTorch memory, this process has 78.69 GiB memory in use. Of "
        "the allocated memory 75.36 GiB is "
        "allocated by PyTorch, and 1.84 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory "
        "is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    ])
    for i in range(4):
        c.app(inv, c.slog(f'INFO:     10.0.4.{30 + i}:6{1200 + 7 * i} - "GET /health HTTP/1.1" 200 OK', None), dt=10.0)
    return expect3(c, "cuda_oom_runtime", False, ["CUDA out of memory. Tried to allocate 616.00 MiB"],
                   ["healthy", "kv_cache_oom", "cuda_graph_capture_oom", "gpu_memory_held_by_stale_process"],
                   "https://github.com/sgl-project/sglang/issues/4730",
                   "lmsysorg/sglang:v0.4.1.post7 serving DeepSeek-R1-Distill-Qwen-7B under bench_serving with 1800 "
                   "concurrent requests: the scheduler dies of torch's OOM soon after the load starts, but the process "
                   "does not exit (the report's point: Kubernetes never restarts it). OOM line verbatim up to `GPU 0 "
                   "has a total capaci`, the rest torch's template with our numbers; scheduler frames ours. HTTP keeps "
                   "answering /health, no Decode lines after the OOM.")


@case3
def rt3_vllm_v0_072_long_prompt_oom_exit0_dead() -> Case:
    c = Case("rt3_vllm_v0_072_long_prompt_oom_exit0_dead", "vllm", "0.7.2", v1=False, day=9, hour=4, tp=8,
             model="cognitivecomputations/DeepSeek-R1-AWQ")
    c.pid_base = 2377657 - 131 - 1117  # the MQLLMEngine process is pid 2377657, the pid torch names in the OOM text
    inv = c.start()
    v = c.vlog
    c.app(inv, v("INFO", "api_server.py:840", "vLLM API server version 0.7.2"), dt=3.0)
    c.app(inv, v("INFO", "api_server.py:203", "Started engine process with PID 2377657"), dt=0.2)
    c.app(inv, v("INFO", "llm_engine.py:234", f"Initializing a V0 LLM engine (v0.7.2) with config: model='{c.model}', "
                 f"speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, "
                 "revision=None, trust_remote_code=True, dtype=torch.float16, max_seq_len=16384, "
                 "tensor_parallel_size=8, pipeline_parallel_size=1, quantization=moe_wna16, kv_cache_dtype=fp8_e5m2"),
          "engine", dt=4.0)
    c.app(inv, v("INFO", "model_runner.py:1115", "Loading model weights took 45.4713 GB"), "engine", dt=310.0)
    c.app(inv, v("INFO", "worker.py:266", "Memory profiling takes 21.37 seconds"), "engine", dt=22.0)
    c.app(inv, v("INFO", "executor_base.py:110", "# CUDA blocks: 10874, # CPU blocks: 3640"), "engine")
    c.app(inv, v("INFO", "executor_base.py:115", "Maximum concurrency for 16384 tokens per request: 42.48x"), "engine")
    c.app(inv, v("INFO", "model_runner.py:1434", "Capturing cudagraphs for decoding. This may lead to unexpected "
                 "consequences if the model is not static. To run the model in eager mode, set 'enforce_eager=True' or "
                 "use '--enforce-eager' in the CLI. If out-of-memory error occurs during cudagraph capture, consider "
                 "decreasing `gpu_memory_utilization` or switching to eager mode. You can also reduce the "
                 "`max_num_seqs` as needed to decrease memory usage."), "engine", dt=1.0)
    c.app(inv, v("INFO", "model_runner.py:1562", "Graph capturing finished in 41 secs, took 1.93 GiB"), "engine",
          dt=41.0)
    c.app(inv, v("INFO", "llm_engine.py:431", "init engine (profile, create kv cache, warmup model) took 88.02 "
                 "seconds"), "engine")
    c.app(inv, v("INFO", "launcher.py:21", "Available routes are:"), dt=1.0)
    c.app(inv, f"INFO:     Started server process [{inv.main}]")
    c.app(inv, "INFO:     Waiting for application startup.")
    c.app(inv, "INFO:     Application startup complete.")
    c.app(inv, "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)")
    vllm_serve(c, inv, 4, gen=231.0)
    ownership(c, inv, [("engine", 81094)])
    c.extra["nvidia_smi_apps"][0]["process_name"] = "python3"  # V0's MQLLMEngine process keeps python's name
    c.app(inv, v("INFO", "engine.py:275", "Added request cmpl-30aaf466904d4d148c2e17a584f448e0-0."), "engine", dt=3.0)
    c.app(inv, v("CRITICAL", "launcher.py:101", "MQLLMEngine is already dead, terminating server process"), dt=0.2)
    c.app(inv, 'INFO:     10.25.164.34:57224 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error')
    c.app(inv, v("ERROR", "engine.py:139", "OutOfMemoryError('CUDA out of memory. Tried to allocate 1.27 GiB. GPU 0 has "
                 "a total capacity of 79.33 GiB of which 109.81 MiB is free. Process 2377657 has 79.19 GiB memory in "
                 "use. Of the allocated memory 67.68 GiB is allocated by PyTorch, with 76.00 MiB allocated in private "
                 "pools (e.g., CUDA Graphs), and 1.47 GiB is reserved by PyTorch but unallocated. If reserved but "
                 "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
                 "fragmentation.  See documentation for Memory Management  "
                 "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)')"), "engine", dt=0.01)
    c.app(inv, "INFO:     Shutting down", dt=0.5)
    c.app(inv, "INFO:     Waiting for application shutdown.")
    c.app(inv, "INFO:     Application shutdown complete.")
    c.app(inv, f"INFO:     Finished server process [{inv.main}]")
    c.clean_exit(inv)
    c.extra["systemctl_show"].update({"MainPID": "0", "ActiveState": "inactive", "SubState": "dead",
                                      "Result": "success", "ExecMainStatus": "0", "Restart": "on-failure"})
    return expect3(c, "cuda_oom_runtime", False, ["CUDA out of memory. Tried to allocate 1.27 GiB",
                                                  "MQLLMEngine is already dead"],
                   ["healthy", "kv_cache_oom", "cuda_graph_capture_oom", "gpu_memory_held_by_stale_process", "unknown"],
                   "https://github.com/vllm-project/vllm/issues/13067",
                   "DeepSeek-R1-AWQ (moe_wna16, fp8 KV) on 8xA800 with the vllm-openai image of February 2025 "
                   "(0.7.2, V0 MQLLMEngine; version estimated): the server started and served, then a long prompt "
                   "ran it out of memory. `Added request`, `MQLLMEngine is already dead, terminating server process`, "
                   "the 500 and the OutOfMemoryError line (engine.py:139) are verbatim, the OOM text's cut tail is "
                   "torch's template. `Process 2377657` is the unit's own engine process (pid chosen to match; "
                   "nvidia-smi/process side evidence ours). Start-up and throughput lines are V0 templates (ours). "
                   "The API server shuts down orderly and exits 0: Restart=on-failure leaves the unit dead.")


@case3
def rt3_vllm_020_worker_oom_exit0_restart() -> Case:
    c = Case("rt3_vllm_020_worker_oom_exit0_restart", "vllm", "0.20.1", day=10, hour=4, tp=2,
             model="/models/Qwen3.6-27B-AutoRound-INT4")
    inv = c.start()
    v_boot(c, inv, weights=8.9120, kv_gib=11.02, kv_tokens="262,144", conc="1.00", max_len="262,144",
           compile_s=10.2)
    vllm_serve(c, inv, 3, gen=74.0)
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 136.00 MiB. GPU 0 has a total capacity of "
           "23.56 GiB of which 117.38 MiB is free. Including non-PyTorch memory, this process has 22.82 GiB memory in "
           "use. Of the allocated memory 21.98 GiB is allocated by PyTorch, with 21.71 MiB allocated in private pools "
           "(e.g., CUDA Graphs), and 391.42 MiB is reserved by PyTorch but unallocated. If reserved but unallocated "
           "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
           "documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-"
           "memory-usage-with-pytorch-cuda-alloc-conf)")
    c.app(inv, 'INFO:     172.18.0.1:40412 - "POST /v1/chat/completions HTTP/1.1" 200 OK', dt=3.0)
    vlines(c, inv, "multiproc_executor.py:962", [
        oom,
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 957, in '
        "worker_busy_loop",
        "    output = func(*args, **kwargs)",
    ], "worker")
    vllm_engine_dead(c, inv, [
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 361, in '
        "collective_rpc",
        "    raise RuntimeError(",
        "RuntimeError: Worker failed with error 'CUDA out of memory. Tried to allocate 136.00 MiB. GPU 0 has a total "
        "capacity of 23.56 GiB of which 117.38 MiB is free.', please check the stack trace above for the root cause",
    ], where="core.py:1131", restart=True)
    inv2 = c.start(dt=0.1)
    v_boot(c, inv2, weights=8.9120, kv_gib=11.02, kv_tokens="262,144", conc="1.00", max_len="262,144",
           compile_s=10.2)
    vllm_serve(c, inv2, 2, gen=71.0)
    c.extra["systemctl_show"] = {"MainPID": str(inv2.main), "ActiveState": "active", "SubState": "running",
                                 "Result": "success", "NRestarts": "1", "Restart": "always"}
    return expect3(c, "cuda_oom_runtime", False, ["CUDA out of memory. Tried to allocate 136.00 MiB"],
                   ["healthy", "kv_cache_oom", "cuda_graph_capture_oom", "unknown", "gpu_memory_held_by_stale_process"],
                   "https://github.com/noonghunna/club-3090/issues/138",
                   "Qwen3.6-27B INT4 on two RTX 3090 driven by opencode (May 2026, vLLM nightly of the club-3090 stack; "
                   "version estimated). Worker_TP0's OOM and worker_busy_loop frame verbatim (multiproc_executor.py:962). "
                   "EngineCore's fatal-error lines (core.py:1131 as in the same project's reports), the collective_rpc "
                   "wrapper and the orderly uvicorn exit are ours. The API server exits 0 after `EngineCore encountered a "
                   "fatal error` (systemd only says `Deactivated successfully`), Restart=always brings it back and it "
                   "serves again: still a runtime OOM, not healthy.")


# ============================== healthy (decoy) ================================================


@case3
def ok3_sgl_046_decode_oom_retract_serving() -> Case:
    c = Case("ok3_sgl_046_decode_oom_retract_serving", "sglang", "0.4.6.post5", day=11, hour=4, tp=8,
             model="/models/DeepSeek-V3-0324")
    inv = c.start()
    sgl_boot(c, inv, avail=139.29, weights=83.03, arch="DeepseekV3ForCausalLM", kv_tokens=574336, kv_gb=20.06,
             graph_gb=3.12, ctx=163840, max_req=2048)
    sgl_decode(c, inv, [(96, 401233, 0.70, 2410.33, 0), (118, 498120, 0.87, 2388.92, 3), (131, 561042, 0.98, 2301.17, 9)])
    for k, ratio in enumerate(("0.3811 -> 0.4419", "0.2967 -> 0.4075", "0.3530 -> 0.4298")):
        c.app(inv, c.slog(f"Decode out of memory happened. #retracted_reqs: 2, #new_token_ratio: {ratio}"), "sched",
              dt=4.0)
        sgl_decode(c, inv, [(129 - k, 566310 - 911 * k, 0.99, 1230.45 - 17.2 * k, 11 + k),
                            (128 - k, 568102 - 911 * k, 0.99, 1198.07 - 11.9 * k, 12 + k)], ip=21)
    sgl_decode(c, inv, [(127, 569344, 0.99, 1190.62, 13), (126, 567721, 0.99, 1203.88, 12),
                        (125, 566010, 0.99, 1187.40, 12)])
    return expect3(c, "healthy", False, [], NOT_HEALTHY, "https://github.com/sgl-project/sglang/issues/6860",
                   "SGLang 0.4.6.post5 decode server under load: the KV pool fills up and the scheduler retracts "
                   "requests (`Decode out of memory happened`, the report's text; counts and ratios ours, SGLang's "
                   "0.4.6 template) at a lower throughput, as the report describes, while Decode and 200 lines keep "
                   "flowing. The report's deployment is a PD-disaggregated decode node; ours logs the plain Decode "
                   "template. KV pressure the engine handles: healthy.")
