"""holdout4 cases, theme `startup` (see incident_h4_base.py): scored only, never tuned on.

Start-up failures of the unit: the argument parser / ServerArgs / EngineArgs rejecting the command line or an option
value (bad_argument) and the model that cannot be resolved or read (model_load_failure). Each case is rebuilt from one
public report; the error lines are quoted from it, systemd's lines and the engines' start-up templates come from
incident_kit / incident_scenes (FORMATS.md). Labels follow docs/DIAGNOSIS.md "Labels" only.
"""

from __future__ import annotations

from incident_h4_base import Case, case4, expect4
from incident_kit import STAMP_S, STAMP_V

# vLLM 0.10.0 does not tag its API-server lines yet (the 0.10.0 reports show `INFO 09-03 21:20:47 [...]` bare):
# these cases write the main process's lines with tag=False.


# ============================== bad_argument ===================================================


@case4
def arg4_vllm_0100_glm45_tool_parser_start_limit() -> Case:
    c = Case("arg4_vllm_0100_glm45_tool_parser_start_limit", "vllm", "0.10.0", day=21, hour=14, tp=4,
             model="zai-org/GLM-4.5-Air-FP8")
    for k in range(5):
        inv = c.start(dt=0.1)
        c.app(inv, f"INFO {STAMP_V} [__init__.py:235] Automatically detected platform cuda.", dt=2.3, tag=False)
        c.app(inv, "usage: vllm serve [model_tag] [options]", dt=0.4, tag=False)
        c.app(inv, "vllm serve: error: argument --tool-call-parser: invalid choice: 'glm45' (choose from "
                   "'deepseek_v3', 'glm4_moe', 'granite-20b-fc', 'granite', 'hermes', 'hunyuan_a13b', 'internlm', "
                   "'jamba', 'kimi_k2', 'llama4_pythonic', 'llama4_json', 'llama3_json', 'minimax', 'mistral', "
                   "'phi4_mini_json', 'pythonic', 'qwen3_coder', 'xlam')", tag=False)
        c.exit(inv, "exited", "2", restart=k < 4, cpu="3.402s")
    c.start_limit(inv)
    c.extra = {"unit_file": "[Service]\nExecStart=/opt/vllm/bin/vllm serve zai-org/GLM-4.5-Air-FP8 --served-model-name "
                            "glm-4.5-air --host 0.0.0.0 --port 29998 --tensor-parallel-size 4 --api-key 1234 "
                            "--enable-auto-tool-choice --tool-call-parser glm45 --max-model-len 65536 "
                            "--trust-remote-code --gpu-memory-utilization 0.92\nRestart=on-failure\nRestartSec=1\n"}
    return expect4(c, "bad_argument", True,
                   ["vllm serve: error: argument --tool-call-parser: invalid choice: 'glm45'"],
                   ["healthy", "model_load_failure", "unknown", "engine_exception"],
                   "https://github.com/zai-org/GLM-4.5/issues/16",
                   "GLM-4.5-Air-FP8 served with vLLM 0.10.0 and the parser name of the model card (`glm45`), which the "
                   "0.10.0 release spells `glm4_moe`. The command (unit_file ExecStart) and the `vllm serve: error: "
                   "argument --tool-call-parser: invalid choice ...` line are verbatim from the report; the platform "
                   "line follows vLLM 0.10.0's template, the `usage:` line (argparse's, shortened), RestartSec and "
                   "systemd's lines are ours. 0.10.0 prints no `(APIServer pid=N)` tag. Restart=on-failure with "
                   "RestartSec=1: five exits with status 2 within the burst, then systemd's start limit.")


@case4
def arg4_sgl_048_tool_parser_llama4_loop() -> Case:
    c = Case("arg4_sgl_048_tool_parser_llama4_loop", "sglang", "0.4.8", day=22, hour=14,
             model="meta-llama/Llama-4-Scout-17B-16E-Instruct", tp=4)
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, "usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH] "
                   "[--tokenizer-mode {auto,slow}] [--skip-tokenizer-init] [--skip-server-warmup]", dt=3.1)
        c.app(inv, "                        [--tool-call-parser {qwen25,mistral,llama3,deepseekv3,pythonic}] "
                   "[--enable-hierarchical-cache] [--hicache-ratio HICACHE_RATIO]")
        c.app(inv, "launch_server.py: error: argument --tool-call-parser: invalid choice: 'llama4' (choose from "
                   "'qwen25', 'mistral', 'llama3', 'deepseekv3', 'pythonic')")
        c.exit(inv, "exited", "2", restart=True, cpu="3.918s")
    c.extra = {"unit_file": "[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            "meta-llama/Llama-4-Scout-17B-16E-Instruct --tp 4 --tool-call-parser llama4 --host 0.0.0.0 "
                            "--port 30000\nRestart=always\nRestartSec=10\n"}
    return expect4(c, "bad_argument", True,
                   ["launch_server.py: error: argument --tool-call-parser: invalid choice: 'llama4'"],
                   ["healthy", "model_load_failure", "unknown"],
                   "https://github.com/sgl-project/sgl-project.github.io/issues/17",
                   "SGLang's function-calling page of July 2025 told users to launch Llama 4 with "
                   "`--tool-call-parser llama4`, which the parser rejects (the right value was `pythonic`). The "
                   "`launch_server.py: error: ...` line is verbatim from the report; the SGLang version (0.4.8, "
                   "whose choice list is the one quoted), the model, TP=4, the usage lines and systemd's lines are "
                   "ours. Restart=always with RestartSec=10: each start fails in ~3 s, systemd keeps rescheduling "
                   "(counter 1..3, below the start limit).")


@case4
def arg4_sgl_050_tool_parser_gpt_os_choice() -> Case:
    c = Case("arg4_sgl_050_tool_parser_gpt_os_choice", "sglang", "0.5.0rc2", day=23, hour=14,
             model="/models/gpt-oss-120b", tp=2)
    inv = c.start()
    c.app(inv, "usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH] "
               "[--tokenizer-mode {auto,slow}] [--skip-tokenizer-init] [--skip-server-warmup]", dt=3.6)
    c.app(inv, "launch_server.py: error: argument --tool-call-parser: invalid choice: 'gpt-os' (choose from 'llama3', "
               "'qwen25', 'mistral', 'deepseekv3', 'pythonic', 'kimi_k2', 'qwen3_coder', 'glm45', 'step3', 'gpt-oss')")
    c.exit(inv, "exited", "2", cpu="4.377s")
    return expect4(c, "bad_argument", False,
                   ["argument --tool-call-parser: invalid choice: 'gpt-os'"],
                   ["healthy", "model_load_failure", "unknown"], "https://github.com/sgl-project/sglang/pull/9316",
                   "The PR that made --tool-call-parser's choices dynamic (August 2025, 0.5.0rc2) shows what a "
                   "mistyped parser name (`gpt-os` for `gpt-oss`) prints; that error line is verbatim. The model "
                   "path, TP=2, the shortened usage line and systemd's lines are ours. Restart=no: one exit with "
                   "status 2.")


@case4
def arg4_vllm_v0_090_gguf_quant_mismatch() -> Case:
    c = Case("arg4_vllm_v0_090_gguf_quant_mismatch", "vllm", "0.9.0.1", v1=False, day=24, hour=14, tp=4,
             model="/data2/jcxy/llm_model/DeepSeek-R1-0528-GGUF-UD-IQ2_XXS/DeepSeek-R1-0528-UD-IQ2_XXS-00001-of-00005.gguf")
    sp = "/opt/vllm/lib/python3.12/site-packages"
    gguf = c.model
    inv = c.start()
    c.app(inv, c.vlog("INFO", "__init__.py:243", "Automatically detected platform cuda."), dt=2.6)
    c.app(inv, c.vlog("INFO", "api_server.py:1289", "vLLM API server version 0.9.0.1"), dt=1.8)
    c.app(inv, c.vlog("INFO", "cli_args.py:300", f"non-default args: {{'host': '0.0.0.0', 'port': 6011, 'model': "
                      f"'{gguf}', 'trust_remote_code': True, 'dtype': 'auto', 'max_model_len': 8192, "
                      "'hf_config_path': '/data2/jcxy/llm_model/DeepSeek-R1-0528-GGUF-UD-IQ2_XXS', "
                      "'tokenizer': '/data2/jcxy/llm_model/DeepSeek-R1-0528-GGUF-UD-IQ2_XXS', 'hf_overrides': "
                      "{'quantization_config': {}}, 'served_model_name': ['DeepSeek-R1-0528'], "
                      "'tensor_parallel_size': 4, 'gpu_memory_utilization': 0.98, 'enable_prefix_caching': True}"))
    c.many(inv, [
        "Traceback (most recent call last):",
        '  File "/opt/vllm/bin/vllm", line 8, in <module>',
        "    sys.exit(main())",
        "             ^^^^^^",
        f'  File "{sp}/vllm/entrypoints/openai/api_server.py", line 166, in build_async_engine_client_from_engine_args',
        "    vllm_config = engine_args.create_engine_config(usage_context=usage_context)",
        "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/vllm/engine/arg_utils.py", line 1018, in create_engine_config',
        "    model_config = self.create_model_config()",
        "                   ^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/vllm/engine/arg_utils.py", line 910, in create_model_config',
        "    return ModelConfig(",
        "           ^^^^^^^^^^^^",
        f'  File "{sp}/vllm/config.py", line 558, in __post_init__',
        "    self._verify_quantization()",
        f'  File "{sp}/vllm/config.py", line 839, in _verify_quantization',
        "    raise ValueError(",
        "ValueError: Quantization method specified in the model config (fp8) does not match the quantization "
        "method specified in the `quantization` argument (gguf).",
    ], dt=0.02)
    c.exit(inv, "exited", "1", cpu="12.304s")
    c.extra = {"unit_file": "[Service]\nEnvironment=VLLM_USE_V1=0\nEnvironment=CUDA_VISIBLE_DEVICES=2,3,4,5\n"
                            f"ExecStart=/opt/vllm/bin/vllm serve {gguf} --hf-config-path "
                            "/data2/jcxy/llm_model/DeepSeek-R1-0528-GGUF-UD-IQ2_XXS --tokenizer "
                            "/data2/jcxy/llm_model/DeepSeek-R1-0528-GGUF-UD-IQ2_XXS --hf-overrides "
                            "'{\"quantization_config\": {}}' --served-model-name DeepSeek-R1-0528 --trust-remote-code "
                            "--port 6011 --host 0.0.0.0 --dtype auto --max-model-len 8192 "
                            "--gpu_memory_utilization 0.98 --tensor_parallel_size 4 --enable-prefix-caching\n"
                            "Restart=no\n"}
    return expect4(c, "bad_argument", False,
                   ["does not match the quantization method specified in the `quantization` argument (gguf)"],
                   ["healthy", "unknown", "kv_cache_oom", "cuda_oom_runtime"],
                   "https://github.com/vllm-project/vllm/issues/19050",
                   "vLLM 0.9.0.1 forced to V0 (VLLM_USE_V1=0, as in the report's script) serving a DeepSeek-R1-0528 "
                   "GGUF with --hf-config-path pointing at a config whose quantization_config says fp8: ModelConfig's "
                   "check of the `quantization` option (gguf) rejects the combination in the API server, before any "
                   "engine process or weight. The command line (unit_file) and the ValueError text (the report's "
                   "title) are verbatim; the frames (vLLM 0.9 layout, line numbers ours), the start-up lines and the "
                   "restart policy are ours. Labelled bad_argument: an option value/config combination refused by "
                   "EngineArgs validation before the model is touched (the fix is the command line: a config without "
                   "the fp8 quantization_config); a reader could argue model_load_failure (the model's own config), "
                   "so that label is not in must_not. Restart=no: one failure.")


# ============================== model_load_failure =============================================


@case4
def load4_sgl_045_hub_offline_quant_probe_loop() -> Case:
    c = Case("load4_sgl_045_hub_offline_quant_probe_loop", "sglang", "0.4.5", day=25, hour=14,
             model="meta-llama/Llama-3.1-8B-Instruct")
    sp = "/usr/local/lib/python3.12/dist-packages"
    sg = "/sgl-workspace/sglang/python/sglang"
    lines = [
        "Traceback (most recent call last):",
        '  File "<frozen runpy>", line 198, in _run_module_as_main',
        '  File "<frozen runpy>", line 88, in _run_code',
        f'  File "{sg}/launch_server.py", line 14, in <module>',
        "    launch_server(server_args)",
        f'  File "{sg}/srt/entrypoints/http_server.py", line 679, in launch_server',
        "    tokenizer_manager, scheduler_info = _launch_subprocesses(server_args=server_args)",
        "                                        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sg}/srt/entrypoints/engine.py", line 561, in _launch_subprocesses',
        "    tokenizer_manager = TokenizerManager(server_args, port_args)",
        "                        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sg}/srt/managers/tokenizer_manager.py", line 160, in __init__',
        "    self.model_config = ModelConfig(",
        "                        ^^^^^^^^^^^^",
        f'  File "{sg}/srt/configs/model_config.py", line 181, in __init__',
        "    self._verify_quantization()",
        f'  File "{sg}/srt/configs/model_config.py", line 279, in _verify_quantization',
        '    elif hf_api.file_exists(self.model_path, "hf_quant_config.json"):',
        "         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/huggingface_hub/utils/_validators.py", line 114, in _inner_fn',
        "    return fn(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/huggingface_hub/hf_api.py", line 2958, in file_exists',
        "    get_hf_file_metadata(url, token=token)",
        f'  File "{sp}/huggingface_hub/utils/_http.py", line 95, in send',
        "    raise OfflineModeIsEnabled(",
        "huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/meta-llama/"
        "Llama-3.1-8B-Instruct/resolve/main/hf_quant_config.json: offline mode is enabled. To disable it, please "
        "unset the `HF_HUB_OFFLINE` environment variable.",
    ]
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, None, dt=4.2)  # server_args=ServerArgs(...) (~10 KB): null in journalctl -o json
        c.app(inv, c.slog("Init torch distributed begin."), "sched", dt=1.6)
        c.many(inv, lines, dt=0.01)
        c.exit(inv, "exited", "1", restart=True, cpu="14.229s")
    c.extra = {"unit_file": "[Service]\nEnvironment=HF_HUB_OFFLINE=1\nExecStart=/opt/sglang/bin/python3 -m "
                            "sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --host 0.0.0.0 "
                            "--port 30000\nRestart=always\nRestartSec=15\n"}
    return expect4(c, "model_load_failure", True, ["huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach"],
                   ["healthy", "bad_argument", "unknown", "engine_exception"],
                   "https://github.com/sgl-project/sglang/issues/5386",
                   "SGLang 0.4.5 with HF_HUB_OFFLINE=1 and a hub id whose files are in the local cache: ModelConfig "
                   "asks the hub whether hf_quant_config.json exists and huggingface_hub refuses (offline mode). The "
                   "first frames (runpy, launch_server.py:14, http_server.py:679 `_launch_subprocesses`) are verbatim "
                   "from the report, which cuts there; the later frames follow the fix PR #5408 (the HfApi probe in "
                   "model_config.py), line numbers ours; the OfflineModeIsEnabled text is huggingface_hub's template "
                   "(same wording as in TGI's offline report), URL and model ours. Start-up line and systemd's lines "
                   "are ours. Restart=always: three invocations, three scheduled restarts.")


@case4
def load4_vllm_0100_gated_401_unauthorized() -> Case:
    c = Case("load4_vllm_0100_gated_401_unauthorized", "vllm", "0.10.0", day=26, hour=14,
             model="meta-llama/Meta-Llama-3-8B-Instruct")
    sp = "/opt/venv/lib/python3.12/site-packages"
    inv = c.start()
    for msg, dt in [
        (f"INFO {STAMP_V} [__init__.py:235] Automatically detected platform cuda.", 2.5),
        (f"INFO {STAMP_V} [api_server.py:1755] vLLM API server version 0.10.0", 2.0),
        (f"INFO {STAMP_V} [cli_args.py:261] non-default args: {{'host': '0.0.0.0', 'port': 80, 'model': "
         "'meta-llama/Meta-Llama-3-8B-Instruct'}", 0.01),
    ]:
        c.app(inv, msg, dt=dt, tag=False)
    for line in [
        "Traceback (most recent call last):",
        f'  File "{sp}/huggingface_hub/utils/_http.py", line 409, in hf_raise_for_status',
        "    response.raise_for_status()",
        f'  File "{sp}/requests/models.py", line 1026, in raise_for_status',
        "    raise HTTPError(http_error_msg, response=self)",
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
        "https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct/resolve/main/config.json",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        f'  File "{sp}/transformers/utils/hub.py", line 470, in cached_files',
        "    hf_hub_download(",
        f'  File "{sp}/huggingface_hub/file_download.py", line 1533, in _raise_on_head_call_error',
        "    raise head_call_error",
        "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: "
        "Root=1-68b8b1a1-4d2c6f0e1b7a3c9d5e8f0a12;5b0c3e8e-2f61-4a8e-9d3b-7c1e0f4a6b29)",
        "",
        "Cannot access gated repo for url https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct/resolve/main/"
        "config.json.",
        "Access to model meta-llama/Meta-Llama-3-8B-Instruct is restricted. You must have access to it and be "
        "authenticated to access it. Please log in.",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/opt/venv/bin/vllm", line 10, in <module>',
        "    sys.exit(main())",
        "             ^^^^^^",
        f'  File "{sp}/vllm/engine/arg_utils.py", line 1004, in create_model_config',
        "    return ModelConfig(",
        "           ^^^^^^^^^^^^",
        f'  File "{sp}/vllm/transformers_utils/config.py", line 368, in get_config',
        "    config_dict, _ = PretrainedConfig.get_config_dict(",
        "                     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{sp}/transformers/utils/hub.py", line 533, in cached_files',
        "    raise OSError(",
        "OSError: You are trying to access a gated repo.",
        "Make sure to have access to it at https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct.",
        "401 Client Error. (Request ID: Root=1-68b8b1a1-4d2c6f0e1b7a3c9d5e8f0a12;"
        "5b0c3e8e-2f61-4a8e-9d3b-7c1e0f4a6b29)",
    ]:
        c.app(inv, line, dt=0.01, tag=False)
    c.exit(inv, "exited", "1", cpu="8.116s")
    c.extra = {"unit_file": "[Service]\nEnvironmentFile=/etc/vllm/hf.env\nExecStart=/opt/venv/bin/vllm serve "
                            "meta-llama/Meta-Llama-3-8B-Instruct --host 0.0.0.0 --port 80\nRestart=no\n"}
    return expect4(c, "model_load_failure", False,
                   ["401 Client Error: Unauthorized for url: https://huggingface.co/meta-llama/Meta-Llama-3-8B-Instruct"],
                   ["healthy", "bad_argument", "unknown", "engine_exception"],
                   "https://github.com/opea-project/GenAIExamples/issues/2237",
                   "OPEA ChatQnA's vllm-service (vLLM 0.10.0) cannot fetch config.json of the gated Meta-Llama-3-8B-"
                   "Instruct although the reporter says the token variable was set: the start-up lines, the first "
                   "traceback and `requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: ...` are "
                   "verbatim (the report cuts after `The above exception was the direct cause ...`). The "
                   "GatedRepoError / transformers `OSError: You are trying to access a gated repo.` continuation is "
                   "the libraries' template for this case (Request ID, frames and line numbers ours). The report ran "
                   "the CPU image in docker; here it is a CUDA host's `vllm serve` unit (platform line ours). vLLM "
                   "0.10.0 prints no process tag. Restart=no: one failure.")


@case4
def load4_vllm_011_paddleocr_vl_arch_loop() -> Case:
    c = Case("load4_vllm_011_paddleocr_vl_arch_loop", "vllm", "0.11.0", day=27, hour=14,
             model="PaddlePaddle/PaddleOCR-VL")
    dp = "/usr/local/lib/python3.10/dist-packages"
    supported = (
        "'ApertusForCausalLM', 'AquilaModel', 'AquilaForCausalLM', 'ArceeForCausalLM', 'ArcticForCausalLM', "
        "'MiniMaxForCausalLM', 'MiniMaxText01ForCausalLM', 'MiniMaxM1ForCausalLM', 'BaiChuanForCausalLM', "
        "'BaichuanForCausalLM', 'BailingMoeForCausalLM', 'BambaForCausalLM', 'BloomForCausalLM', 'ChatGLMModel', "
        "'ChatGLMForConditionalGeneration', 'CohereForCausalLM', 'Cohere2ForCausalLM', 'DbrxForCausalLM', "
        "'DeciLMForCausalLM', 'DeepseekForCausalLM', 'DeepseekV2ForCausalLM', 'DeepseekV3ForCausalLM', "
        "'Dots1ForCausalLM', 'Ernie4_5ForCausalLM', 'Ernie4_5_MoeForCausalLM', 'ExaoneForCausalLM', "
        "'Exaone4ForCausalLM', 'FalconForCausalLM', 'Fairseq2LlamaForCausalLM', 'GemmaForCausalLM', "
        "'Gemma2ForCausalLM', 'Gemma3ForCausalLM', 'Gemma3nForCausalLM', 'Qwen3NextForCausalLM', 'GlmForCausalLM', "
        "'Glm4ForCausalLM', 'Glm4MoeForCausalLM', 'GptOssForCausalLM', 'GPT2LMHeadModel', 'GPTBigCodeForCausalLM', "
        "'GPTJForCausalLM', 'GPTNeoXForCausalLM', 'GraniteForCausalLM', 'GraniteMoeForCausalLM', "
        "'GraniteMoeHybridForCausalLM', 'GraniteMoeSharedForCausalLM', 'GritLM', 'Grok1ModelForCausalLM'"
    )
    for _k in range(3):
        inv = c.start(dt=0.2)
        c.app(inv, c.vlog("INFO", "api_server.py:1839", "vLLM API server version 0.11.0"), dt=4.4)
        c.app(inv, c.vlog("INFO", "utils.py:233", "non-default args: {'model_tag': 'PaddlePaddle/PaddleOCR-VL', "
                          "'model': 'PaddlePaddle/PaddleOCR-VL', 'trust_remote_code': True, "
                          "'max_num_batched_tokens': 16384, 'enable_prefix_caching': False, "
                          "'mm_processor_cache_gb': 0.0}"))
        c.many(inv, [
            "Traceback (most recent call last):",
            '  File "/usr/local/bin/vllm", line 10, in <module>',
            "    sys.exit(main())",
            f'  File "{dp}/vllm/entrypoints/openai/api_server.py", line 1572, in build_async_engine_client_from_engine_args',
            "    vllm_config = engine_args.create_engine_config(usage_context=usage_context)",
            f'  File "{dp}/vllm/engine/arg_utils.py", line 1162, in create_engine_config',
            "    model_config = self.create_model_config()",
            f'  File "{dp}/vllm/engine/arg_utils.py", line 1017, in create_model_config',
            "    return ModelConfig(",
            f'  File "{dp}/pydantic/_internal/_dataclasses.py", line 123, in __init__',
            "    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)",
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
            "  Value error, Model architectures ['PaddleOCRVLForConditionalGeneration'] are not supported for now. "
            f"Supported architectures: dict_keys([{supported}]) [type=value_error, input_value=ArgsKwargs((), "
            "{'model': ...rocessor_plugin': None}), input_type=ArgsKwargs]",
            "    For further information visit https://errors.pydantic.dev/2.11/v/value_error",
        ], dt=0.02)
        c.exit(inv, "exited", "1", restart=True, cpu="10.552s")
    return expect4(c, "model_load_failure", True,
                   ["Model architectures ['PaddleOCRVLForConditionalGeneration'] are not supported for now"],
                   ["healthy", "bad_argument", "unknown", "engine_exception"],
                   "https://github.com/PaddlePaddle/PaddleOCR/issues/17171",
                   "`vllm serve PaddlePaddle/PaddleOCR-VL --trust-remote-code --max-num-batched-tokens 16384 "
                   "--no-enable-prefix-caching --mm-processor-cache-gb 0` (the report's command) on a vLLM release "
                   "without PaddleOCR-VL (0.11.0; support came in 0.11.1): ModelConfig validation names the "
                   "architecture as unsupported. `1 validation error for ModelConfig` and the `Value error, Model "
                   "architectures [...] are not supported for now. Supported architectures: dict_keys([...` text "
                   "are verbatim up to 'Grok1ModelForCausalLM', where we close the list (the report's excerpt goes "
                   "on); the pydantic tail, the frames, the version and the start-up lines follow vLLM 0.11's "
                   "templates (ours). Restart=always: three invocations, three scheduled restarts.")


@case4
def load4_sgl_047_missing_preprocessor_config() -> Case:
    c = Case("load4_sgl_047_missing_preprocessor_config", "sglang", "0.4.7", day=28, hour=14,
             model="CodeGoat24/UnifiedReward-7b-v1.5")
    sp = "/usr/local/lib/python3.10/dist-packages"
    inv = c.start()
    c.app(inv, None, dt=4.6)  # server_args=ServerArgs(...): null in journalctl -o json
    c.app(inv, c.slog("Attention backend not set. Use flashinfer backend by default.", None), dt=0.3)
    c.app(inv, c.slog("Init torch distributed begin."), "sched", dt=1.9)
    c.app(inv, c.slog("Init torch distributed ends. mem usage=0.00 GB"), "sched", dt=0.6)
    c.app(inv, c.slog("Load weight begin. avail mem=78.50 GB"), "sched", dt=0.9)
    c.many(inv, [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
        "    return _run_code(code, main_globals, None,",
        '  File "/usr/lib/python3.10/runpy.py", line 86, in _run_code',
        "    exec(code, run_globals)",
        f'  File "{sp}/sglang/launch_server.py", line 14, in <module>',
        "    launch_server(server_args)",
        f'  File "{sp}/sglang/srt/entrypoints/http_server.py", line 826, in launch_server',
        "    tokenizer_manager, scheduler_info = _launch_subprocesses(server_args=server_args)",
        f'  File "{sp}/sglang/srt/entrypoints/engine.py", line 722, in _launch_subprocesses',
        "    tokenizer_manager = TokenizerManager(server_args, port_args)",
        f'  File "{sp}/sglang/srt/managers/tokenizer_manager.py", line 187, in __init__',
        "    self.processor = get_processor(",
        f'  File "{sp}/sglang/srt/hf_transformers_utils.py", line 243, in get_processor',
        "    processor = AutoProcessor.from_pretrained(",
        f'  File "{sp}/transformers/models/auto/processing_auto.py", line 347, in from_pretrained',
        "    return processor_class.from_pretrained(",
        f'  File "{sp}/transformers/image_processing_base.py", line 341, in get_image_processor_dict',
        "    resolved_image_processor_file = cached_file(",
        f'  File "{sp}/transformers/utils/hub.py", line 422, in cached_files',
        "    raise EnvironmentError(",
        "OSError: CodeGoat24/UnifiedReward-7b-v1.5 does not appear to have a file named preprocessor_config.json. "
        "Checkout 'https://huggingface.co/CodeGoat24/UnifiedReward-7b-v1.5/tree/main'for available files.",
    ], dt=0.01)
    c.exit(inv, "exited", "1", cpu="27.640s")
    c.extra = {"unit_file": "[Service]\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server --model-path "
                            "CodeGoat24/UnifiedReward-7b-v1.5 --tokenizer-path CodeGoat24/UnifiedReward-7b-v1.5 "
                            "--chat-template chatml-llava --host 0.0.0.0 --port 30000\nRestart=no\n"}
    return expect4(c, "model_load_failure", False,
                   ["does not appear to have a file named preprocessor_config.json"],
                   ["healthy", "bad_argument", "unknown", "engine_exception"],
                   "https://github.com/CodeGoat24/UnifiedReward/issues/29",
                   "The project's SGLang launch script serves CodeGoat24/UnifiedReward-7b-v1.5 (a LLaVA model) whose "
                   "hub repo lacked preprocessor_config.json (the maintainer uploaded it afterwards): the OSError line "
                   "is verbatim (including the missing space before `for available files`). SGLang 0.4.7 (June "
                   "2025), the frames (the tokenizer manager's get_processor in the main process) and line numbers, "
                   "the scheduler's start-up lines, the unit and systemd's lines are ours. The main process dies "
                   "with the traceback (status 1) while the scheduler is still loading; Restart=no.")


@case4
def load4_vllm_012_glm47_no_tokenizer_file() -> Case:
    c = Case("load4_vllm_012_glm47_no_tokenizer_file", "vllm", "0.12.0", day=29, hour=14, tp=8,
             model="/data/models/glm4.7/GLM-4.7-FP8")
    venv = "/data/models/glm4.7/.venv12/lib/python3.13/site-packages"

    def api(inv, msg: str, dt: float = 0.01) -> None:  # 0.12's tag as the report shows it: `ESC[0;36m(APIServer pid=N)`
        c.app(inv, f"\x1b[0;36m(APIServer pid={inv.main})\x1b[0;0m {msg}", dt=dt, tag=False)

    inv = c.start()
    api(inv, f"INFO {STAMP_V} [api_server.py:1772] vLLM API server version 0.12.0", dt=4.8)
    api(inv, f"INFO {STAMP_V} [utils.py:253] non-default args: {{'model_tag': '{c.model}', 'host': '0.0.0.0', "
             f"'port': 8000, 'model': '{c.model}', 'served_model_name': ['glm-4.7'], 'tensor_parallel_size': 8, "
             "'enable_auto_tool_choice': True, 'tool_call_parser': 'glm47', 'reasoning_parser': 'glm45'}")
    api(inv, f"INFO {STAMP_V} [model.py:637] Resolved architecture: Glm4MoeForCausalLM", dt=3.1)
    api(inv, f"INFO {STAMP_V} [model.py:1750] Using max model len 202752")
    for line in [
        "Traceback (most recent call last):",
        '  File "/data/models/glm4.7/.venv12/bin/vllm", line 10, in <module>',
        "    sys.exit(main())",
        "             ~~~~^^",
        f'  File "{venv}/vllm/entrypoints/openai/api_server.py", line 183, in build_async_engine_client',
        "    async with build_async_engine_client_from_engine_args(",
        "               ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~^",
        "        engine_args,",
        "        ^^^^^^^^^^^^",
        "    ...<2 lines>...",
        "        client_config=client_config,",
        "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "    ) as engine:",
        "    ^",
        '  File "/data/models/miniconda3/lib/python3.13/contextlib.py", line 214, in __aenter__',
        "    return await anext(self.gen)",
        "           ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{venv}/vllm/entrypoints/openai/api_server.py", line 224, in build_async_engine_client_from_engine_args',
        "    async_llm = AsyncLLM.from_vllm_config(",
        f'  File "{venv}/vllm/tokenizers/registry.py", line 211, in get_tokenizer',
        "    tokenizer = tokenizer_cls.from_pretrained(",
        f'  File "{venv}/vllm/tokenizers/mistral.py", line 229, in from_pretrained',
        "    tokenizer = MistralCommonBackend.from_pretrained(",
        "                ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{venv}/transformers/tokenization_mistral_common.py", line 1791, in from_pretrained',
        '    raise ValueError(f"No tokenizer file found in directory: {pretrained_model_name_or_path}")',
        f"ValueError: No tokenizer file found in directory: {c.model}",
    ]:
        api(inv, line)
    c.exit(inv, "exited", "1", cpu="31.207s")
    return expect4(c, "model_load_failure", False, ["ValueError: No tokenizer file found in directory"],
                   ["healthy", "bad_argument", "unknown", "kv_cache_oom"],
                   "https://github.com/vllm-project/vllm/issues/31444",
                   "GLM-4.7 served from a local directory fails after upgrading vLLM from 0.11.2 to 0.12: the API "
                   "server cannot load the tokenizer (`No tokenizer file found in directory`, the report's title). "
                   "The `\\x1b[0;36m(APIServer pid=N)\\x1b[0;0m` tag and the api_server.py:183 / contextlib.py:214 "
                   "frames (Python 3.13, the venv path) are verbatim from the report; the tokenizer frames and the "
                   "ValueError line follow the same error in vllm-omni#917 (vLLM's tokenizers/mistral.py and "
                   "transformers' tokenization_mistral_common.py), the model directory name, the start-up lines and "
                   "systemd's lines are ours. Outside the 0.8-0.11 range on purpose (the report's version). "
                   "Restart=no: one failure.")


@case4
def load4_vllm_016_hub_connect_timeout_retries() -> Case:
    c = Case("load4_vllm_016_hub_connect_timeout_retries", "vllm", "0.16.0rc2", day=30, hour=14,
             model="openai/gpt-oss-120b")
    hf = "/usr/local/lib/python3.12/dist-packages/huggingface_hub"
    url = "https://huggingface.co/openai/gpt-oss-120b/resolve/main/config.json"

    def api(inv, msg: str, dt: float = 0.01) -> None:  # docker logs without a TTY: plain `(APIServer pid=1)` tag
        c.app(inv, f"(APIServer pid={inv.main}) {msg}", dt=dt, tag=False)

    def timeout_warning(inv, addr: str, rid: str) -> str:
        return (f"'(MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with "
                f"url: /openai/gpt-oss-120b/resolve/main/config.json (Caused by ConnectTimeoutError(<HTTPSConnection("
                f"host='huggingface.co', port=443) at {addr}>, 'Connection to huggingface.co timed out. (connect "
                f"timeout=10)'))\"), '(Request ID: {rid})')' thrown while requesting HEAD {url}")

    retries = [  # (wait, object address, request id); the 4th and 5th warnings are the report's
        ("1s", "0xf0ff49d12e10", "5b1f0c2e-8a43-4f0e-9d7a-2f6c1b0e4a11"),
        ("2s", "0xf0ff49d13350", "e07a4d93-1c5b-4b6e-a2f8-93d0c7e15b22"),
        ("4s", "0xf0ff49d13b90", "7c3e9f10-5d2a-4c81-8e4b-0a6f2d9c3e33"),
        ("8s", "0xf0ff49d14050", "092a846c-0a2a-4c7b-9fe6-cc51013bccfa"),
        ("8s", "0xf0ff49d14290", "2273093f-1834-4818-96e6-3a8b39b879b2"),
    ]
    inv = c.start()
    api(inv, f"INFO {STAMP_V} [utils.py:293]", dt=5.2)
    api(inv, f"INFO {STAMP_V} [utils.py:293]        █     █     █▄   ▄█")
    api(inv, f"INFO {STAMP_V} [utils.py:293]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version "
             "0.16.0rc2.dev236+g3b30e6150.d20260218")
    api(inv, f"INFO {STAMP_V} [utils.py:293]   █▄█▀ █     █     █     █  model   openai/gpt-oss-120b")
    api(inv, f"INFO {STAMP_V} [utils.py:293]    ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀")
    api(inv, f"INFO {STAMP_V} [utils.py:293]")
    api(inv, f"INFO {STAMP_V} [utils.py:229] non-default args: {{'model_tag': 'openai/gpt-oss-120b', 'host': "
             "'0.0.0.0', 'port': 8888, 'model': 'openai/gpt-oss-120b', 'max_model_len': 131072, "
             "'gpu_memory_utilization': 0.75, 'max_num_seqs': 128}")
    for i, (wait, addr, rid) in enumerate(retries):
        w = timeout_warning(inv, addr, rid)
        api(inv, w, dt=10.0)
        api(inv, f"[{STAMP_S}] WARNING _http.py:320: {w}")
        api(inv, f"Retrying in {wait} [Retry {i + 1}/5].")
        api(inv, f"[{STAMP_S}] WARNING _http.py:329: Retrying in {wait} [Retry {i + 1}/5].")
        c.at(float(wait[:-1]))
    w = timeout_warning(inv, "0xf0ff49d144d0", "b4e81a27-6f0c-4d59-8a1e-5c2d7f3b9e44")
    api(inv, w, dt=10.0)
    api(inv, f"[{STAMP_S}] WARNING _http.py:320: {w}")
    for line in [
        "Traceback (most recent call last):",
        f'  File "{hf}/file_download.py", line 1546, in _get_metadata_or_catch_error',
        "    metadata = get_hf_file_metadata(",
        "               ^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{hf}/utils/_http.py", line 306, in http_backoff',
        "    raise err",
        "requests.exceptions.ConnectTimeout: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', port=443): "
        "Max retries exceeded with url: /openai/gpt-oss-120b/resolve/main/config.json (Caused by ConnectTimeoutError("
        "<HTTPSConnection(host='huggingface.co', port=443) at 0xf0ff49d144d0>, 'Connection to huggingface.co timed "
        "out. (connect timeout=10)'))\"), '(Request ID: b4e81a27-6f0c-4d59-8a1e-5c2d7f3b9e44)')",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        f'  File "{hf}/file_download.py", line 1652, in _raise_on_head_call_error',
        "    raise LocalEntryNotFoundError(",
        "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the file on the Hub "
        "and we cannot find the requested files in the local cache. Please check your connection and try again or "
        "make sure your Internet connection is on.",
    ]:
        api(inv, line, dt=0.01)
    c.exit(inv, "exited", "1", cpu="9.871s")
    c.extra = {"unit_file": "[Service]\nEnvironment=HF_HOME=/root/.cache/huggingface\nExecStart=/usr/local/bin/vllm "
                            "serve openai/gpt-oss-120b --host 0.0.0.0 --port 8888 --max-model-len 131072 "
                            "--gpu-memory-utilization 0.75 --max-num-seqs 128\nRestart=no\n"}
    return expect4(c, "model_load_failure", False,
                   ["Max retries exceeded with url: /openai/gpt-oss-120b/resolve/main/config.json",
                    "LocalEntryNotFoundError"],
                   ["healthy", "bad_argument", "unknown", "port_in_use"],
                   "https://github.com/Avarok-Cybersecurity/dgx-vllm/issues/16",
                   "A DGX Spark image of vLLM 0.16.0rc2 serves openai/gpt-oss-120b with the weights mounted at a "
                   "path the HF cache does not resolve, on a host that cannot reach huggingface.co: every HEAD of "
                   "config.json times out and huggingface_hub retries. The `vllm serve` command, the logo lines, the "
                   "`(APIServer pid=1)` tag, and the two MaxRetryError/`Retrying in 8s [Retry 4/5]` warnings (with "
                   "their request ids and addresses) are verbatim; retries 1-3 and the sixth attempt repeat that "
                   "template with our ids. The report (titled `huggingface_hub.errors`) cuts before the final "
                   "exception: the ConnectTimeout → LocalEntryNotFoundError tail is huggingface_hub's template "
                   "(frames ours). Outside the 0.8-0.11 range on purpose (the report's version). Restart=no.")
