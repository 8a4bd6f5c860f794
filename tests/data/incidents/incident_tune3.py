"""Tune cases added in the third round (2026-12-02): new wordings from public reports, labelled by the rules of
docs/DIAGNOSIS.md "Labels" before the diagnoser was run on them. Split like the first corpus (`residue_split`)
(SHA-1 residue), so about a third of them land in the (retired) holdout."""

from __future__ import annotations

from incident_kit import STAMP_V, Case, Inv  # noqa: F401
from incident_registry import registry, residue_split
from incident_scenes import sglang_boot, sglang_sched_exception, sglang_sigquit, vllm_boot, vllm_serve

TUNE3, case_t3, expect = registry(residue_split)


# ============================== bad_argument ===================================================


@case_t3
def arg_vllm_027_batched_tokens_below_model_len_loop() -> Case:
    c = Case("arg_vllm_027_batched_tokens_below_model_len_loop", "vllm", "0.2.7", v1=False, day=1, hour=5,
             model="mistralai/Mistral-7B-v0.1")
    for k in range(5):
        inv = c.start(dt=0.1)
        c.app(inv, c.vlog("INFO", "api_server.py:727", "args: Namespace(host=None, port=7080, allow_credentials=False, "
                          "served_model_name=None, model='mistralai/Mistral-7B-v0.1', tokenizer=None, "
                          "tensor_parallel_size=1, max_num_batched_tokens=4096, max_num_seqs=256, "
                          "gpu_memory_utilization=0.9, swap_space=16, disable_log_stats=False)"), dt=3.0)
        c.many(inv, [
            "Traceback (most recent call last):",
            "ValueError: max_num_batched_tokens (4096) is smaller than max_model_len (32768). This effectively limits "
            "the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please "
            "increase max_num_batched_tokens or decrease max_model_len.",
        ], dt=0.4)
        c.exit(inv, "exited", "1", restart=k < 4, cpu="5.212s")
    c.start_limit(inv)
    c.extra["unit_file"] = ("[Service]\nExecStart=/opt/vllm/bin/python3 -m vllm.entrypoints.openai.api_server "
                            "--model mistralai/Mistral-7B-v0.1 --port 7080 --max-num-batched-tokens 4096\n"
                            "Restart=always\nRestartSec=10\n")
    return expect(c, "bad_argument", True, ["max_num_batched_tokens (4096) is smaller than max_model_len (32768)"],
                  ["healthy", "model_load_failure", "kv_cache_oom"],
                  "https://github.com/GoogleCloudPlatform/vertex-ai-samples/issues/2620",
                  "The Mistral-7B vLLM notebook's deployment (January 2024, vLLM 0.2.x: version estimated) fails in "
                  "SchedulerConfig's argument check: the ValueError line is verbatim from the report's log. The "
                  "`args: Namespace(...)` line (shortened) and the bare `Traceback` head are ours (frames cut). "
                  "Restart=always: five fast failures, then systemd's start limit. An option value (max-num-batched-"
                  "tokens below the model's 32k context) is rejected before any weight is read: bad_argument, not a "
                  "model or memory problem.")



@case_t3
def arg_sgl_05x_diffusion_sp_degree_mismatch() -> Case:
    c = Case("arg_sgl_05x_diffusion_sp_degree_mismatch", "sglang", "0.5.17", day=8, hour=5, tp=2,
             model="/data01/models/MiniMax-H3")
    inv = c.start()
    c.many(inv, [
        "Traceback (most recent call last):",
        "ValueError: sp_degree (8) must equal ring_degree * ulysses_degree (2 * 2 = 4)",
    ], dt=3.5)
    c.exit(inv, "exited", "1", cpu="4.018s")
    c.extra["unit_file"] = ("[Service]\nExecStart=/opt/sglang/bin/sglang serve --model-path /data01/models/MiniMax-H3 "
                            "--model-variant fl2va --num-gpus 8 --tp-size 2 --ulysses-degree 2 --ring-degree 2 "
                            "--sp-degree 8 --host 0.0.0.0 --port 30010\nRestart=no\n")
    c.extra["systemctl_show"] = {"ActiveState": "failed", "SubState": "failed", "MainPID": "0", "NRestarts": "0",
                                 "Result": "exit-code", "ExecMainCode": "1", "ExecMainStatus": "1"}
    return expect(c, "bad_argument", False, ["sp_degree (8) must equal ring_degree * ulysses_degree"],
                  ["healthy", "model_load_failure", "nccl_failure", "unknown"],
                  "https://github.com/sgl-project/sglang/pull/37823",
                  "SGLang's own ServerArgs check (multimodal_gen/runtime/server_args/server_args.py:3607 per the report) "
                  "rejects the command the MiniMax-H3 cookbook panel renders with tensor and ring parallelism: "
                  "--sp-degree is the world size (8) instead of ring x ulysses (4). The ValueError line is verbatim "
                  "(September 2026; SGLang version estimated); the bare `Traceback` head (frames cut), the unit file "
                  "and systemd's lines are ours. Raised while resolving arguments, before any model file is read: "
                  "bad_argument. Restart=no, one failure.")

# ============================== engine_exception ===============================================


@case_t3
def exc_vllm_v0_073_model_exec_assert_mq_dead() -> Case:
    c = Case("exc_vllm_v0_073_model_exec_assert_mq_dead", "vllm", "0.7.3", v1=False, day=2, hour=5,
             model="/models/Qwen2.5-7B-Instruct")
    dp = "/usr/local/lib/python3.12/dist-packages"
    dump = "/tmp/err_execute_model_input_20250317-080027.pkl"
    inv = c.start()
    vllm_boot(c, inv)
    vllm_serve(c, inv, 3)
    eng = [
        f"AssertionError('Error in model execution (input dumped to {dump}): ')",
        "Traceback (most recent call last):",
        f'  File "{dp}/torch/utils/_contextlib.py", line 116, in decorate_context',
        "    return func(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/vllm/worker/model_runner_base.py", line 152, in _wrapper',
        "    raise type(err)(",
        f"AssertionError: Error in model execution (input dumped to {dump}): ",
    ]
    for line in eng:
        c.app(inv, c.vlog("ERROR", "engine.py:137", line), "engine", dt=0.0)
    api = [
        "Error in chat completion stream generator.",
        "Traceback (most recent call last):",
        f'  File "{dp}/vllm/entrypoints/openai/serving_chat.py", line 320, in chat_completion_stream_generator',
        "    async for res in result_generator:",
        f'  File "{dp}/vllm/engine/multiprocessing/client.py", line 656, in _process_request',
        "    raise request_output",
        "vllm.engine.multiprocessing.MQEngineDeadError: Engine loop is not running. Inspect the stacktrace to find the "
        f"original error: AssertionError('Error in model execution (input dumped to {dump}): ').",
    ]
    for line in api:
        c.app(inv, c.vlog("ERROR", "serving_chat.py:596", line), dt=0.0)
    c.many(inv, [
        c.vlog("CRITICAL", "launcher.py:101", "MQLLMEngine is already dead, terminating server process"),
        'INFO:     10.0.3.7:52990 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
        "INFO:     Shutting down",
        "INFO:     Waiting for application shutdown.",
        "INFO:     Application shutdown complete.",
        f"INFO:     Finished server process [{inv.main}]",
    ], dt=0.3)
    c.clean_exit(inv, restart=True)
    inv2 = c.start(dt=0.1)
    vllm_boot(c, inv2)
    vllm_serve(c, inv2, 2)
    return expect(c, "engine_exception", False,
                  ["AssertionError: Error in model execution (input dumped to /tmp/err_execute_model_input_"],
                  ["healthy", "unknown", "operator_action"], "https://github.com/LMCache/LMCache/issues/411",
                  "vLLM V0 (MQLLMEngine, March 2025; 0.7.3 estimated) with LMCache: the engine process's traceback tail "
                  "(`engine.py:137`, model_runner_base `_wrapper`, the AssertionError with the input dump) and the API "
                  "server's `MQEngineDeadError: Engine loop is not running ...` are verbatim; the repr head and "
                  "`Traceback` line of the engine block, the launcher's CRITICAL `MQLLMEngine is already dead` line, "
                  "the 500 and uvicorn's shutdown are vLLM 0.7's templates (ours). The wrapper names a concrete root "
                  "cause (an exception in model execution), so engine_exception, not unknown. Exit 0, Restart=always "
                  "serves again: not a loop.")


@case_t3
def exc_sgl_049_triton_smem_out_of_resources() -> Case:
    c = Case("exc_sgl_049_triton_smem_out_of_resources", "sglang", "0.4.9.post6", day=3, hour=5, tp=4,
             model="/xrepo/Athena/Model/GLM/GLM-4.5-Air-FP8")
    sp = "/xrepo/Athena/Agent/SGLang/sglang_env/lib/python3.12/site-packages"
    inv = c.start()
    sglang_boot(c, inv)
    for tok, g in ((1293, "67.43"), (1333, "74.53"), (1373, "63.44"), (1413, "64.64"), (1453, "69.11"),
                   (1493, "58.16"), (1533, "67.44"), (1573, "69.98")):
        c.app(inv, c.slog(f"Decode batch. #running-req: 1, #token: {tok}, token usage: 0.01, cuda graph: True, gen "
                          f"throughput (token/s): {g}, #queue-req: 0,"), "sched", dt=0.6)
    c.app(inv, c.slog('INFO:     127.0.0.1:51220 - "POST /v1/chat/completions HTTP/1.1" 200 OK', None), dt=0.3)
    sglang_sched_exception(c, inv, [
        f'  File "{sp}/sglang/srt/model_executor/model_runner.py", line 1551, in forward_extend',
        "    return self.model.forward(",
        "           ^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/torch/utils/_contextlib.py", line 116, in decorate_context',
        "    return func(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/sglang/srt/models/deepseek_v2.py", line 2177, in forward',
        "    hidden_states = self.model(input_ids, positions, forward_batch, input_embeds)",
        f'  File "{sp}/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl',
        "    return self._call_impl(*args, **kwargs)",
        f'  File "{sp}/torch/nn/modules/module.py", line 1762, in _call_impl',
        "    return forward_call(*args, **kwargs)",
        f'  File "{sp}/sglang/srt/models/deepseek_v2.py", line 2070, in forward',
        "    hidden_states, residual = layer(",
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 147456, Hardware limit: "
        "101376. Reducing block sizes or `num_stages` may help.",
        "",
    ])
    sglang_sigquit(c, inv, serving=True)
    c.app(inv, c.slog("Dumping requests before crash. self.crash_dump_folder=None", None))
    c.exit(inv, "killed", "9", restart=True, cpu="6min 2.118s")
    inv2 = c.start(dt=0.1)
    sglang_boot(c, inv2)
    return expect(c, "engine_exception", False,
                  ["triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 147456"],
                  ["healthy", "cuda_oom_runtime", "kv_cache_oom", "unknown"],
                  "https://github.com/sgl-project/sglang/issues/8513",
                  "GLM-4.5-Air-FP8 on 4 GPUs (July 2025; 0.4.9.post6 estimated): after minutes of decoding, a Triton "
                  "kernel needs more shared memory than the GPU has and the TP0 scheduler dies. Decode lines, the "
                  "model frames, the OutOfResources line, `Received sigquit from a child process` and `Dumping "
                  "requests before crash` are verbatim; the scheduler's own frames above forward_extend are cut in our "
                  "copy and the `Scheduler hit an exception` head is SGLang's template. The report's `Killed` is the "
                  "main process killing itself (systemd: status=9/KILL, no OOM killer). `out of resource: shared "
                  "memory` is a per-kernel SRAM limit, not GPU memory: engine_exception, not an OOM label. "
                  "Restart=always: the restarted unit is ready again at the end of the window.")


# ============================== segfault =======================================================


@case_t3
def seg_vllm_060_gguf_tp4_killed_segv_loop() -> Case:
    c = Case("seg_vllm_060_gguf_tp4_killed_segv_loop", "vllm", "0.6.0", v1=False, day=4, hour=5, tp=4,
             model="/workspace/model/llm/Mistral/Mistral-Large-Instruct-2407/Mistral-Large-Instruct-2407-IQ1_M.gguf")
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, c.vlog("INFO", "llm_engine.py:213", "Initializing an LLM engine (v0.6.0) with config: model="
                          f"'{c.model}', speculative_config=None, tokenizer='/workspace/model/llm/Mistral/Mistral-Large-"
                          "Instruct-2407/', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
                          "trust_remote_code=True, dtype=torch.float16, max_seq_len=32768, load_format=LoadFormat.GGUF, "
                          "tensor_parallel_size=4, pipeline_parallel_size=1, disable_custom_all_reduce=True, "
                          "quantization=gguf, enforce_eager=True"), dt=6.0)
        c.many(inv, [
            c.vlog("WARNING", "multiproc_gpu_executor.py:56", "Reducing Torch parallelism from 72 threads to 1 to "
                   "avoid unnecessary CPU contention. Set OMP_NUM_THREADS in the external environment to tune this "
                   "value as needed."),
            c.vlog("INFO", "custom_cache_manager.py:17", "Setting Triton cache manager to: "
                   "vllm.triton_utils.custom_cache_manager:CustomCacheManager"),
        ], dt=0.5)
        for role in ("worker", "worker1"):
            c.app(inv, c.vlog("INFO", "multiproc_worker_utils.py:215", "Worker ready; awaiting tasks"), role, dt=0.2)
            c.app(inv, c.vlog("INFO", "utils.py:977", "Found nccl from library libnccl.so.2"), role)
        c.app(inv, c.vlog("INFO", "utils.py:977", "Found nccl from library libnccl.so.2"), dt=0.01)
        c.exit(inv, "killed", "11", restart=True, dt=1.5, cpu="41.877s")
    app_cmd = "/opt/vllm/bin/python3 /srv/llm/app.py"
    for d in c.lines:  # the unit runs the report's FastAPI app (LLM(...) inside uvicorn), not `vllm serve`
        if d.get("_CMDLINE", "").startswith("/opt/vllm/bin/python3 /opt/vllm/bin/vllm serve"):
            d["_CMDLINE"] = app_cmd
        if d.get("_SYSTEMD_UNIT") == c.unit:
            d["SYSLOG_IDENTIFIER"] = "python3"
            if d.get("_COMM") == "vllm":
                d["_COMM"] = "python3"
    c.extra["unit_file"] = (f"[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=4,5,6,7\nExecStart={app_cmd}\n"
                            "LimitCORE=0\nRestart=on-failure\nRestartSec=10\n")
    c.extra["systemctl_show"] = {"ActiveState": "activating", "SubState": "auto-restart", "MainPID": "0",
                                 "NRestarts": str(c.restarts), "Result": "signal", "ExecMainCode": "2",
                                 "ExecMainStatus": "11"}
    return expect(c, "segfault", True, ["code=killed, status=11/SEGV"],
                  ["healthy", "host_oom_kill", "operator_action", "nccl_failure"],
                  "https://github.com/vllm-project/vllm/issues/8321",
                  "A FastAPI app that builds `LLM(...)` (GGUF Mistral-Large IQ1_M, tensor_parallel_size=4, 4x4090; "
                  "September 2024, 0.6.0 estimated) dies right after the workers find NCCL, with no Python error: "
                  "the report's only error is the shell's `段错误 (核心已转储)` (Segmentation fault, core dumped). The "
                  "vLLM lines are verbatim (the report cut the driver's `Found nccl` line; completed), the engine-config "
                  "line is vLLM 0.6's template (ours). As a unit with LimitCORE=0 (ours) the segfault of the main "
                  "process shows only as systemd's `code=killed, status=11/SEGV`; Restart=on-failure meets it three "
                  "times: a loop.")


# ============================== model_load_failure =============================================


@case_t3
def load_vllm_085_invalid_repo_id_dir_loop() -> Case:
    c = Case("load_vllm_085_invalid_repo_id_dir_loop", "vllm", "0.8.5", day=5, hour=5, model="/models")
    ns = ("args: Namespace(host=None, port=8000, uvicorn_log_level='info', disable_uvicorn_access_log=False, "
          "allow_credentials=False, allowed_origins=['*'], allowed_methods=['*'], allowed_headers=['*'], api_key=None, "
          "lora_modules=None, prompt_adapters=None, chat_template=None, chat_template_content_format='auto', "
          "response_role='assistant', ssl_keyfile=None, ssl_certfile=None, ssl_ca_certs=None, enable_ssl_refresh=False, "
          "ssl_cert_reqs=0, root_path=None, middleware=[], return_tokens_as_token_ids=False, "
          "disable_frontend_multiprocessing=False, enable_request_id_headers=False, model='/models')")
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, c.vlog("INFO", "__init__.py:239", "Automatically detected platform cuda."), dt=7.0)
        c.app(inv, c.vlog("INFO", "api_server.py:1043", "vLLM API server version 0.8.5"), dt=7.3)
        c.app(inv, c.vlog("INFO", "api_server.py:1044", ns))
        c.many(inv, [
            "Traceback (most recent call last):",
            "ValueError: Invalid repository ID or local directory specified: '/models'.",
            "Please verify the following requirements:",
            "1. Provide a valid Hugging Face repository ID.",
            "2. Specify a local directory that contains a recognized configuration file.",
            "   - For Hugging Face models: ensure the presence of a 'config.json'.",
            "   - For Mistral models: ensure the presence of a 'params.json'.",
            "",
        ], dt=0.6)
        c.exit(inv, "exited", "1", restart=True, cpu="12.804s")
    return expect(c, "model_load_failure", True, ["Invalid repository ID or local directory specified: '/models'"],
                  ["healthy", "unknown", "engine_exception"], "https://github.com/zstar1003/ragflow-plus/issues/64",
                  "ragflow-plus's vLLM 0.8.5 container for the bge embedding model cannot start: the mounted `/models` "
                  "holds no config.json. Platform/version lines and the ValueError's text are verbatim (timestamps, "
                  "pids ours); the `args: Namespace(...)` line is cut after `enable_request_id_headers=False` in the "
                  "report and closed by us, the bare `Traceback` head is ours (frames cut). The "
                  "container restarted about every 3.5 min in the report; here Restart=always, three failing starts.")


# ============================== port_in_use ====================================================


@case_t3
def port_sgl_05x_metrics_port_not_available_loop() -> Case:
    c = Case("port_sgl_05x_metrics_port_not_available_loop", "sglang", "0.5.12", day=6, hour=5,
             model="/var/lib/gpustack/cache/Qwen3-8B")
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, None, dt=4.0)  # server_args=ServerArgs(...) is ~10 KB: null in journalctl -o json
        c.many(inv, [
            "Traceback (most recent call last):",
            "ValueError: metrics_port at 40290 is not available in 30 seconds. metrics_port is used by a process "
            "already. process.name()='sglang' process.cmdline()=",
        ], dt=30.0)
        c.exit(inv, "exited", "1", restart=True, cpu="9.406s")
    c.extra["ss_listen"] = [{"local": "0.0.0.0:40290", "pid": 48122, "process": "sglang", "user": "gpustack"}]
    return expect(c, "port_in_use", True, ["metrics_port at 40290 is not available in 30 seconds"],
                  ["healthy", "bad_argument", "unknown", "engine_exception"],
                  "https://github.com/gpustack/gpustack/issues/5842",
                  "SGLang's own wording of a taken port (not uvicorn's Errno 98): its port check waits 30 s for "
                  "metrics_port and gives up because a process named `sglang` still holds it. The ValueError line is "
                  "verbatim as cut in the report (July 2026, GPUStack; SGLang version estimated); the `Traceback` "
                  "head, the 30 s wait and the ss side evidence (holder pid) are ours. Restart=always, three failing "
                  "starts against the same holder: a loop.")


# ============================== nccl_failure ===================================================


@case_t3
def nccl_vllm_022_omni_unhandled_cuda_999() -> Case:
    c = Case("nccl_vllm_022_omni_unhandled_cuda_999", "vllm", "0.22.0", day=7, hour=5, tp=2,
             model="black-forest-labs/FLUX.2-dev")
    inv = c.start()
    c.app(inv, c.vlog("INFO", "api_server.py:1972", f"vLLM API server version {c.version}"), dt=4.0)
    c.app(inv, c.vlog("INFO", "utils.py:278", "non-default args: {'model_tag': 'black-forest-labs/FLUX.2-dev', "
                      "'host': '127.0.0.1', 'port': 43365, 'model': 'black-forest-labs/FLUX.2-dev'}"))
    c.app(inv, c.vlog("ERROR", "multiproc_executor.py:870", "torch.distributed.DistBackendError: NCCL error in: "
                      "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, unhandled cuda error (run with "
                      "NCCL_DEBUG=INFO for details), NCCL version 2.28.9"), "worker", dt=40.0)
    c.many(inv, [
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 999 'unknown error'",
    ], "worker")
    c.exit(inv, "exited", "1", cpu="1min 2.250s")
    c.extra["unit_file"] = ("[Service]\nExecStart=/usr/bin/python3 -m vllm_omni.entrypoints.cli.main serve "
                            "black-forest-labs/FLUX.2-dev --host 127.0.0.1 --port 43365 --omni --enable-cpu-offload "
                            "--ulysses-degree 2 --stage-init-timeout 600 --init-timeout 900 --log-stats\n")
    return expect(c, "nccl_failure", False, ["ncclUnhandledCudaError: Call to CUDA function failed."],
                  ["healthy", "unknown", "engine_exception"], "https://github.com/vllm-project/vllm-omni/issues/4163",
                  "vllm-omni CI (vLLM 0.22.0) serving FLUX.2-dev with Ulysses degree 2: setting up the collective fails "
                  "with torch's DistBackendError and NCCL's own `ncclUnhandledCudaError: Call to CUDA function failed.` "
                  "/ `Cuda failure 999 'unknown error'` (lines verbatim; the report elided the `ERROR ...` prefix, ours "
                  "here, as are the start-up lines and pids). No Xid in the window, so nccl_failure. Restart=no.")


@case_t3
def arg_vllm_0111_pydantic_scheduler_config_loop() -> Case:
    c = Case("arg_vllm_0111_pydantic_scheduler_config_loop", "vllm", "0.11.1", day=9, hour=5, model="Qwen/Qwen3-8B")
    for _ in range(3):
        inv = c.start(dt=0.1)
        c.app(inv, c.vlog("INFO", "api_server.py:1839", "vLLM API server version 0.11.1"), dt=2.5)
        c.app(inv, c.vlog("INFO", "utils.py:233", "non-default args: {'model_tag': 'Qwen/Qwen3-8B', 'model': "
                          "'Qwen/Qwen3-8B', 'enable_chunked_prefill': False}"))
        c.many(inv, [
            "Traceback (most recent call last):",
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig",
            "  Value error, max_num_batched_tokens (2048) is smaller than max_model_len (40960). This effectively "
            "limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. "
            "Please increase max_num_batched_tokens or decrease max_model_len. [type=value_error, "
            "input_value=ArgsKwargs((), {'runner_t..., 'stream_interval': 1}), input_type=ArgsKwargs]",
            "    For further information visit https://errors.pydantic.dev/2.12/v/value_error",
        ], dt=0.3)
        c.exit(inv, "exited", "1", restart=True, cpu="6.102s")
    c.extra["unit_file"] = ("[Service]\nExecStart=/opt/vllm/bin/vllm serve Qwen/Qwen3-8B --no-enable-chunked-prefill\n"
                            "Restart=always\nRestartSec=10\n")
    return expect(c, "bad_argument", True, ["Value error, max_num_batched_tokens (2048) is smaller than max_model_len"],
                  ["healthy", "model_load_failure", "kv_cache_oom", "engine_exception"],
                  "https://github.com/vllm-project/vllm/issues/28981",
                  "The ValidationError and `Value error, ...` lines are verbatim from the report (vLLM V1 API server, "
                  "Nov 2025: 0.11.1 estimated); the report's host was an ARM CPU backend that turns chunked prefill "
                  "off itself, here a GPU unit that does so with --no-enable-chunked-prefill (same SchedulerConfig "
                  "check). Version/args lines, the bare `Traceback` head (frames cut), systemd's lines and "
                  "Restart=always are ours. An option combination is rejected before any model work: bad_argument.")
