"""holdout4 cases, theme `engine` (see incident_h4_base.py): scored only, never tuned on.

Software failures of the engine itself: tracebacks in the scheduler / EngineCore / model code (engine_exception) and
engine deaths whose journal names no cause (unknown). Each case is rebuilt from one public report; the error lines are
quoted from it, systemd's/journald's lines and the engines' start-up/serving templates come from incident_kit /
incident_scenes (FORMATS.md). Labels follow docs/DIAGNOSIS.md "Labels" only.
"""

from __future__ import annotations

from incident_h4_base import Case, case4, expect4
from incident_scenes import (
    sglang_boot,
    sglang_decode,
    sglang_sched_exception,
    sglang_sigquit,
    vllm_boot,
    vllm_engine_dead,
    vllm_serve,
)

CUDA_ERR_TAIL = [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]
SGL_CAPTURE_HELP = [
    "Possible solutions:",
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
    "3. disable torch compile by not using --enable-torch-compile",
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ",
]


def no_side_cause(c: Case) -> None:
    """Side evidence that rules out the usual suspects: an empty kernel log window and an empty audit log."""
    c.extra["kernel_journal"] = []
    c.extra["actions"] = []


def api_engine_dead(c: Case, inv, where: str = "async_llm.py:419") -> None:
    """The V1 API server's `AsyncLLM output_handler failed.` + EngineDeadError (template)."""
    c.app(inv, c.vlog("ERROR", where, "AsyncLLM output_handler failed."), dt=0.05)
    c.app(inv, c.vlog("ERROR", where, "Traceback (most recent call last):"))
    c.app(inv, c.vlog("ERROR", where, "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
                      "See stack trace (above) for the root cause."))


def uvicorn_exit(c: Case, inv, dt: float = 4.0) -> None:
    c.app(inv, "INFO:     Shutting down", dt=dt)
    c.app(inv, "INFO:     Waiting for application shutdown.")
    c.app(inv, "INFO:     Application shutdown complete.")
    c.app(inv, f"INFO:     Finished server process [{inv.main}]")


# ============================== engine_exception ===============================================


@case4
def exc4_sgl_0491_torch_compile_capture_not_permitted_loop() -> Case:
    c = Case("exc4_sgl_0491_torch_compile_capture_not_permitted_loop", "sglang", "0.4.9.post1", day=3, hour=15,
             tp=8, model="/models/DeepSeek-V3-0324")
    sp = "/opt/conda/lib/python3.10/site-packages"
    sw = f"{sp}/sglang/srt"
    inner = [
        f'  File "{sw}/managers/scheduler.py", line 2906, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
        f'  File "{sw}/managers/scheduler.py", line 344, in __init__',
        "    self.tp_worker = TpWorkerClass(",
        f'  File "{sw}/managers/tp_worker_overlap_thread.py", line 66, in __init__',
        "    self.worker = TpModelWorker(",
        f'  File "{sw}/managers/tp_worker.py", line 81, in __init__',
        "    self.model_runner = ModelRunner(",
        f'  File "{sw}/model_executor/model_runner.py", line 235, in __init__',
        "    self.initialize(min_per_gpu_memory)",
        f'  File "{sw}/model_executor/model_runner.py", line 336, in initialize',
        "    self.init_cuda_graphs()",
        f'  File "{sw}/model_executor/model_runner.py", line 1319, in init_cuda_graphs',
        "    self.cuda_graph_runner = CudaGraphRunner(self)",
        f'  File "{sw}/model_executor/cuda_graph_runner.py", line 336, in __init__',
        "    self.capture()",
        f'  File "{sw}/model_executor/cuda_graph_runner.py", line 436, in capture',
        "    ) = self.capture_one_batch_size(bs, forward)",
        f'  File "{sw}/model_executor/cuda_graph_runner.py", line 590, in capture_one_batch_size',
        "    run_once()",
        f'  File "{sw}/models/deepseek_v2.py", line 478, in forward_normal',
        "    topk_weights, topk_ids = self.topk(hidden_states, router_logits)",
        f'  File "{sw}/layers/moe/topk.py", line 87, in forward',
        "    topk_weights, topk_ids = biased_grouped_topk(",
        f'  File "{sw}/layers/moe/topk.py", line 322, in biased_grouped_topk_gpu',
        "    topk_weights, topk_ids = moe_fused_gate(",
        f'  File "{sp}/sgl_kernel/moe.py", line 58, in moe_fused_gate',
        "    return torch.ops.sgl_kernel.moe_fused_gate.default(",
        f'  File "{sp}/torch/_ops.py", line 756, in __call__',
        "    return self._op(*args, **kwargs)",
        "RuntimeError: CUDA error: operation not permitted when stream is capturing",
    ] + CUDA_ERR_TAIL + [
        "",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        f'  File "{sw}/managers/scheduler.py", line 2906, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)",
        f'  File "{sw}/model_executor/model_runner.py", line 1319, in init_cuda_graphs',
        "    self.cuda_graph_runner = CudaGraphRunner(self)",
        f'  File "{sw}/model_executor/cuda_graph_runner.py", line 338, in __init__',
        "    raise Exception(",
        "Exception: Capture cuda graph failed: CUDA error: operation not permitted when stream is capturing",
    ] + CUDA_ERR_TAIL + SGL_CAPTURE_HELP + [""]
    for k in range(3):
        inv = c.start(dt=0.3 if k == 0 else 0.1)
        sglang_boot(c, inv, "capture")
        c.app(inv, "\rCapturing batches (bs=64 avail_mem=21.17 GB):   0%|          | 0/14 [00:00<?, ?it/s]", "sched",
              dt=48.0)
        sglang_sched_exception(c, inv, inner)
        c.app(inv, c.slog("Scheduler hit an exception: Traceback (most recent call last):", "TP1"), "sched1", dt=0.1)
        c.many(inv, inner[-(len(SGL_CAPTURE_HELP) + len(CUDA_ERR_TAIL) + 2):], "sched1")
        sglang_sigquit(c, inv, serving=False)
        c.exit(inv, "killed", "9", restart=True, cpu="6min 40.318s")
    inv = c.start(dt=0.1)
    sglang_boot(c, inv, "weights")
    c.extra["unit_file"] = ("[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            f"{c.model} --tp 8 --trust-remote-code --enable-torch-compile --torch-compile-max-bs 64\n"
                            "Restart=always\nRestartSec=10\n")
    return expect4(c, "engine_exception", True, ["operation not permitted when stream is capturing"],
                   ["healthy", "cuda_graph_capture_oom", "kv_cache_oom", "segfault", "unknown"],
                   "https://github.com/sgl-project/sglang/issues/7918",
                   "SGLang 0.4.9.post1 with --enable-torch-compile on a DeepSeek MoE model: CUDA graph capture fails "
                   "because sgl_kernel's moe_fused_gate (biased_grouped_topk) issues an operation that is not allowed "
                   "while the stream is capturing. Verbatim from the report: the frames topk.py:322 "
                   "biased_grouped_topk_gpu -> sgl_kernel/moe.py:58 moe_fused_gate -> torch/_ops.py:756, the "
                   "`RuntimeError: CUDA error: operation not permitted when stream is capturing` line with torch's "
                   "three CUDA lines, `During handling of the above exception, another exception occurred:`, and "
                   "cuda_graph_runner.py lines 336/436/590 (__init__/capture/capture_one_batch_size). Ours: the "
                   "scheduler/model-runner frames above them, the deepseek_v2/topk forward frames, and the final "
                   "`Exception: Capture cuda graph failed: ...` + `Possible solutions` block, which follow SGLang's "
                   "template (FORMATS a.4; the report's chained traceback is longer). Not an OOM: the help block's "
                   "memory advice is a decoy. TP1 repeats the tail. Restart=always: three identical failing starts "
                   "(loop), a fourth is loading at the end. Model path and torch-compile max bs ours.")


@case4
def exc4_sgl_0510_lora_cap_assert_http_up() -> Case:
    c = Case("exc4_sgl_0510_lora_cap_assert_http_up", "sglang", "0.5.10", day=4, hour=15,
             model="/models/Llama-3.1-8B-Instruct")
    sw = "/opt/sglang/lib/python3.12/site-packages/sglang/srt"
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 5, tput=2150.0, running=7)
    c.app(inv, c.slog("Prefill batch, #new-seq: 3, #new-token: 2048, #cached-token: 0, token usage: 0.04, "
                      "#running-req: 5, #queue-req: 2,"), "sched", dt=0.9)
    sglang_sched_exception(c, inv, [
        f'  File "{sw}/managers/scheduler.py", line 3185, in run_scheduler_process',
        "    scheduler.run_event_loop()",
        f'  File "{sw}/managers/scheduler.py", line 1093, in run_event_loop',
        "    dispatch_event_loop(self)",
        f'  File "{sw}/managers/scheduler.py", line 1247, in event_loop_overlap',
        "    batch_result = self.run_batch(batch)",
        "                   ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sw}/managers/scheduler.py", line 2391, in run_batch',
        "    batch_result = self.model_worker.forward_batch_generation(",
        f'  File "{sw}/managers/tp_worker.py", line 421, in forward_batch_generation',
        "    self.model_runner.lora_manager.fetch_new_loras(new_lora_ids, running_lora_ids)",
        f'  File "{sw}/lora/lora_manager.py", line 285, in fetch_new_loras',
        "    assert len(cur_uids) <= self.max_loras_per_batch",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "AssertionError",
        "",
    ])
    sglang_sigquit(c, inv, serving=True)
    for i in range(3):
        c.app(inv, c.slog(f"Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
                          f"tic start time: 15:02:{11 + 30 * i % 60:02d}. last_heartbeat time: 15:01:47", None),
              dt=30.0)
        c.app(inv, c.slog(f'INFO:     10.0.4.2:4{4100 + 7 * i} - "GET /health HTTP/1.1" 503 Service Unavailable', None))
    c.extra["systemctl_show"] = {"ActiveState": "active", "SubState": "running", "MainPID": str(inv.main),
                                 "NRestarts": "0", "Result": "success"}
    c.extra["unit_file"] = ("[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            f"{c.model} --enable-lora --max-loras-per-batch 4 --max-loaded-loras 8 --lora-paths "
                            "a0=/models/lora/a0 a1=/models/lora/a1 a2=/models/lora/a2 a3=/models/lora/a3\n"
                            "Restart=always\nRestartSec=10\n")
    c.extra["kernel_journal"] = []
    return expect4(c, "engine_exception", False, ["assert len(cur_uids) <= self.max_loras_per_batch"],
                   ["healthy", "unknown", "operator_action", "kv_cache_oom", "cuda_oom_runtime"],
                   "https://github.com/sgl-project/sglang/issues/23141",
                   "SGLang (April 2026, 'persists in the latest version'; built as 0.5.10) with --max-loras-per-batch "
                   "N: N LoRA adapters plus a base-model request land in one batch, the hard assert in "
                   "lora_manager.fetch_new_loras() fires, the scheduler dies with an unhandled exception, SIGQUIT "
                   "reaches the server and it 'becomes permanently unresponsive' (the report). The assert statement "
                   "`assert len(cur_uids) <= self.max_loras_per_batch` is SGLang's source line named by the report and "
                   "its fix PR #25078; the scheduler frames above it (file/line) are ours. The `SIGQUIT received` line "
                   "(0.5.5+ serving template, FORMATS a.4), the /health 503s and the `Health check failed` lines are "
                   "ours (template): the main process and its HTTP server stay up (unit active/running) while no "
                   "request is answered. No Xid in the kernel log.")


@case4
def exc4_sgl_0542_gptoss_spec_toolchoice_typeerror() -> Case:
    c = Case("exc4_sgl_0542_gptoss_spec_toolchoice_typeerror", "sglang", "0.5.4.post2", day=5, hour=15, tp=8,
             model="/models/gpt-oss-120b")
    sw = "/sgl-workspace/sglang/python/sglang/srt"
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 4, tput=2890.0, running=18)
    c.app(inv, c.slog("Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 128, token usage: 0.00, "
                      "#running-req: 0, #queue-req: 0, "), "sched", dt=3.0)
    c.app(inv, c.slog("Scheduler hit an exception: Traceback (most recent call last):", "TP7"), "sched1", dt=0.9)
    c.many(inv, [
        f'  File "{sw}/managers/scheduler.py", line 2810, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/utils/_contextlib.py", line 120, in decorate_context',
        "    return func(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sw}/managers/scheduler.py", line 999, in event_loop_overlap',
        "    batch_result = self.run_batch(batch)",
        "                   ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sw}/managers/scheduler.py", line 2046, in run_batch',
        "    ) = self.draft_worker.forward_batch_generation(",
        f'  File "{sw}/speculative/eagle_worker.py", line 291, in forward_batch_generation',
        "    spec_info = self.draft(batch)",
        "                ^^^^^^^^^^^^^^^^",
        f'  File "{sw}/speculative/eagle_worker.py", line 470, in draft',
        "    batch.sampling_info.vocab_mask[:, : self.vocab_size]",
        "                    ~~~~~~~~~~~~~~^^^",
        "TypeError: 'NoneType' object is not subscriptable",
        "",
    ], "sched1")
    sglang_sigquit(c, inv, serving=True)
    c.exit(inv, "killed", "9", restart=True, cpu="38min 12.904s")
    inv2 = c.start(dt=0.1)
    sglang_boot(c, inv2)
    sglang_decode(c, inv2, 2, tput=2810.0, running=6)
    c.extra["unit_file"] = ("[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            f"{c.model} --tp 8 --tool-call-parser gpt-oss --reasoning-parser gpt-oss "
                            "--speculative-algorithm EAGLE3 --speculative-draft-model-path /models/gpt-oss-120b-eagle3 "
                            "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4\n"
                            "Environment=SGLANG_ENABLE_SPEC_V2=1\nRestart=always\nRestartSec=10\n")
    return expect4(c, "engine_exception", False, ["TypeError: 'NoneType' object is not subscriptable"],
                   ["healthy", "unknown", "operator_action", "segfault"],
                   "https://github.com/sgl-project/sglang/issues/12567",
                   "gpt-oss-120b, TP=8, EAGLE speculative decoding with the overlap scheduler (spec v2), November 2025 "
                   "image (built as 0.5.4.post2): a chat request with \"tool_choice\": \"required\" makes the TP7 "
                   "scheduler raise `TypeError: 'NoneType' object is not subscriptable`. Verbatim from the report: the "
                   "`Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 128, ...` line, `[... TP7] Scheduler "
                   "hit an exception`, the frames scheduler.py:2810 run_scheduler_process / torch _contextlib:120 / "
                   "scheduler.py:999 event_loop_overlap `batch_result = self.run_batch(batch)`, the `~~~^^^` marker "
                   "and the TypeError. The frames between run_batch and the marker (eagle worker draft, vocab_mask) "
                   "are ours (the report cut them). SIGQUIT line (template), SIGKILL of the tree, Restart=always "
                   "brings the unit back and it serves again: still an incident.")


@case4
def exc4_vllm_091_kv_connector_assert_exit0_always() -> Case:
    c = Case("exc4_vllm_091_kv_connector_assert_exit0_always", "vllm", "0.9.1", day=6, hour=15,
             model="/models/Llama-3.1-8B-Instruct")
    dp = "/opt/vllm/lib/python3.12/site-packages"
    where = "core.py:521"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 5, gen=1310.0)
    c.app(inv, c.vlog("ERROR", where, "EngineCore encountered a fatal error."), "engine", dt=0.7)
    for line in [
        "Traceback (most recent call last):",
        f'  File "{dp}/vllm/v1/engine/core.py", line 512, in run_engine_core',
        "    engine_core.run_busy_loop()",
        f'  File "{dp}/vllm/v1/engine/core.py", line 539, in run_busy_loop',
        "    self._process_engine_step()",
        f'  File "{dp}/vllm/v1/engine/core.py", line 564, in _process_engine_step',
        "    outputs, model_executed = self.step_fn()",
        "                              ^^^^^^^^^^^^^^",
        f'  File "{dp}/vllm/v1/engine/core.py", line 237, in step',
        "    model_output = self.execute_model(scheduler_output)",
        "                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/torch/utils/_contextlib.py", line 116, in decorate_context',
        "    return func(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/vllm/v1/worker/gpu_model_runner.py", line 1348, in execute_model',
        "    self.maybe_setup_kv_connector(scheduler_output)",
        f'  File "{dp}/vllm/v1/worker/gpu_model_runner.py", line 1636, in maybe_setup_kv_connector',
        "    kv_connector.start_load_kv(get_forward_context())",
        '  File "/opt/vua/src/vua/vllm/kv_connector_v1.py", line 317, in start_load_kv',
        "    assert(request.existing_token_ids % self._max_num_batched_tokens == 0)",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "AssertionError",
    ]:
        c.app(inv, c.vlog("ERROR", where, line), "engine", dt=0.0)
    c.app(inv, "Process EngineCore_0:", "engine", dt=0.01)
    api_engine_dead(c, inv)
    for rid in ("18436d89edc6453f94e8021da38a8aca", "fb1b10bc535d4be7a97b55d2521932fa",
                "c18d14a130ce4363896bd4b309887f57", "8e9e93db870c4e14a465c36246068f44"):
        c.app(inv, c.vlog("INFO", "async_llm.py:345", f"Request cmpl-{rid}-0 failed (engine dead)."), dt=0.0)
    for i in range(3):
        c.app(inv, f'INFO:     10.0.3.{7 + i}:5{5120 + 13 * i} - "POST /v1/completions HTTP/1.1" 500 Internal Server '
                   "Error", dt=0.02)
    uvicorn_exit(c, inv)
    c.clean_exit(inv, restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2, gen=1290.0)
    c.extra["unit_file"] = (f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model} --kv-transfer-config "
                            "'{\"kv_connector\":\"VUAStorageConnector_V1\",\"kv_role\":\"kv_both\"}' "
                            "--max-num-batched-tokens 512\nRestart=always\nRestartSec=10\n")
    return expect4(c, "engine_exception", False,
                   ["assert(request.existing_token_ids % self._max_num_batched_tokens == 0)",
                    "EngineCore encountered a fatal error."],
                   ["healthy", "unknown", "operator_action"],
                   "https://github.com/vllm-project/vllm/issues/20056",
                   "vLLM V1 (June 2025 source build; built as 0.9.1) with an external KV-cache connector (VUA "
                   "kv_connector_v1) under a benchmark: the connector's start_load_kv assert fails inside "
                   "gpu_model_runner.execute_model and EngineCore dies. Verbatim from the report: [core.py:521], the "
                   "frames torch _contextlib:116 -> gpu_model_runner.py:1348 execute_model -> :1636 "
                   "maybe_setup_kv_connector -> kv_connector_v1.py:317 start_load_kv, the assert and `AssertionError`, "
                   "`Process EngineCore_0:`, `AsyncLLM output_handler failed.` at async_llm.py:419 and the `Request "
                   "cmpl-...-0 failed (engine dead).` lines at async_llm.py:345. The install paths (report: a home "
                   "directory), the core.py frames above and the fatal-error header follow vLLM 0.9's template. V1 "
                   "exits 0 after uvicorn's orderly shutdown; Restart=always brings it back and it serves again.")


@case4
def exc4_vllm_0110_illegal_access_exit0_no_restart() -> Case:
    c = Case("exc4_vllm_0110_illegal_access_exit0_no_restart", "vllm", "0.11.0", day=7, hour=15, tp=2,
             model="/models/Qwen3-30B-A3B-Instruct-2507")
    dp = "/usr/local/lib/python3.12/dist-packages/vllm"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 5, gen=980.0)
    pre = [
        c.vlog("ERROR", "dump_input.py:69", f"Dumping input data for V1 LLM engine (v0.11.0) with config: "
               f"model='{c.model}', speculative_config=None, tokenizer='{c.model}', skip_tokenizer_init=False, "
               "tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, "
               "dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=2, pipeline_parallel_size=1, "
               "enforce_eager=False, kv_cache_dtype=auto, enable_prefix_caching=True, enable_chunked_prefill=True"),
        c.vlog("ERROR", "dump_input.py:76", "Dumping scheduler output for model execution: "
               "SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=["
               "'chatcmpl-86fece41ca1e484ea7f014059815d4d8', 'chatcmpl-f55ce582f9484d80974805d3c93f6d5d'], "
               "resumed_from_preemption=[false, false], new_token_ids=[[320], [119782]], new_block_ids=[null, null], "
               "num_computed_tokens=[1769, 3851]), num_scheduled_tokens={chatcmpl-86fece41ca1e484ea7f014059815d4d8: "
               "1, chatcmpl-f55ce582f9484d80974805d3c93f6d5d: 1}, total_num_scheduled_tokens=2, "
               "scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={}, num_common_prefix_blocks=[0], "
               "finished_req_ids=[], free_encoder_mm_hashes=[], structured_output_request_ids={}, "
               "grammar_bitmask=null, kv_connector_metadata=null)"),
        c.vlog("ERROR", "dump_input.py:79", "Dumping scheduler stats: SchedulerStats(num_running_reqs=25, "
               "num_waiting_reqs=0, kv_cache_usage=0.41)"),
    ]
    wl = [
        "WorkerProc hit an exception.",
        "Traceback (most recent call last):",
        f'  File "{dp}/v1/executor/multiproc_executor.py", line 666, in worker_busy_loop',
        "    output = func(*args, **kwargs)",
        "             ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/v1/worker/gpu_model_runner.py", line 2417, in execute_model',
        "    valid_sampled_token_ids = self._to_list(sampled_token_ids)",
        "                              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/v1/worker/gpu_model_runner.py", line 3731, in _to_list',
        "    self.transfer_event.synchronize()",
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
        "for more information.",
    ] + CUDA_ERR_TAIL
    for x in wl:
        c.app(inv, c.vlog("ERROR", "multiproc_executor.py:671", x), "worker", dt=0.0)
    c.many(inv, pre, "engine", dt=0.0)
    vllm_engine_dead(c, inv, [
        f'  File "{dp}/v1/engine/core.py", line 701, in run_engine_core',
        "    engine_core.run_busy_loop()",
        f'  File "{dp}/v1/engine/core.py", line 728, in run_busy_loop',
        "    self._process_engine_step()",
        f'  File "{dp}/v1/engine/core.py", line 754, in _process_engine_step',
        "    outputs, model_executed = self.step_fn()",
        "                              ^^^^^^^^^^^^^^",
        f'  File "{dp}/v1/engine/core.py", line 284, in step',
        "    model_output = self.execute_model_with_error_logging(",
        f'  File "{dp}/v1/executor/multiproc_executor.py", line 264, in get_response',
        "    raise RuntimeError(",
        "RuntimeError: Worker failed with error 'CUDA error: an illegal memory access was encountered",
    ] + CUDA_ERR_TAIL[:-1] + [CUDA_ERR_TAIL[-1] + "', please check the stack trace above for the root cause"],
        where="core.py:710", restart=False)
    c.extra["systemctl_show"] = {"ActiveState": "inactive", "SubState": "dead", "MainPID": "0", "NRestarts": "0",
                                 "ExecMainCode": "1", "ExecMainStatus": "0", "Result": "success"}
    c.extra["unit_file"] = (f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model} --tensor-parallel-size 2 "
                            "--max-num-seqs 64\nRestart=on-failure\n")
    c.extra["kernel_journal"] = []
    return expect4(c, "engine_exception", False,
                   ["CUDA error: an illegal memory access was encountered", "EngineCore encountered a fatal error."],
                   ["healthy", "gpu_hardware_xid", "cuda_oom_runtime", "unknown"],
                   "https://github.com/vllm-project/vllm/issues/28028",
                   "vLLM V1 (November 2025; built as 0.11.0), 25 running chat requests: a decode step hits `CUDA "
                   "error: an illegal memory access was encountered` (the report's title, verbatim with torch's "
                   "`CUDA kernel errors might be asynchronously reported ...` line) after vLLM dumps the scheduler "
                   "output (the report shows a long SchedulerOutput dump with resumed_from_preemption / new_token_ids "
                   "/ num_computed_tokens lists; here shortened to two requests, values from the report). The "
                   "worker's `WorkerProc hit an exception` traceback (torch 2.8 `torch.AcceleratorError` form, "
                   "frames ours), the EngineCore frames, the `Worker failed with error '...'` wrapper, EngineDeadError, 500s and "
                   "uvicorn's orderly exit follow vLLM 0.11's template (FORMATS b.4/b.5). Exit status 0 with "
                   "Restart=on-failure: systemd does not restart, the unit ends inactive. No Xid in the kernel log.")


@case4
def exc4_vllm_v0_066_model_exec_illegal_access_restart() -> Case:
    c = Case("exc4_vllm_v0_066_model_exec_illegal_access_restart", "vllm", "0.6.6.post1", v1=False, day=8, hour=15,
             model="/models/Qwen2.5-32B-Instruct-AWQ")
    dp = "/usr/local/lib/python3.12/dist-packages/vllm"
    where = "engine.py:135"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 5, gen=612.0)
    err = ("Error in model execution: CUDA error: an illegal memory access was encountered\\nCUDA kernel errors might "
           "be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\\nFor "
           "debugging consider passing CUDA_LAUNCH_BLOCKING=1\\nCompile with `TORCH_USE_CUDA_DSA` to enable "
           "device-side assertions.\\n")
    for line in [
        f"RuntimeError('{err}')",
        "Traceback (most recent call last):",
        f'  File "{dp}/worker/model_runner_base.py", line 116, in _wrapper',
        "    return func(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/worker/model_runner.py", line 1691, in execute_model',
        "    hidden_or_intermediate_states = model_executable(",
        "                                    ^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/worker/model_runner.py", line 1749, in execute_model',
        "    self.sampler(logits=logits, sampling_metadata=model_input.sampling_metadata)",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ] + CUDA_ERR_TAIL + [
        "",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        f'  File "{dp}/engine/multiprocessing/engine.py", line 133, in start',
        "    self.run_engine_loop()",
        f'  File "{dp}/engine/multiprocessing/engine.py", line 196, in run_engine_loop',
        "    request_outputs = self.engine_step()",
        "                      ^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/engine/multiprocessing/engine.py", line 214, in engine_step',
        "    raise e",
        f'  File "{dp}/engine/multiprocessing/engine.py", line 205, in engine_step',
        "    return self.engine.step()",
        "           ^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/engine/llm_engine.py", line 1390, in step',
        "    outputs = self.model_executor.execute_model(",
        "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/executor/gpu_executor.py", line 88, in execute_model',
        "    output = self.driver_worker.execute_model(execute_model_req)",
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/worker/model_runner_base.py", line 146, in _wrapper',
        "    raise type(err)(f\"Error in model execution: \"",
        "RuntimeError: Error in model execution: CUDA error: an illegal memory access was encountered",
    ] + CUDA_ERR_TAIL:
        c.app(inv, c.vlog("ERROR", where, line), "engine", dt=0.0)
    for i in range(4):
        c.app(inv, c.vlog("CRITICAL", "launcher.py:99", "MQLLMEngine is already dead, terminating server process"),
              dt=0.2 if i == 0 else 0.0)
        c.app(inv, f'INFO:     172.27.0.4:{32774 + 16 * i} - "POST /v1/chat/completions HTTP/1.0" 500 Internal Server '
                   "Error")
    c.app(inv, "INFO:     Shutting down", dt=0.3)
    c.app(inv, "INFO:     Waiting for application shutdown.", dt=1.0)
    c.app(inv, "INFO:     Application shutdown complete.")
    c.app(inv, f"INFO:     Finished server process [{inv.main}]")
    c.clean_exit(inv, restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2, gen=598.0)
    c.extra["unit_file"] = (f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model} --quantization awq_marlin "
                            "--enable-prefix-caching --max-model-len 32768\nRestart=always\nRestartSec=10\n")
    c.extra["kernel_journal"] = []
    return expect4(c, "engine_exception", False,
                   ["RuntimeError: Error in model execution: CUDA error: an illegal memory access was encountered"],
                   ["healthy", "gpu_hardware_xid", "unknown", "cuda_oom_runtime"],
                   "https://github.com/vllm-project/vllm/issues/12233",
                   "vLLM V0 (MQLLMEngine; January 2025, built as 0.6.6.post1) serving a quantized Qwen2.5 with prefix "
                   "caching: the engine loop dies with `RuntimeError: Error in model execution: CUDA error: an illegal "
                   "memory access was encountered` (the report's title). Verbatim from the report: the [engine.py:135] "
                   "frames engine.py:133 start -> :196 run_engine_loop -> :214/:205 engine_step -> llm_engine.py:1390 "
                   "step -> `outputs = self.model_executor.execute_model(`. The inner model-runner frames, the "
                   "executor frame, the repr header and the `MQLLMEngine is already dead` / 500 / uvicorn shutdown "
                   "lines follow vLLM 0.6's template (the 500s' client address 172.27.0.4 and HTTP/1.0 come from the "
                   "follow-up report #13939 of the same author). The API server exits 0; Restart=always restarts it "
                   "and it serves again. No Xid in the kernel log.")


# ============================== unknown ========================================================


@case4
def unk4_sgl_0553_dsv32_killed_no_evidence_loop() -> Case:
    c = Case("unk4_sgl_0553_dsv32_killed_no_evidence_loop", "sglang", "0.5.5.post3", day=9, hour=15, tp=8,
             model="/models/DeepSeek-V3.2")
    for k in range(3):
        inv = c.start(dt=0.3 if k == 0 else 0.1)
        sglang_boot(c, inv)
        c.app(inv, c.slog("Prefill batch, #new-seq: 1, #new-token: 12, #cached-token: 0, token usage: 0.00, "
                          "#running-req: 0, #queue-req: 0,"), "sched", dt=4.0)
        c.exit(inv, "killed", "9", restart=True, dt=95.0, cpu="9min 2.771s")
    inv = c.start(dt=0.1)
    sglang_boot(c, inv, "weights")
    no_side_cause(c)
    c.extra["unit_file"] = ("[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            f"{c.model} --tp 8 --trust-remote-code --tool-call-parser deepseekv32 --reasoning-parser "
                            "deepseek-v3\nRestart=always\nRestartSec=10\n")
    return expect4(c, "unknown", True, ["status=9/KILL"],
                   ["healthy", "host_oom_kill", "operator_action", "segfault", "stop_timeout_sigkill"],
                   "https://github.com/sgl-project/sglang/issues/14275",
                   "DeepSeek-V3.2 on 8x B200 with the v0.5.5.post3 image (code updated to a later commit): the server "
                   "starts, becomes unreachable (requests time out) and shortly afterwards the server process "
                   "'crashes/terminates automatically'; the report shows only a screenshot and no error line, rolling "
                   "back to v0.5.4.post1 works, and `sglang.compile_deep_gemm` timing out is offered only as a "
                   "possible clue. Everything here is ours: SGLang's start-up template, one Prefill line and no "
                   "Decode line, then systemd's code=killed, status=9/KILL with nothing before it. The kernel log "
                   "window has no OOM kill, the audit log no action: nothing names a cause. Restart=always: three "
                   "identical kills (loop), a fourth start is loading at the end.")


@case4
def unk4_vllm_0102_glm45v_enginecore_died_no_restart() -> Case:
    c = Case("unk4_vllm_0102_glm45v_enginecore_died_no_restart", "vllm", "0.10.2", day=10, hour=15, tp=4,
             model="/models/GLM-4.5V")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 6, gen=402.0)
    c.app(inv, c.vlog("ERROR", "core_client.py:564", "Engine core proc EngineCore_DP0 died unexpectedly, shutting "
                      "down client."), dt=2.7)
    api_engine_dead(c, inv, "async_llm.py:480")
    for i in range(2):
        c.app(inv, f'INFO:     10.0.3.{7 + i}:5{6120 + 31 * i} - "POST /v1/chat/completions HTTP/1.1" 500 Internal '
                   "Server Error", dt=0.02)
    uvicorn_exit(c, inv)
    c.clean_exit(inv)
    c.extra["systemctl_show"] = {"ActiveState": "inactive", "SubState": "dead", "MainPID": "0", "NRestarts": "0",
                                 "ExecMainCode": "1", "ExecMainStatus": "0", "Result": "success"}
    c.extra["unit_file"] = (f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model} --tensor-parallel-size 4 "
                            "--tool-call-parser glm45 --reasoning-parser glm45 --enable-auto-tool-choice\n"
                            "Restart=on-failure\n")
    no_side_cause(c)
    return expect4(c, "unknown", False, ["Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."],
                   ["healthy", "operator_action", "host_oom_kill", "segfault"],
                   "https://github.com/zai-org/GLM-V/issues/208",
                   "GLM-4.5V served with vLLM (October 2025; built as 0.10.2, TP=4): the report's title is the whole "
                   "evidence, `Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.` (verbatim; "
                   "the core_client.py line number and the pids are ours). No traceback from EngineCore. The "
                   "EngineDeadError lines, 500s and uvicorn's orderly shutdown are vLLM's template (FORMATS b.4/b.5): "
                   "the API server exits 0, so Restart=on-failure does not restart and the unit ends inactive "
                   "(systemctl show). No OOM kill in the kernel log, no action in the audit log: nothing names a cause.")


@case4
def unk4_vllm_085_request_log_flood_suppressed() -> Case:
    c = Case("unk4_vllm_085_request_log_flood_suppressed", "vllm", "0.8.5", day=11, hour=15,
             model="/models/Llama-3.1-8B-Instruct")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3, gen=1730.0)
    for i in range(6):
        rid = f"chatcmpl-{(0x5a1c9e + 7919 * i):06x}b7e84c2f9d0e1a6f3c5b8d27"
        c.app(inv, c.vlog("INFO", "logger.py:39", f"Received request {rid}: prompt: '<|begin_of_text|><|start_header_"
                          "id|>user<|end_header_id|>\\n\\nSummarize the following ticket ...', params: SamplingParams("
                          "n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, temperature=0.7, "
                          "top_p=1.0, top_k=-1, min_p=0.0, seed=None, stop=[], stop_token_ids=[], bad_words=[], "
                          "include_stop_str_in_output=False, ignore_eos=False, max_tokens=1024, min_tokens=0, "
                          "logprobs=None, prompt_logprobs=None, skip_special_tokens=True, "
                          "spaces_between_special_tokens=True, truncate_prompt_tokens=None, guided_decoding=None, "
                          "extra_args=None), prompt_token_ids: None, lora_request: None, prompt_adapter_request: None."),
              dt=0.01)
        c.app(inv, c.vlog("INFO", "async_llm.py:252", f"Added request {rid}."), dt=0.002)
        c.app(inv, f'INFO:     10.42.1.{20 + i}:{40210 + 11 * i} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
              dt=0.002)
    c.suppressed(inv, 24117, dt=0.8)
    c.exit(inv, "exited", "1", restart=True, dt=6.5, cpu="47min 18.230s")
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2, "weights")
    no_side_cause(c)
    c.extra["unit_file"] = (f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model} --max-model-len 32768 "
                            "--gpu-memory-utilization 0.9\nRestart=on-failure\nRestartSec=10\n")
    return expect4(c, "unknown", False, ["Suppressed 24117 messages from vllm.service"],
                   ["healthy", "operator_action", "host_oom_kill", "kv_cache_oom", "cuda_oom_runtime"],
                   "https://github.com/vllm-project/vllm/issues/18163",
                   "Llama-3.1-8B-Instruct on one A100 40GB with the vllm/vllm-openai:v0.8.5 image (V1) crashes the "
                   "server under load (report). The report's own crash lines are not reproduced: in this rebuild the "
                   "per-request INFO lines of vLLM 0.8's request logger (`Received request ...: prompt: ..., params: "
                   "SamplingParams(...)`, `Added request ...`, access lines; template, ours) trip journald's rate "
                   "limit (`Suppressed 24117 messages`, ours) and the main process exits 1 inside the suppressed "
                   "window, so whatever vLLM printed about the failure is gone. No OOM kill in the kernel log, no "
                   "audit action: unknown. Restart=on-failure restarts it once; the new start is loading weights at "
                   "the end.")


@case4
def unk4_vllm_v0_063_engine_loop_died_tp2_restart() -> Case:
    c = Case("unk4_vllm_v0_063_engine_loop_died_tp2_restart", "vllm", "0.6.3.post1", v1=False, day=12, hour=15, tp=2,
             model="/models/Meta-Llama-3.1-8B-Instruct")
    dp = "/usr/local/lib/python3.12/dist-packages/vllm"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 4, gen=1105.0)
    c.app(inv, c.vlog("INFO", "engine.py:290", "Added request chat-3f0b6a9d51e24c7c8a1e0d2b94f6c718."), "engine",
          dt=0.4)
    for line in [
        "RuntimeError('Engine loop has died')",
        "Traceback (most recent call last):",
        f'  File "{dp}/engine/multiprocessing/client.py", line 150, in run_heartbeat_loop',
        "    await self._check_success(",
        f'  File "{dp}/engine/multiprocessing/client.py", line 314, in _check_success',
        "    raise response",
        "RuntimeError: Engine loop has died",
    ]:
        c.app(inv, c.vlog("ERROR", "client.py:250", line), dt=0.0)
    c.app(inv, c.vlog("CRITICAL", "launcher.py:99", "MQLLMEngine is already dead, terminating server process"),
          dt=2.4)
    c.app(inv, 'INFO:     10.0.3.8:52991 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error')
    uvicorn_exit(c, inv, dt=0.1)
    c.clean_exit(inv, restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2, gen=1090.0)
    c.extra["unit_file"] = (f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model} --tensor-parallel-size 2\n"
                            "Restart=always\nRestartSec=10\n")
    no_side_cause(c)
    return expect4(c, "unknown", False, ["RuntimeError: Engine loop has died", "MQLLMEngine is already dead"],
                   ["healthy", "operator_action", "host_oom_kill", "nccl_failure"],
                   "https://github.com/vllm-project/vllm/issues/10102",
                   "Meta-Llama-3.1-8B-Instruct, TP=2, vLLM V0 (MQLLMEngine; November 2024, built as 0.6.3.post1): "
                   "'Engine loop has died' (the report's title) while serving; the maintainer could only ask for "
                   "debugging information. The engine prints no exception of its own: the only traceback is the "
                   "API client's heartbeat check (client.py:250 run_heartbeat_loop -> _check_success -> "
                   "`RuntimeError: Engine loop has died`), whose shape follows vLLM 0.6.3's template as printed in "
                   "vllm-project/vllm#9175; the `Added request` line, `MQLLMEngine is already dead, terminating server "
                   "process`, the 500 and uvicorn's exit are template too. Exit 0; Restart=always brings the unit "
                   "back and it serves again. No OOM kill in the kernel log, no audit action: nothing names a cause.")
