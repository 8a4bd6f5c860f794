"""holdout3 cases, theme `startup` (see incident_h3_base.py): scored only, never tuned on.

Start-up failures of the unit: the argument parser / ServerArgs / EngineArgs rejecting the command line
(bad_argument) and the model that cannot be resolved or read (model_load_failure). Each case is rebuilt from
one public report; the error lines are quoted from it, systemd's lines and the engines' start-up templates come
from incident_kit / incident_scenes (FORMATS.md). Labels follow docs/DIAGNOSIS.md "Labels" only.
"""

from __future__ import annotations

from incident_h3_base import Case, case3, expect3
from incident_scenes import sglang_boot, sglang_sched_exception, sglang_sigquit, vllm_boot, vllm_start_fail

V08_API_TAIL = [
    '  File "/opt/vllm/lib/python3.12/site-packages/vllm/v1/engine/core_client.py", line 421, in '
    "_wait_for_engine_startup",
    '    raise RuntimeError("Engine core initialization failed. "',
    "RuntimeError: Engine core initialization failed. See root cause above.",
]


# ============================== bad_argument ===================================================


@case3
def arg3_sgl_052_mm_attention_backend_choice() -> Case:
    c = Case("arg3_sgl_052_mm_attention_backend_choice", "sglang", "0.5.2", day=1, hour=3,
             model="/models/Qwen2.5-VL-7B-Instruct")
    inv = c.start()
    c.app(inv, "usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH] "
               "[--tokenizer-mode {auto,slow}] [--tokenizer-worker-num TOKENIZER_WORKER_NUM] [--skip-tokenizer-init]",
          dt=3.2)
    c.app(inv, "launch_server.py: error: argument --mm-attention-backend: invalid choice: 'triton' (choose from "
               "'sdpa', 'fa3', 'triton_attn', 'ascend_attn')")
    c.exit(inv, "exited", "2", cpu="4.212s")
    return expect3(c, "bad_argument", False,
                   ["argument --mm-attention-backend: invalid choice: 'triton'"],
                   ["healthy", "model_load_failure", "unknown"], "https://github.com/sgl-project/sglang/pull/10835",
                   "The error line is verbatim from the PR description (SGLang of late September 2025, 0.5.2/0.5.3: "
                   "the multimodal attention backend choice was still spelled 'triton_attn'); the argparse usage line "
                   "(shortened), the model path and systemd's lines are ours. Restart=no: one exit with status 2.")


@case3
def arg3_sgl_049_max_loaded_loras_start_limit() -> Case:
    c = Case("arg3_sgl_049_max_loaded_loras_start_limit", "sglang", "0.4.9.post2", day=2, hour=3,
             model="/storage/models/Qwen2.5-1.5B-Instruct")
    for k in range(5):
        inv = c.start(dt=0.1)
        c.app(inv, "usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH] "
                   "[--tokenizer-mode {auto,slow}] [--skip-tokenizer-init] [--skip-server-warmup]", dt=2.6)
        c.app(inv, "                        [--load-format {auto,pt,safetensors,npcache,dummy,sharded_state,gguf,"
                   "bitsandbytes,layered,remote}] [--model-loader-extra-config MODEL_LOADER_EXTRA_CONFIG]")
        c.app(inv, "launch_server.py: error: unrecognized arguments: --max-loaded-loras 1")
        c.exit(inv, "exited", "2", restart=k < 4, cpu="2.730s")
    c.start_limit(inv)
    return expect3(c, "bad_argument", True, ["launch_server.py: error: unrecognized arguments: --max-loaded-loras 1"],
                   ["healthy", "model_load_failure", "unknown"], "https://github.com/areal-project/AReaL/pull/428",
                   "AReaL passed --max-loaded-loras to an SGLang older than the flag (the reporter says updating SGLang "
                   "fixed it); the error line is verbatim, the SGLang version (0.4.9.post2, AReaL's pin of mid 2025) "
                   "and the usage lines are ours. Restart=on-failure with a short RestartSec: five exits with status 2, "
                   "then systemd's start limit.")


@case3
def arg3_vllm_011_max_model_len_over_derived_loop() -> Case:
    c = Case("arg3_vllm_011_max_model_len_over_derived_loop", "vllm", "0.11.0", day=3, hour=3, tp=8,
             model="Qwen/Qwen2.5-72B-Instruct")
    sp = "/opt/vllm/lib/python3.12/site-packages"
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, c.vlog("INFO", "api_server.py:1839", "vLLM API server version 0.11.0"), dt=4.1)
        c.app(inv, c.vlog("INFO", "utils.py:233", "non-default args: {'model_tag': 'Qwen/Qwen2.5-72B-Instruct', "
                          "'trust_remote_code': True, 'port': 1234, 'model': 'Qwen/Qwen2.5-72B-Instruct', "
                          "'max_model_len': 131072, 'served_model_name': ['judge'], 'tensor_parallel_size': 8, "
                          "'gpu_memory_utilization': 0.8}"))
        c.many(inv, [
            "Traceback (most recent call last):",
            '  File "/opt/vllm/bin/vllm", line 10, in <module>',
            "    sys.exit(main())",
            "             ^^^^^^",
            f'  File "{sp}/vllm/engine/arg_utils.py", line 1162, in create_engine_config',
            "    model_config = self.create_model_config()",
            "                   ^^^^^^^^^^^^^^^^^^^^^^^^^^",
            f'  File "{sp}/vllm/engine/arg_utils.py", line 1017, in create_model_config',
            "    return ModelConfig(",
            "           ^^^^^^^^^^^^",
            f'  File "{sp}/pydantic/_internal/_dataclasses.py", line 123, in __init__',
            "    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)",
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
            "  Value error, User-specified max_model_len (131072) is greater than the derived max_model_len "
            "(max_position_embeddings=32768.0 or model_max_length=None in model's config.json). To allow overriding "
            "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used "
            "with extreme caution. If the model uses relative position encoding (RoPE), positions exceeding "
            "derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding "
            "derived_max_model_len will cause a CUDA array out-of-bounds error. [type=value_error, "
            "input_value=ArgsKwargs((), {'model': ...rocessor_plugin': None}), input_type=ArgsKwargs]",
            "    For further information visit https://errors.pydantic.dev/2.11/v/value_error",
        ], dt=0.02)
        c.exit(inv, "exited", "1", restart=True, cpu="9.884s")
    return expect3(c, "bad_argument", True,
                   ["User-specified max_model_len (131072) is greater than the derived max_model_len"],
                   ["healthy", "kv_cache_oom", "model_load_failure", "unknown"],
                   "https://github.com/EvolvingLMMs-Lab/LongVT/issues/9",
                   "`vllm serve Qwen/Qwen2.5-72B-Instruct --max-model-len 131072 -tp 8`: the ModelConfig validation "
                   "rejects the option value before any weight is loaded. The `Value error, ...` line is verbatim; the "
                   "pydantic header and the `_dataclasses.py` frame follow vllm PR #19660 (same validation), the other "
                   "frames, the start-up lines and the version (the report gives none; 0.10/0.11 wording) are ours. "
                   "Restart=always: three invocations, two scheduled restarts.")


@case3
def arg3_vllm_085_v1_kv_cache_dtype_unsupported() -> Case:
    c = Case("arg3_vllm_085_v1_kv_cache_dtype_unsupported", "vllm", "0.8.5", day=4, hour=3,
             model="/models/Qwen2.5-32B-Instruct-AWQ")
    sp = "/opt/vllm/lib/python3.12/site-packages"
    inv = c.start()
    c.app(inv, c.vlog("INFO", "__init__.py:239", "Automatically detected platform cuda."), dt=2.4)
    c.app(inv, c.vlog("INFO", "api_server.py:1043", "vLLM API server version 0.8.5"), dt=1.6)
    c.app(inv, None)  # args: Namespace(...) is longer than journald's line limit: null in -o json
    c.app(inv, c.vlog("INFO", "config.py:717", "This model supports multiple tasks: {'reward', 'classify', 'embed', "
                      "'generate', 'score'}. Defaulting to 'generate'."), dt=5.2)
    c.many(inv, [
        "Traceback (most recent call last):",
        '  File "/opt/vllm/bin/vllm", line 8, in <module>',
        "    sys.exit(main())",
        "             ^^^^^^",
        f'  File "{sp}/vllm/engine/arg_utils.py", line 1156, in create_engine_config',
        "    use_v1 = self._is_v1_supported_oracle(model_config)",
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/vllm/engine/arg_utils.py", line 1411, in _is_v1_supported_oracle',
        '    _raise_or_fallback(feature_name="--kv-cache-dtype",',
        f'  File "{sp}/vllm/engine/arg_utils.py", line 1727, in _raise_or_fallback',
        "    raise NotImplementedError(",
        "NotImplementedError: VLLM_USE_V1=1 is not supported with --kv-cache-dtype",
    ], dt=0.03)
    c.exit(inv, "exited", "1", cpu="11.027s")
    c.extra = {"unit_file": "[Service]\nEnvironment=VLLM_USE_V1=1\nExecStart=/opt/vllm/bin/vllm serve "
                            "/models/Qwen2.5-32B-Instruct-AWQ --kv-cache-dtype fp8 --port 8000\nRestart=no\n"}
    return expect3(c, "bad_argument", False, ["NotImplementedError: VLLM_USE_V1=1 is not supported with --kv-cache-dtype"],
                   ["healthy", "kv_cache_oom", "engine_exception", "unknown"],
                   "https://github.com/vllm-project/vllm/issues/17355",
                   "The reporter forces V1 (VLLM_USE_V1=1) with --kv-cache-dtype; EngineArgs' V1 oracle refuses the "
                   "option before any engine starts. The exception line is verbatim; the frames (line numbers), the "
                   "model and the start-up lines are ours (0.8.5, April 2025). One failure, Restart=no.")


# ============================== model_load_failure =============================================


@case3
def load3_sgl_045_glm4_arch_unsupported() -> Case:
    c = Case("load3_sgl_045_glm4_arch_unsupported", "sglang", "0.4.5", day=5, hour=3,
             model="/models/GLM-4-32B-0414")
    sp = "/usr/local/lib/python3.10/dist-packages"
    inv = c.start()
    sglang_boot(c, inv, "load")
    sglang_sched_exception(c, inv, [
        f'  File "{sp}/sglang/srt/managers/scheduler.py", line 1999, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
        f'  File "{sp}/sglang/srt/model_executor/model_runner.py", line 398, in load_model',
        "    self.model = get_model(",
        f'  File "{sp}/sglang/srt/model_loader/utils.py", line 37, in get_model_architecture',
        "    return ModelRegistry.resolve_model_cls(architectures)",
        f'  File "{sp}/sglang/srt/models/registry.py", line 65, in resolve_model_cls',
        "    return self._raise_for_unsupported(architectures)",
        f'  File "{sp}/sglang/srt/models/registry.py", line 32, in _raise_for_unsupported',
        "    raise ValueError(",
        "ValueError: Model architectures ['Glm4ForCausalLM'] are not supported for now. Supported architectures: "
        "dict_keys(['BaichuanForCausalLM', 'ChatGLMModel', 'CLIPModel', 'CohereForCausalLM', 'Cohere2ForCausalLM', "
        "'DbrxForCausalLM', 'DeepseekForCausalLM', 'MultiModalityCausalLM', 'DeepseekV3ForCausalLMNextN', "
        "'DeepseekV2ForCausalLM', 'DeepseekV3ForCausalLM', 'DeepseekVL2ForCausalLM', 'ExaoneForCausalLM', "
        "'GemmaForCausalLM', 'Gemma2ForCausalLM', 'Gemma2ForSequenceClassification', 'Gemma3ForCausalLM', "
        "'Gemma3ForConditionalGeneration', 'GPT2LMHeadModel'])",
    ])
    sglang_sigquit(c, inv, serving=False)
    c.exit(inv, "killed", "9", cpu="38.614s")
    return expect3(c, "model_load_failure", False, ["Model architectures ['Glm4ForCausalLM'] are not supported for now"],
                   ["healthy", "engine_exception", "bad_argument", "unknown"],
                   "https://github.com/sgl-project/sglang/issues/5441",
                   "GLM-4-0414 (Glm4ForCausalLM) served with SGLang 0.4.5, which had no implementation yet: the "
                   "scheduler's ValueError is verbatim up to 'GPT2LMHeadMode(l)', where the report cuts the supported "
                   "list (we close it there). Frames other than the registry's raise, the start-up lines and the "
                   "model path are ours. The scheduler's exception sends SIGQUIT; SGLang kills its own tree "
                   "(status 9). Restart=no.")


@case3
def load3_sgl_044_decilm_arch_tp4_loop() -> Case:
    c = Case("load3_sgl_044_decilm_arch_tp4_loop", "sglang", "0.4.4.post1", day=6, hour=3, tp=4,
             model="/models/Llama-3_3-Nemotron-Super-49B-v1")
    sp = "/usr/local/lib/python3.12/site-packages"
    lines = [
        f'  File "{sp}/sglang/srt/managers/scheduler.py", line 1748, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
        "                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/sglang/srt/model_executor/model_runner.py", line 379, in load_model',
        "    self.model = get_model(",
        f'  File "{sp}/sglang/srt/models/registry.py", line 32, in _raise_for_unsupported',
        "    raise ValueError(",
        "ValueError: Model architectures ['DeciLMForCausalLM'] are not supported for now. Supported architectures: "
        "dict_keys(['BaichuanForCausalLM', 'ChatGLMModel', 'CLIPModel', 'CohereForCausalLM', 'Cohere2ForCausalLM', "
        "'DbrxForCausalLM', 'DeepseekForCausalLM', 'MultiModalityCausalLM', 'DeepseekV3ForCausalLMNextN', "
        "'DeepseekV2ForCausalLM', 'DeepseekV3ForCausalLM'])",
    ]
    for k in range(3):
        inv = c.start(dt=0.2 if k == 0 else 0.1)
        sglang_boot(c, inv, "load")
        sglang_sched_exception(c, inv, lines)
        c.app(inv, c.slog("Scheduler hit an exception: Traceback (most recent call last):", "TP1"), "sched1", dt=0.1)
        c.app(inv, lines[-1], "sched1")
        sglang_sigquit(c, inv, serving=False)
        c.exit(inv, "killed", "9", restart=True, cpu="52.301s")
    return expect3(c, "model_load_failure", True,
                   ["Model architectures ['DeciLMForCausalLM'] are not supported for now"],
                   ["healthy", "engine_exception", "nccl_failure", "unknown"],
                   "https://github.com/sgl-project/sglang/issues/4689",
                   "Llama-3_3-Nemotron-Super-49B-v1 (DeciLMForCausalLM) on SGLang of March 2025: `Scheduler hit an "
                   "exception` and the run_scheduler_process frame are verbatim, the ValueError follows the title; "
                   "the supported list is cut by us, TP=4, the other frames and the start-up lines are ours. "
                   "Restart=always: the unit fails the same way three times and is scheduled again.")


@case3
def load3_vllm_085_internvl3_header_too_large() -> Case:
    c = Case("load3_vllm_085_internvl3_header_too_large", "vllm", "0.8.5", day=7, hour=3, tp=4,
             model="/models/InternVL3-78B")
    sp = "/opt/vllm/lib/python3.12/site-packages"
    inv = c.start()
    vllm_boot(c, inv, "load")
    wl = [
        "WorkerProc failed to start.",
        "Traceback (most recent call last):",
        f'  File "{sp}/vllm/v1/executor/multiproc_executor.py", line 409, in worker_main',
        "    worker = WorkerProc(*args, **kwargs)",
        f'  File "{sp}/vllm/v1/executor/multiproc_executor.py", line 306, in __init__',
        "    self.worker.load_model()",
        f'  File "{sp}/vllm/model_executor/model_loader/weight_utils.py", line 465, in safetensors_weights_iterator',
        '    with safe_open(st_file, framework="pt") as f:',
        "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
    ]
    for role in ("worker", "worker1"):
        for line in wl:
            c.app(inv, c.vlog("ERROR", "multiproc_executor.py:435", line), role, dt=0.0)
    c.app(inv, c.vlog("ERROR", "core.py:396", "EngineCore failed to start."), "engine", dt=0.4)
    c.app(inv, c.vlog("ERROR", "core.py:396", "Traceback (most recent call last):"), "engine")
    for line in [
        f'  File "{sp}/vllm/v1/executor/multiproc_executor.py", line 370, in wait_for_ready',
        "    raise e from None",
        "Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace "
        "for root cause.",
    ]:
        c.app(inv, c.vlog("ERROR", "core.py:396", line), "engine", dt=0.0)
    c.app(inv, "Traceback (most recent call last):", dt=0.3)
    c.many(inv, V08_API_TAIL)
    c.exit(inv, "exited", "1", cpu="1min 4.338s")
    return expect3(c, "model_load_failure", False, ["SafetensorError: Error while deserializing header: HeaderTooLarge"],
                   ["healthy", "engine_exception", "unknown"], "https://github.com/OpenGVLab/InternVL/issues/1021",
                   "InternVL3-78B's checkpoint makes both lmdeploy and vLLM fail with `SafetensorError ... "
                   "HeaderTooLarge` (the reporter's scan of the shard headers shows the broken files); the error text "
                   "is verbatim, vLLM 0.8.5 V1 with TP=4 (April 2025), the frames and the wrappers are ours (vLLM "
                   "templates). One failure, Restart=no.")


@case3
def load3_vllm_083_bnb_no_weights() -> Case:
    c = Case("load3_vllm_083_bnb_no_weights", "vllm", "0.8.3", day=8, hour=3,
             model="unsloth/Phi-4-mini-instruct-unsloth-bnb-4bit")
    inv = c.start()
    vllm_start_fail(c, inv, "load", [
        '  File "/data/users/vllm/vllm/v1/engine/core.py", line 377, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, **kwargs)",
        "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        '  File "/data/users/vllm/vllm/v1/engine/core.py", line 319, in __init__',
        "    super().__init__(vllm_config, executor_class, log_stats)",
        '  File "/data/users/vllm/vllm/v1/engine/core.py", line 67, in __init__',
        "    self.model_executor = executor_class(vllm_config)",
        "                          ^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        '  File "/data/users/vllm/vllm/executor/executor_base.py", line 52, in __init__',
        "    self._init_executor()",
        '  File "/data/users/vllm/vllm/model_executor/model_loader/loader.py", line 886, in _prepare_weights',
        '    raise RuntimeError(f"Cannot find any model weights with `{model_name_or_path}`")',
        "RuntimeError: Cannot find any model weights with `unsloth/Phi-4-mini-instruct-unsloth-bnb-4bit`",
    ], where="core.py:386", api_tail=V08_API_TAIL)
    c.exit(inv, "exited", "1", cpu="21.550s")
    return expect3(c, "model_load_failure", False,
                   ["Cannot find any model weights with `unsloth/Phi-4-mini-instruct-unsloth-bnb-4bit`"],
                   ["healthy", "engine_exception", "unknown"], "https://github.com/unslothai/unsloth/issues/2317",
                   "vLLM of April 2025 (0.8.3, V1, source checkout under /data/users/vllm) cannot find the weights of a "
                   "bnb-4bit hub model: `EngineCore hit an exception` and the first frames are verbatim, the error line "
                   "follows the report's title; the loader frame, the start-up lines and the API server's wrapper are "
                   "ours. The report ran benchmark_latency.py; here the same engine start is a `vllm serve` unit. "
                   "One failure.")


@case3
def load3_vllm_v0_073_invalid_header() -> Case:
    c = Case("load3_vllm_v0_073_invalid_header", "vllm", "0.7.3", v1=False, day=9, hour=3,
             model="/models/Qwen2.5-14B-Instruct")
    dp = "/usr/local/lib/python3.12/dist-packages"
    inv = c.start()
    vllm_start_fail(c, inv, "load", [
        "Error while deserializing header: InvalidHeaderDeserialization",
        "Traceback (most recent call last):",
        f'  File "{dp}/vllm/engine/multiprocessing/engine.py", line 391, in run_mp_engine',
        "    engine = MQLLMEngine.from_engine_args(engine_args=engine_args,",
        f'  File "{dp}/vllm/model_executor/models/utils.py", line 240, in load_weights',
        "    yield from self._load_module(prefix,",
        f'  File "{dp}/vllm/model_executor/models/utils.py", line 173, in _load_module',
        "    loaded_params = module_load_weights(weights)",
        "                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{dp}/vllm/model_executor/models/qwen2.py", line 375, in load_weights',
        "    for name, loaded_weight in weights:",
        "                               ^^^^^^^",
        f'  File "{dp}/vllm/model_executor/models/utils.py", line 108, in <genexpr>',
        "    for parts, weights_data in group),",
        "                               ^^^^^",
        f'  File "{dp}/vllm/model_executor/models/utils.py", line 99, in <genexpr>',
        "    for weight_name, weight_data in weights)",
        "                                    ^^^^^^^",
        f'  File "{dp}/vllm/model_executor/model_loader/weight_utils.py", line 434, in safetensors_weights_iterator',
        '    with safe_open(st_file, framework="pt") as f:',
        "safetensors_rust.SafetensorError: Error while deserializing header: InvalidHeaderDeserialization",
    ], where="engine.py:400", api_tail=[
        f'  File "{dp}/vllm/entrypoints/openai/api_server.py", line 230, in build_async_engine_client_from_engine_args',
        "    raise RuntimeError(",
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.",
    ])
    c.exit(inv, "exited", "1", cpu="27.905s")
    return expect3(c, "model_load_failure", False,
                   ["SafetensorError: Error while deserializing header: InvalidHeaderDeserialization"],
                   ["healthy", "engine_exception", "unknown"], "https://github.com/vllm-project/vllm/issues/14596",
                   "vLLM 0.7.3 (V0, MQLLMEngine logging as `engine.py:400]`) fails to read a safetensors shard of a "
                   "Qwen2 model: the qwen2.py/utils.py frames are verbatim, the error text is the report's title; "
                   "the weight_utils frame, the model path, the start-up lines and the V0 wrapper `Engine process "
                   "failed to start` (vLLM's template) are ours. One failure, Restart=no.")


@case3
def load3_vllm_016_repo_not_found_loop() -> Case:
    c = Case("load3_vllm_016_repo_not_found_loop", "vllm", "0.16.0", day=10, hour=3, model="Qwen/Qwen3.5-27B-AWQ")
    dp = "/usr/local/lib/python3.12/dist-packages"
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, c.vlog("INFO", "utils.py:287", ""), dt=3.8)
        c.app(inv, c.vlog("INFO", "utils.py:287", "       █     █     █▄   ▄█"))
        c.app(inv, c.vlog("INFO", "utils.py:287", " ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.16.0"))
        c.app(inv, c.vlog("INFO", "utils.py:287", "  █▄█▀ █     █     █     █  model   Qwen/Qwen3.5-27B-AWQ"))
        c.app(inv, c.vlog("INFO", "utils.py:287", "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀"))
        c.many(inv, [
            "Traceback (most recent call last):",
            f'  File "{dp}/transformers/configuration_utils.py", line 721, in _get_config_dict',
            "    resolved_config_file = cached_file(",
            "                           ^^^^^^^^^^^^",
            f'  File "{dp}/transformers/utils/hub.py", line 322, in cached_file',
            "    file = cached_files(path_or_repo_id=path_or_repo_id, filenames=[filename], **kwargs)",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            f'  File "{dp}/transformers/utils/hub.py", line 511, in cached_files',
            "    raise OSError(",
            "OSError: Qwen/Qwen3.5-27B-AWQ is not a local folder and is not a valid model identifier listed on "
            "'https://huggingface.co/models'",
            "If this is a private repository, make sure to pass a token having permission to this repo either by "
            "logging in with `hf auth login` or by passing `token=<your_token>`",
        ], dt=0.02)
        c.exit(inv, "exited", "1", restart=True, cpu="7.113s")
    return expect3(c, "model_load_failure", True, ["is not a valid model identifier listed on 'https://huggingface.co/models'"],
                   ["healthy", "bad_argument", "unknown"], "https://github.com/vast-ai/base-image/issues/128",
                   "The image's vLLM 0.16.0 is asked for a hub id it cannot resolve; the API server dies in "
                   "transformers' cached_file and the supervisor starts it again (the report shows the next start "
                   "with a new APIServer pid). The hub.py frames, the OSError and the logo lines are verbatim "
                   "(`<your_token>` restored from transformers' template, lost in the report's HTML); timestamps, "
                   "the configuration_utils frame and systemd's lines are ours. Outside the 0.8-0.11 range on purpose "
                   "(the report's version). Restart=always, three invocations.")
