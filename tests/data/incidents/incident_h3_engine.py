"""holdout3 cases, theme `engine` (see incident_h3_base.py): scored only, never tuned on.

Software failures of the engine itself: tracebacks in the scheduler / EngineCore / model code (engine_exception) and
engine deaths whose journal names no cause (unknown). Each case is rebuilt from one public report; the error lines are
quoted from it, systemd's/journald's lines and the engines' start-up/serving templates come from incident_kit /
incident_scenes (FORMATS.md). Labels follow docs/DIAGNOSIS.md "Labels" only.
"""

from __future__ import annotations

from incident_h3_base import case3, expect3
from incident_kit import Case
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


# ============================== engine_exception ===============================================


@case3
def exc3_sgl_0462_capture_current_seed_loop() -> Case:
    c = Case("exc3_sgl_0462_capture_current_seed_loop", "sglang", "0.4.6.post2", day=11, hour=5, tp=8,
             model="/models/DeepSeek-V3")
    sw = "/sgl-workspace/sglang/python/sglang/srt"
    lines = [
        f'  File "{sw}/managers/scheduler.py", line 2215, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
        f'  File "{sw}/managers/scheduler.py", line 268, in __init__',
        "    self.tp_worker = TpWorkerClass(",
        f'  File "{sw}/managers/tp_worker_overlap_thread.py", line 64, in __init__',
        "    self.worker = TpModelWorker(server_args, gpu_id, tp_rank, dp_rank, nccl_port)",
        f'  File "{sw}/managers/tp_worker.py", line 78, in __init__',
        "    self.model_runner = ModelRunner(",
        f'  File "{sw}/model_executor/model_runner.py", line 187, in __init__',
        "    self.initialize(min_per_gpu_memory)",
        f'  File "{sw}/model_executor/model_runner.py", line 233, in initialize',
        "    self.init_cuda_graphs()",
        f'  File "{sw}/model_executor/model_runner.py", line 1003, in init_cuda_graphs',
        "    self.cuda_graph_runner = CudaGraphRunner(self)",
        f'  File "{sw}/model_executor/cuda_graph_runner.py", line 283, in __init__',
        "    raise Exception(",
        "Exception: Capture cuda graph failed: RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during CUDA "
        "graph capture. ",
        "If you need this call to be captured, please file an issue. ",
        "Current cudaStreamCaptureStatus: cudaStreamCaptureStatusActive",
    ] + SGL_CAPTURE_HELP + [""]
    for k in range(3):
        inv = c.start(dt=0.3 if k == 0 else 0.1)
        sglang_boot(c, inv, "capture")
        c.app(inv, "\rCapturing batches (avail_mem=10.92 GB):   0%|          | 0/35 [00:00<?, ?it/s]", "sched", dt=2.0)
        sglang_sched_exception(c, inv, lines)
        c.app(inv, c.slog("Scheduler hit an exception: Traceback (most recent call last):", "TP1"), "sched1", dt=0.1)
        c.many(inv, lines, "sched1")
        sglang_sigquit(c, inv, serving=False)
        c.exit(inv, "killed", "9", restart=True, cpu="4min 11.204s")
    inv = c.start(dt=0.1)
    sglang_boot(c, inv, "weights")
    c.extra["unit_file"] = ("[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            f"{c.model} --tp 8 --trust-remote-code --mem-fraction-static 0.8 --cuda-graph-max-bs 32\n"
                            "Restart=always\nRestartSec=10\n")
    return expect3(c, "engine_exception", True,
                   ["Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture"],
                   ["healthy", "cuda_graph_capture_oom", "kv_cache_oom", "segfault"],
                   "https://github.com/sgl-project/sglang/issues/6033",
                   "DeepSeek-V3 on H200 with the lmsysorg/sglang:v0.4.6.post2-cu124 image: CUDA graph capture fails "
                   "because a sampling op asks the CUDA generator for its seed while the stream is capturing. The "
                   "three-line `Exception: Capture cuda graph failed: RuntimeError: Cannot call "
                   "CUDAGeneratorImpl::current_seed ...` message is verbatim; the report says lowering "
                   "--mem-fraction-static / --cuda-graph-max-bs does not help (not an OOM), and SGLang's own `Possible "
                   "solutions` block (template, FORMATS a.4) still suggests them, a decoy for a capture OOM. The "
                   "scheduler frames (file/line) are SGLang 0.4.6's shape, ours; TP1 repeats the message. "
                   "Restart=always: three identical failing starts (loop), a fourth is loading at the end.")


@case3
def exc3_sgl_048_logit_bias_indexerror() -> Case:
    c = Case("exc3_sgl_048_logit_bias_indexerror", "sglang", "0.4.8.post1", day=12, hour=5, tp=8,
             model="/models/DeepSeek-R1-0528")
    sw = "/sgl-workspace/sglang/python/sglang/srt"
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 5, tput=1320.0, running=41)
    c.app(inv, c.slog("Prefill batch. #new-seq: 1, #new-token: 312, #cached-token: 0, token usage: 0.21, "
                      "#running-req: 41, #queue-req: 0", "TP0"), "sched", dt=0.8)
    c.app(inv, c.slog('INFO:     10.0.4.61:53312 - "POST /v1/chat/completions HTTP/1.1" 200 OK', None), dt=0.05)
    c.app(inv, c.slog("Scheduler hit an exception: Traceback (most recent call last):", "TP1"), "sched1", dt=0.5)
    c.many(inv, [
        f'  File "{sw}/managers/scheduler.py", line 2645, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/utils/_contextlib.py", line 116, in decorate_context',
        "    return func(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sw}/managers/scheduler.py", line 751, in event_loop_overlap',
        "    batch = self.get_next_batch_to_run()",
        "            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sw}/managers/scheduler.py", line 1444, in get_next_batch_to_run',
        "    new_batch = self.get_new_batch_prefill()",
        "                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sw}/managers/scheduler.py", line 1605, in get_new_batch_prefill',
        "    new_batch.prepare_for_extend()",
        f'  File "{sw}/managers/schedule_batch.py", line 1325, in prepare_for_extend',
        "    self.sampling_info = SamplingBatchInfo.from_schedule_batch(",
        f'  File "{sw}/sampling/sampling_batch_info.py", line 98, in from_schedule_batch',
        "    logit_bias[i, int(key)] = value",
        "    ~~~~~~~~~~^^^^^^^^^^^^^",
        "IndexError: index 129280 is out of bounds for dimension 1 with size 129280",
        "",
    ], "sched1")
    sglang_sigquit(c, inv, serving=False)
    c.exit(inv, "killed", "9", restart=True)
    inv2 = c.start(dt=0.1)
    sglang_boot(c, inv2)
    sglang_decode(c, inv2, 2, tput=1290.0, running=12)
    return expect3(c, "engine_exception", False,
                   ["IndexError: index 129280 is out of bounds for dimension 1 with size 129280"],
                   ["healthy", "unknown", "operator_action"], "https://github.com/sgl-project/sglang/issues/7670",
                   "A request whose logit_bias names token id 129280 (= DeepSeek's vocab size) reaches the scheduler; "
                   "SamplingBatchInfo raises IndexError, the TP1 scheduler dies and SIGQUITs the main process, which "
                   "kills the tree (July 2025 sgl-workspace image, 0.4.8.postN; version ours). Traceback and `Received "
                   "sigquit from a child process` verbatim (the report also shows the same IndexError on TP6, not "
                   "repeated here). Restart=always brings the unit back and it serves again: still an incident.")


@case3
def exc3_sgl_043_lora_decode_illegal_memory() -> Case:
    c = Case("exc3_sgl_043_lora_decode_illegal_memory", "sglang", "0.4.3.post2", day=13, hour=5,
             model="/models/Qwen2.5-7B-Instruct")
    sw = "/sgl-workspace/sglang/python/sglang/srt"
    inv = c.start()
    sglang_boot(c, inv)
    sglang_decode(c, inv, 6, tput=1850.0, running=32)
    sglang_sched_exception(c, inv, [
        f'  File "{sw}/managers/scheduler.py", line 1825, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/_contextlib.py", line 116, in decorate_context',
        "    return func(*args, **kwargs)",
        f'  File "{sw}/managers/scheduler.py", line 519, in event_loop_overlap',
        "    self.process_batch_result(tmp_batch, tmp_result)",
        f'  File "{sw}/managers/scheduler.py", line 1116, in process_batch_result',
        "    self.process_batch_result_decode(batch, result)",
        f'  File "{sw}/managers/scheduler.py", line 1308, in process_batch_result_decode',
        "    self.current_stream.synchronize()",
        '  File "/usr/local/lib/python3.10/dist-packages/torch/cuda/streams.py", line 100, in synchronize',
        "    super().synchronize()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ] + CUDA_ERR_TAIL + [""])
    c.app(inv, c.slog("Received sigquit from a child proces. It usually means the child failed.", None), dt=0.02)
    c.exit(inv, "killed", "9")
    c.extra["systemctl_show"] = {"ActiveState": "failed", "SubState": "failed", "Result": "signal", "MainPID": "0",
                                 "NRestarts": "0"}
    c.extra["unit_file"] = ("[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            f"{c.model} --lora-paths adapter0=/models/lora/qwen7b-sft-a adapter1=/models/lora/"
                            "qwen7b-sft-b --max-loras-per-batch 4\nRestart=no\n")
    c.extra["kernel_journal"] = []
    return expect3(c, "engine_exception", False, ["RuntimeError: CUDA error: an illegal memory access was encountered"],
                   ["healthy", "gpu_hardware_xid", "cuda_oom_runtime", "unknown"],
                   "https://github.com/sgl-project/sglang/issues/3713",
                   "SGLang (February 2025, sgl-workspace image, 0.4.3.postN) serving with LoRA adapters crashes after a "
                   "while: the overlap scheduler's process_batch_result_decode synchronize() surfaces CUDA's illegal "
                   "memory access. The `Scheduler hit an exception` traceback and the main process's `Received sigquit "
                   "from a child proces.` (sic, that version's typo) are verbatim; adapters and paths ours. No Xid in "
                   "the kernel log (empty window). Restart=no: the unit stays failed.")


@case3
def exc3_vllm_091_flashinfer_sampler_illegal_memory() -> Case:
    c = Case("exc3_vllm_091_flashinfer_sampler_illegal_memory", "vllm", "0.9.1", day=14, hour=5, tp=4,
             model="/models/Qwen3-32B")
    dp = "/usr/local/lib/python3.12/dist-packages"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 4)
    w = c._proc(inv, "worker1")[0]
    tag = f"(VllmWorker rank=3 pid={w}) "
    where = "multiproc_executor.py:527"
    wl = [
        "WorkerProc hit an exception.",
        "Traceback (most recent call last):",
        f"  File {dp}/vllm/v1/executor/multiproc_executor.py, line 522, in worker_busy_loop",
        "    output = func(*args, **kwargs)",
        "             ^^^^^^^^^^^^^^^^^^^^^",
        f"  File {dp}/torch/nn/modules/module.py, line 1762, in _call_impl",
        "    return forward_call(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f"  File {dp}/vllm/v1/sample/ops/topk_topp_sampler.py, line 104, in forward_cuda",
        "    return flashinfer_sample(logits, k, p, generators)",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f"  File {dp}/vllm/v1/sample/ops/topk_topp_sampler.py, line 290, in flashinfer_sample",
        "    next_token_ids = flashinfer.sampling.top_k_top_p_sampling_from_logits(",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ] + CUDA_ERR_TAIL
    for x in wl:
        c.app(inv, tag + c.vlog("ERROR", where, x), "worker1", dt=0.0)
    vllm_engine_dead(c, inv, [
        f'  File "{dp}/vllm/v1/engine/core.py", line 508, in run_engine_core',
        "    engine_core.run_busy_loop()",
        f'  File "{dp}/vllm/v1/engine/core.py", line 535, in run_busy_loop',
        "    self._process_engine_step()",
        f'  File "{dp}/vllm/v1/engine/core.py", line 560, in _process_engine_step',
        "    outputs, model_executed = self.step_fn()",
        f'  File "{dp}/vllm/v1/engine/core.py", line 231, in step',
        "    model_output = self.execute_model(scheduler_output)",
        f'  File "{dp}/vllm/v1/executor/multiproc_executor.py", line 209, in get_response',
        '    raise RuntimeError(',
        "RuntimeError: Worker failed with error 'CUDA error: an illegal memory access was encountered",
    ] + CUDA_ERR_TAIL[:-1] + [CUDA_ERR_TAIL[-1] + "', please check the stack trace above for the root cause"],
        where="core.py:517", restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2)
    c.extra["kernel_journal"] = []
    return expect3(c, "engine_exception", False,
                   ["RuntimeError: CUDA error: an illegal memory access was encountered",
                    "EngineCore encountered a fatal error."],
                   ["healthy", "gpu_hardware_xid", "unknown", "cuda_oom_runtime"],
                   "https://github.com/vllm-project/vllm/issues/19483",
                   "vLLM 0.9.1 docker image, TP=4: the FlashInfer top-k/top-p sampler hits an illegal memory access "
                   "(`sampled_token_ids.tolist()` in the title). Worker rank 3's frames at multiproc_executor.py:527 "
                   "are verbatim (without the report's ANSI colour); worker_busy_loop frame, error line with torch's "
                   "CUDA lines and the EngineCore `Worker failed with error` wrapper follow vLLM 0.9's template. V1 "
                   "exits 0 after the API server's shutdown; Restart=always serves again: still an incident.")


@case3
def exc3_vllm_0112_async_sched_placeholder_assert_exit0() -> Case:
    c = Case("exc3_vllm_0112_async_sched_placeholder_assert_exit0", "vllm", "0.11.2", day=15, hour=5, tp=4,
             model="/models/Qwen3-235B-A22B-Instruct-2507-FP8")
    dp = "/usr/local/lib/python3.12/dist-packages/vllm"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 5)
    vllm_engine_dead(c, inv, [
        f'  File "{dp}/v1/engine/core.py", line 836, in run_engine_core',
        "    engine_core.run_busy_loop()",
        f'  File "{dp}/v1/engine/core.py", line 863, in run_busy_loop',
        "    self._process_engine_step()",
        f'  File "{dp}/v1/engine/core.py", line 892, in _process_engine_step',
        "    outputs, model_executed = self.step_fn()",
        "                              ^^^^^^^^^^^^^^",
        f'  File "{dp}/v1/engine/core.py", line 441, in step_with_batch_queue',
        "    engine_core_outputs = self.scheduler.update_from_output(",
        f'  File "{dp}/v1/core/sched/scheduler.py", line 1007, in update_from_output',
        "    new_token_ids, stopped = self._update_request_with_output(",
        f'  File "{dp}/v1/core/sched/async_scheduler.py", line 42, in _update_request_with_output',
        "    assert request.num_output_placeholders >= 0",
        "AssertionError",
    ], where="core.py:845", restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2)
    c.extra["unit_file"] = (f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model} --tensor-parallel-size 4 "
                            "--max-num-seqs 64 --async-scheduling\nRestart=always\nRestartSec=10\n")
    return expect3(c, "engine_exception", False, ["assert request.num_output_placeholders >= 0"],
                   ["healthy", "unknown", "operator_action"], "https://github.com/vllm-project/vllm/issues/30142",
                   "Qwen3-235B FP8, TP=4, --async-scheduling: the AsyncScheduler's output-placeholder counter goes "
                   "negative and the assert kills EngineCore (report: v0.12.0 docker image, also seen on v0.11.2; built "
                   "here as 0.11.2). `EngineCore encountered a fatal error` at core.py:845 and the assert are the "
                   "report's; the frames' file/line are ours (the assert sits in async_scheduler.py "
                   "_update_request_with_output per the follow-up triage). V1 exits 0 (EngineDeadError, 500s, "
                   "uvicorn's orderly exit: vLLM's template), Restart=always brings it back and it serves again.")


@case3
def exc3_vllm_060_v0_multistep_assert_http_up() -> Case:
    c = Case("exc3_vllm_060_v0_multistep_assert_http_up", "vllm", "0.6.0", v1=False, day=16, hour=5, tp=2,
             model="/models/Qwen2-72B-Instruct-AWQ")
    dp = "/usr/local/lib/python3.10/dist-packages/vllm"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 4)
    where = "async_llm_engine.py:63"
    eng = [
        "Engine background task failed",
        "Traceback (most recent call last):",
        f'  File "{dp}/engine/async_llm_engine.py", line 53, in _log_task_completion',
        "    return_value = task.result()",
        f'  File "{dp}/engine/async_llm_engine.py", line 939, in run_engine_loop',
        "    result = task.result()",
        f'  File "{dp}/engine/async_llm_engine.py", line 868, in engine_step',
        "    request_outputs = await self.engine.step_async(virtual_engine)",
        f'  File "{dp}/engine/async_llm_engine.py", line 345, in step_async',
        "    outputs = await self.model_executor.execute_model_async(",
        '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/_contextlib.py", line 116, in decorate_context',
        "    return func(*args, **kwargs)",
        f'  File "{dp}/worker/multi_step_model_runner.py", line 390, in execute_model',
        "    model_input = self._advance_step(",
        f'  File "{dp}/worker/multi_step_model_runner.py", line 499, in _advance_step',
        "    assert isinstance(attn_metadata, FlashAttentionMetadata)",
        "AssertionError",
    ]
    for x in eng:
        c.app(inv, c.vlog("ERROR", where, x), "engine", dt=0.0)
    c.many(inv, [
        "Exception in callback functools.partial(<function _log_task_completion at 0x7f47d481f640>, error_callback="
        "<bound method AsyncLLMEngine._error_callback of <vllm.engine.async_llm_engine.AsyncLLMEngine object at "
        "0x7f47d13b96f0>>)",
        "handle: <Handle functools.partial(<function _log_task_completion at 0x7f47d481f640>, error_callback=<bound "
        "method AsyncLLMEngine._error_callback of <vllm.engine.async_llm_engine.AsyncLLMEngine object at "
        "0x7f47d13b96f0>>)>",
        "Traceback (most recent call last):",
        f'  File "{dp}/engine/async_llm_engine.py", line 65, in _log_task_completion',
        "    raise AsyncEngineDeadError(",
        "vllm.engine.async_llm_engine.AsyncEngineDeadError: Task finished unexpectedly. This should never happen! "
        "Please open an issue on Github. See stack trace above for the actual cause.",
    ], "engine", dt=0.01)
    for i in range(6):
        c.app(inv, f'INFO:     10.0.3.{7 + i % 2}:5{3301 + 17 * i} - "POST /v1/chat/completions HTTP/1.1" 500 '
                   "Internal Server Error", dt=9.0)
    c.extra["systemctl_show"] = {"ActiveState": "active", "SubState": "running", "MainPID": str(inv.main),
                                 "NRestarts": "0", "Result": "success"}
    c.extra["unit_file"] = ("[Service]\nEnvironment=VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1\nExecStart=/opt/vllm/bin/vllm "
                            f"serve {c.model} --tensor-parallel-size 2 --num-scheduler-steps 8\nRestart=on-failure\n")
    return expect3(c, "engine_exception", False, ["assert isinstance(attn_metadata, FlashAttentionMetadata)"],
                   ["healthy", "unknown"], "https://github.com/vllm-project/vllm/issues/8194",
                   "vLLM 0.6.0 (V0, --num-scheduler-steps): the multi-step runner asserts FlashAttention metadata and "
                   "the AsyncLLMEngine background loop dies (`Engine background task failed` at async_llm_engine.py:63, "
                   "frames from multi_step_model_runner and the `Exception in callback functools.partial(...)` block "
                   "verbatim; the outer frames between them and the AsyncEngineDeadError message follow vLLM 0.6's "
                   "template). With VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1 in the unit (ours) the process and its HTTP "
                   "server stay up and answer 500 to every request, as in the report: the unit is `active (running)` "
                   "but the engine is dead.")


# ============================== unknown ========================================================


@case3
def unk3_vllm_0110_enginecore_died_unexpectedly_exit0() -> Case:
    c = Case("unk3_vllm_0110_enginecore_died_unexpectedly_exit0", "vllm", "0.11.0", day=17, hour=5,
             model="/models/Qwen3-30B-A3B-Instruct-2507")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 5)
    c.app(inv, c.vlog("ERROR", "core_client.py:564", "Engine core proc EngineCore_DP0 died unexpectedly, shutting "
                      "down client."), dt=3.1)
    c.app(inv, c.vlog("ERROR", "async_llm.py:485", "AsyncLLM output_handler failed."), dt=0.05)
    c.app(inv, c.vlog("ERROR", "async_llm.py:485", "Traceback (most recent call last):"))
    c.app(inv, c.vlog("ERROR", "async_llm.py:485", "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered "
                      "an issue. See stack trace (above) for the root cause."))
    for i in range(3):
        c.app(inv, f'INFO:     10.0.3.{7 + i}:5{4410 + 23 * i} - "POST /v1/chat/completions HTTP/1.1" 500 Internal '
                   "Server Error", dt=0.02)
    c.app(inv, "INFO:     Shutting down", dt=4.0)
    c.app(inv, "INFO:     Waiting for application shutdown.")
    c.app(inv, "INFO:     Application shutdown complete.")
    c.app(inv, f"INFO:     Finished server process [{inv.main}]")
    c.clean_exit(inv, restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2)
    no_side_cause(c)
    return expect3(c, "unknown", False, ["Engine core proc EngineCore_DP0 died unexpectedly, shutting down client."],
                   ["healthy", "operator_action", "host_oom_kill"], "https://github.com/vllm-project/vllm/issues/27549",
                   "vLLM 0.11 (torch 2.8): EngineCore_DP0 disappears while serving with no traceback; the API server's "
                   "`[core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.` is "
                   "the report's title, verbatim. The EngineDeadError lines, 500s and uvicorn's orderly exit are vLLM's "
                   "template (FORMATS b.4/b.5): exit 0, Restart=always serves again. No OOM kill in the kernel log, no "
                   "action in the audit log: nothing names a cause.")


@case3
def unk3_vllm_084_arctic_fatal_signal_sigkill_loop() -> Case:
    c = Case("unk3_vllm_084_arctic_fatal_signal_sigkill_loop", "vllm", "0.8.4", day=18, hour=5, tp=4,
             model="/models/Llama-3.1-8B-Instruct")
    for k in range(3):
        inv = c.start(dt=0.3 if k == 0 else 0.1)
        vllm_boot(c, inv, "load")
        c.app(inv, c.vlog("INFO", "loader.py:458", "Loading weights took 3.07 seconds"), "worker", dt=3.1)
        c.app(inv, "Process SpawnProcess-1:1:", "worker", dt=0.2)
        c.app(inv, c.vlog("CRITICAL", "ulysses.py:230", "MulitprocExecutor got fatal signal from worker processes, "
                          "shutting down. See stack trace above for root cause issue."), "engine", dt=0.01)
        c.app(inv, c.vlog("CRITICAL", "core_client.py:359", "Got fatal signal from worker processes, shutting down. "
                          "See stack trace above for root cause issue."), dt=0.01)
        c.app(inv, "Traceback (most recent call last):", "worker", dt=0.01)
        c.exit(inv, "killed", "9", restart=True, cpu="38.402s", dt=0.2)
    inv = c.start(dt=0.1)
    vllm_boot(c, inv, "load")
    no_side_cause(c)
    c.extra["unit_file"] = ("[Service]\nExecStart=/opt/vllm/bin/vllm serve /models/Llama-3.1-8B-Instruct "
                            "--tensor-parallel-size 4 --speculative-config '{\"method\": \"arctic\", \"model\": "
                            "\"Snowflake/Arctic-LSTM-Speculator-Llama-3.1-8B-Instruct\", \"num_speculative_tokens\": 3, "
                            "\"enable_suffix_decoding\": true}'\nRestart=on-failure\nRestartSec=10\n")
    return expect3(c, "unknown", True,
                   ["Got fatal signal from worker processes, shutting down. See stack trace above for root cause issue.",
                    "status=9/KILL"],
                   ["healthy", "host_oom_kill", "operator_action"],
                   "https://github.com/snowflakedb/ArcticInference/issues/37",
                   "vLLM 0.8.4 V1 with the ArcticInference plugin (speculator), TP=4 on RTX 3080s: right after weight "
                   "loading a worker dies; `Process SpawnProcess-1:1:`, both CRITICAL `got fatal signal` lines and the "
                   "lone `Traceback (most recent call last):` are verbatim and are 'all that is printed' (the report); "
                   "vLLM then SIGKILLs its own tree (the report's shell printed `Killed`; here systemd's "
                   "code=killed, status=9/KILL). The maintainer only guesses GPU memory. No OOM kill in the kernel "
                   "log, no audit action: unknown. Restart=on-failure, three identical failures (loop).")


@case3
def unk3_vllm_064_engine_process_died_no_restart() -> Case:
    c = Case("unk3_vllm_064_engine_process_died_no_restart", "vllm", "0.6.4.post1", v1=False, day=19, hour=5, tp=8,
             model="/models/Meta-Llama-3.1-405B-Instruct-FP8")
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 5)
    eng = c._proc(inv, "engine")[0]
    c.many(inv, [
        c.vlog("ERROR", "client.py:282", f"RuntimeError('Engine process (pid {eng}) died.')"),
        c.vlog("ERROR", "client.py:282", "NoneType: None"),
        c.vlog("CRITICAL", "launcher.py:99", "MQLLMEngine is already dead, terminating server process"),
        'INFO:     10.42.0.118:60606 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error',
        "INFO:     Shutting down",
        "INFO:     Waiting for connections to close. (CTRL+C to force quit)",
    ], dt=0.4)
    c.app(inv, "INFO:     Waiting for application shutdown.", dt=31.0)
    c.app(inv, "INFO:     Application shutdown complete.")
    c.app(inv, f"INFO:     Finished server process [{inv.main}]")
    c.clean_exit(inv)
    c.extra["systemctl_show"] = {"ActiveState": "inactive", "SubState": "dead", "MainPID": "0", "NRestarts": "0",
                                 "ExecMainCode": "1", "ExecMainStatus": "0", "Result": "success"}
    c.extra["unit_file"] = (f"[Service]\nExecStart=/opt/vllm/bin/vllm serve {c.model} --tensor-parallel-size 8 "
                            "--enable-chunked-prefill false --enable-prefix-caching --num-scheduler-steps 8\n"
                            "Restart=on-failure\n")
    no_side_cause(c)
    return expect3(c, "unknown", False, ["RuntimeError('Engine process (pid", "MQLLMEngine is already dead"],
                   ["healthy", "operator_action", "host_oom_kill"], "https://github.com/vllm-project/vllm/issues/10812",
                   "vLLM 0.6.4.post1 (V0, MQLLMEngine), FP8 model on 8x H100: every few hours the engine process dies "
                   "with no exception (`NoneType: None`). The client.py:282/launcher.py:99 lines, the 500 and uvicorn's "
                   "`Waiting for connections to close` are verbatim (engine pid ours). The API server exits 0, so "
                   "Restart=on-failure does not restart: the unit ends inactive. Nothing names a cause.")


@case3
def unk3_sgl_041_retract_flood_suppressed() -> Case:
    c = Case("unk3_sgl_041_retract_flood_suppressed", "sglang", "0.4.1", day=20, hour=5, tp=8,
             model="/models/DeepSeek-V3")
    inv = c.start()
    sglang_boot(c, inv)
    for i in range(5):
        c.app(inv, c.slog(f"Decode batch. #running-req: 2, #token: {307481 + 80 * i}, token usage: 1.00, gen "
                          f"throughput (token/s): 10.9{2 + i % 3}, #queue-req: 0"), "sched", dt=7.4)
    for k in range(6):
        for role, rank in (("sched", "TP0"), ("sched1", "TP1")):
            c.app(inv, c.slog(f"Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: "
                              f"0.{980 + k:04d} -> 0.9446", rank), role, dt=0.02)
        c.app(inv, c.slog(f"Decode batch. #running-req: 2, #token: {307801 + 40 * k}, token usage: 1.00, gen "
                          "throughput (token/s): 10.94, #queue-req: 0"), "sched", dt=3.6)
    c.suppressed(inv, 18734, dt=1.5)
    c.exit(inv, "killed", "9", restart=True, dt=21.0, cpu="3h 12min 40.117s")
    inv2 = c.start(dt=0.1)
    sglang_boot(c, inv2, "weights")
    no_side_cause(c)
    return expect3(c, "unknown", False, ["Suppressed 18734 messages from sglang.service"],
                   ["healthy", "kv_cache_oom", "operator_action"], "https://github.com/sgl-project/sglang/issues/2746",
                   "DeepSeek-V3 on SGLang 0.4.1, TP=8, at token usage 1.00: `Decode batch` lines at ~10.9 tok/s and "
                   "`Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: ... -> 0.9446` on every rank "
                   "(verbatim shapes from the report; here only TP0/TP1 are written). The retraction storm trips "
                   "journald's rate limit (`Suppressed 18734 messages`, ours) and the main process is SIGKILLed inside "
                   "the suppressed window: whatever the scheduler printed is gone. Retraction alone is handled KV "
                   "pressure, no OOM kill in the kernel log, no audit action: unknown. Restart=on-failure restarts it "
                   "once; the new start is loading at the end.")
