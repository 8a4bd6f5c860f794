"""The signature tables of diagnosis: which journal lines are evidence of what, as data.

Each `Sig` row turns a line into a typed signal: `signal` (the name the decision table reads), `source` (the
library that prints it: SGLang, vLLM V0/V1, torch, NCCL, CUDA, the kernel, the Hugging Face hub, systemd,
Python), the pattern, `case`: the corpus case (tests/data/incidents/<id>) or FORMATS section that shows
the line, and `seen`: the engine version of that case (`llamacpp/<name>`: lines the real llama.cpp server wrote
here, tests/data/engines/llamacpp/<name>.log). Adding a signature is one row plus one cited case.
`Mark` rows move an invocation to the next
**phase** (loading weights → sizing KV cache → capturing graphs → warm-up → ready/serving → stopping): each
signal is stored with the phase it occurred in, which is how a CUDA OOM is told apart as KV sizing, graph
capture or runtime.

`strip_engine_prefix` removes what engines put in front of their text (ANSI colour, vLLM's `(EngineCore_DP0
pid=N)` tag and `ERROR 06-30 15:01:24 [core.py:866]` / pre-0.8 `core.py:866]` head, SGLang's `[ts TP0]`,
llama.cpp's `0.00.008.022 E `), so
that Python's exception lines (`torch.OutOfMemoryError: ...`) can be recognised at the start of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.engines import Engine

PHASES = ("loading", "kv_sizing", "capture", "warmup", "ready", "stopping")


@dataclass(frozen=True, slots=True)
class Sig:
    """One signature row: lines matching `pattern` carry `signal`."""

    signal: str
    source: str
    pattern: re.Pattern[str]
    case: str
    on_text: bool = False  # match the text after the engine's prefix (exception lines, argparse)
    seen: str = ""  # the engine and version of the cited case: where this wording is known to be printed


@dataclass(frozen=True, slots=True)
class Mark:
    """A line that moves the invocation into `phase` (phases only move forward, except to `stopping`)."""

    phase: str
    pattern: re.Pattern[str]
    case: str


def _rx(text: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(text, flags)


SIGNATURES: tuple[Sig, ...] = (
    # --- KV-cache sizing at start (the fix is the memory budget) ---
    Sig("kv_not_enough", "sglang", _rx(r"Not enought? memory\. Please try to increase --mem-fraction-static"
                                       r"|max_total_num_tokens=0\b|The memory pool is too small"
                                       r"|Not enough memory for KV cache"), "kv_sgl_0432_not_enough_loop",
        seen="sglang 0.4.3.post2"),
    Sig("kv_not_enough", "vllm-v0/v1", _rx(r"No available memory for the cache blocks"),
        "kv_vllm_v1_085_no_cache_blocks", seen="vllm 0.8.5"),
    Sig("kv_not_enough", "vllm-v1", _rx(r"KV cache is needed, which is larger than the available KV cache memory"),
        "kv_vllm_015_max_seq_len_pp", seen="vllm 0.15.2rc1"),
    Sig("kv_not_enough", "vllm-v0", _rx(r"is larger than the maximum number of tokens that can be stored in KV cache"),
        "kv_vllm_v0_040_max_seq_len", seen="vllm 0.4.0"),
    # --- CUDA memory ---
    Sig("cuda_oom", "torch", _rx(r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory"
                                 r"|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED"),
        "rt_vllm_011_oom_exit0_restart", seen="vllm 0.11.0"),
    Sig("foreign_gpu_process", "torch", _rx(r"Process (\d+) has ([\d.]+ [GM]iB) memory in use"),
        "rt_vllm_011_oom_own_enginecore", seen="vllm 0.11.0"),
    Sig("gpu_memory_taken", "sglang", _rx(r"The memory capacity is unbalanced\. Some GPUs may be occupied"),
        "stale_sgl_032_unbalanced_foreign", seen="sglang 0.3.2"),
    Sig("gpu_memory_taken", "vllm-v1", _rx(r"Free memory on device .*is less than desired GPU memory utilization"),
        "stale_vllm_091_foreign_notebook", seen="vllm 0.9.1"),
    Sig("graph_capture_failed", "sglang", _rx(r"Capture (?:\w+ )*cuda graph failed|CUDA graph capture failed",
                                              re.IGNORECASE), "exc_sgl_044_capture_illegal_access",
        seen="sglang 0.4.4.post3"),
    Sig("capture_frame", "torch traceback", _rx(r"capture_model\(|in capture_model|graph_runner\.capture\("
                                               r"|cuda_graph_runner\.py"), "cap_vllm_019_capture_model_oom",
        seen="vllm 0.19.0"),
    Sig("capture_frame", "torch traceback", _rx(r"\.capture_end\(\)"), "cap3_vllm_0110_qwen3vl_full_decode_capture",
        seen="vllm 0.11.0"),
    # --- start-up refusals ---
    Sig("port_in_use", "python", _rx(r"address already in use|Address already in use|\[Errno 98\]|EADDRINUSE"),
        "port_vllm_066_tcpstore", seen="vllm 0.6.6"),
    Sig("port_in_use", "sglang", _rx(r"port (?:at )?\d+ is not available|is used by a process already"
                                     r"|[Pp]ort \d+ is (?:already )?in use"),
        "port_sgl_05x_metrics_port_not_available_loop", seen="sglang 0.5.12"),
    Sig("port_in_use", "llama.cpp", _rx(r"couldn't bind HTTP server socket"), "llamacpp/port_in_use",
        seen="llamacpp b1 (0c1e57098)"),
    # llama.cpp's own parser (common/arg.cpp), before its log starts: no prefix
    Sig("bad_argument", "llama.cpp", _rx(r"^error while handling argument \"-|^error: invalid argument: -"),
        "llamacpp/removed_flag", on_text=True, seen="llamacpp b1 (0c1e57098)"),
    Sig("bad_argument", "argparse", _rx(r"^(?:[\w.-]+\.py|sglang|vllm|python3?(?: -m [\w.]+)?): error: "
                                        r"|error: unrecognized arguments:|error: argument --[\w-]+"
                                        r"|error: the following arguments are required"),
        "arg_sgl_044_enable_metrics_underscore", on_text=True, seen="sglang 0.4.4.post3"),
    # pydantic's wrapping of vLLM's config checks (>= 0.10): the `Value error, ...` line carries the real message
    Sig("config_validation", "vllm (pydantic)", _rx(r"validation error for \w*(?:Config|Args)\b|^Value error, "),
        "arg_vllm_0111_pydantic_scheduler_config_loop", on_text=True, seen="vllm 0.11.1"),
    # the engine got past its argument checks: an exception before the first of these is argument validation
    Sig("engine_init", "sglang/vllm", _rx(r"Initializing an? (?:V[01] )?LLM engine|Init torch distributed begin"
                                          r"|Load weight begin|Starting to load model|Loading safetensors checkpoint"
                                          r"|Loading weights took|init_distributed_environment"
                                          r"|srv +load_model: loading model '"),
        "unk_vllm_0xx_worker_died_exit0", seen="vllm 0.25.0"),
    Sig("usage_line", "argparse", _rx(r"^usage: [\w.-]+ \["), "arg_vllm_011_api_server_positional", on_text=True,
        seen="vllm 0.11.0"),
    # --- the model: hub resolution, files, architecture ---
    Sig("model_load", "hf-hub", _rx(r"OfflineModeIsEnabled|LocalEntryNotFoundError|GatedRepoError"
                                    r"|We couldn't connect to 'https://huggingface\.co'"
                                    r"|Cannot access gated repo|Access to model .* is restricted"
                                    r"|401 Client Error"
                                    r"|Max retries exceeded with url: /(?:api/models|[\w.-]+/[\w.-]+/resolve)"
                                    r"|cannot find the appropriate snapshot folder|outgoing traffic has been disabled"
                                    r"|Repository Not Found|HFValidationError|Incorrect path_or_model_id"
                                    r"|HTTPSConnectionPool\(host='huggingface\.co'|Can't load config for"
                                    r"|we cannot find the requested files in the (?:disk|local) cache"
                                    r"|trying to access a gated repo|RepositoryNotFoundError|RevisionNotFoundError"),
        "load_vllm_011_local_entry_offline", seen="vllm 0.11.0"),
    Sig("model_load", "llama.cpp", _rx(r"failed to open GGUF file '|llama_model_load: error loading model"
                                       r"|data is not within the file bounds, model is corrupted or incomplete"),
        "llamacpp/missing_model", seen="llamacpp b1 (0c1e57098)"),
    Sig("model_load", "vllm", _rx(r"Invalid repository ID or local directory specified"),
        "load_vllm_085_invalid_repo_id_dir_loop", seen="vllm 0.8.5"),
    Sig("model_load", "transformers", _rx(r"does not appear to have a file named|Can't load tokenizer"
                                          r"|Can't load the configuration|Unrecognized model in "
                                          r"|is not a local folder and is not a valid model identifier"
                                          r"|model type `\w+` but Transformers"),
        "load_sgl_044_config_json_offline", seen="sglang 0.4.4"),
    Sig("model_load", "vllm/sglang registry", _rx(r"Model architectures? \[[^\]]*\] (?:are|is) not supported"
                                                  r"|Model architectures? \[[^\]]*\] failed to be inspected"),
        "load2_vllm_063_arch_not_supported_loop", seen="vllm 0.6.3"),
    Sig("model_load", "safetensors/torch", _rx(
        r"SafetensorError|Error while deserializing header|Cannot find any model weights"
        r"|No such file or directory: .*(?:config\.json|\.safetensors|\.bin|tokenizer)"
        r"|PytorchStreamReader failed|invalid load key"),
        "load_vllm_084_safetensors_header", seen="vllm 0.8.4"),
    # --- collectives ---
    Sig("nccl", "nccl/torch", _rx(r"NCCL error|ncclInternalError|ncclSystemError|ncclUnhandledCudaError"
                                  r"|ncclRemoteError|ncclInvalidUsage|Watchdog caught collective operation timeout"
                                  r"|nccl[A-Z]\w*Error"
                                  r"|NCCL WARN|NCCL communicator"
                                  r"|ProcessGroupNCCL.*(?:timeout|timed out|error)"),
        "nccl_sgl_03x_watchdog_http_up", seen="sglang 0.3.4"),
    # torch's distributed-backend exception: a collective failure unless the watchdog only relays a CUDA error
    Sig("dist_backend", "torch", _rx(r"DistBackendError"), "nccl_sgl_03x_watchdog_http_up", seen="sglang 0.3.4"),
    Sig("cuda_error", "cuda", _rx(r"CUDA error: (?!out of memory)[a-z]|cudaErrorIllegalAddress"
                                  r"|device-side assert triggered"),
        "exc_sgl_049_watchdog_illegal_http_up", seen="sglang 0.4.9"),
    # --- hardware ---
    Sig("gpu_lost", "cuda/nvml", _rx(r"fallen off the bus|Unable to determine the device handle for GPU"
                                     r"|uncorrectable ECC error|NVML_ERROR_GPU_IS_LOST|GPU is lost"
                                     r"|RmInitAdapter failed|cudaErrorECCUncorrectable"),
        "xid_vllm_011_contained_ecc_recovers", seen="vllm 0.11.0"),
    # --- native crashes ---
    Sig("segfault", "python/libc", _rx(r"Fatal Python error: (?:Segmentation fault|Aborted|Bus error"
                                       r"|Floating point exception)|Segmentation fault|SIGSEGV|core dumped"
                                       r"|\*\*\* SIGABRT|\*\*\* SIGBUS"),
        "seg_sgl_05x_scheduler_http_up",
        seen="sglang 0.5.2"),
    Sig("native_abort", "c++", _rx(r"terminate called after throwing"), "nccl_sgl_03x_watchdog_http_up",
        seen="sglang 0.3.4"),
    # --- the engine lost a process (an incident even when the unit exits 0 or keeps HTTP up) ---
    Sig("engine_death", "sglang", _rx(r"Scheduler hit an exception|DetokenizerManager hit an exception"
                                      r"|TokenizerManager hit an exception|Received sigquit from a child process"
                                      r"|SIGQUIT received\. signum=|scheduler is dead"),
        "exc_sgl_044_capture_illegal_access", seen="sglang 0.4.4.post3"),
    Sig("engine_death", "vllm-v1", _rx(r"EngineCore encountered a fatal error|EngineCore failed to start"
                                       r"|WorkerProc hit an exception|died unexpectedly|EngineDeadError"),
        "exc_vllm_013_illegal_access_exit0", seen="vllm 0.13.0"),
    Sig("engine_death", "vllm-v0", _rx(r"MQLLMEngine is already dead|Engine loop has died"
                                       r"|Engine process \(pid \d+\) died|AsyncEngineDeadError"
                                       r"|Background loop has errored already"),
        "unk2_vllm_063_engine_loop_died_no_restart", seen="vllm 0.6.3"),
    Sig("engine_death", "sglang", _rx(r"watchdog timeout \(self\.watchdog_timeout", re.IGNORECASE),
        "FORMATS a (SGLang's scheduler watchdog)"),
    Sig("died_silently", "vllm-v1", _rx(r"died unexpectedly"), "unk_vllm_0101_enginecore_died", seen="vllm 0.10.1"),
    # wrappers: they say that something failed, the root cause is the error before them
    Sig("wrapper", "vllm-v0", _rx(r"Engine process failed to start|Error executing method|MQLLMEngine is already dead"
                                  r"|Engine loop has died|Engine process \(pid \d+\) died|AsyncEngineDeadError"
                                  r"|Background loop has errored already"),
        "cap_vllm_v0_082_capture_oom_wrapper", seen="vllm 0.8.2"),
    Sig("wrapper", "vllm-v1", _rx(r"Engine core initialization failed|EngineDeadError|AsyncLLM output_handler failed"
                                  r"|EngineCore failed to start|WorkerProc hit an exception|died unexpectedly"
                                  r"|WorkerProcDiedError|Worker failed with error '"),
        "cap_vllm_019_capture_model_oom", seen="vllm 0.19.0"),
    # --- Python ---
    Sig("exception_line", "python", _rx(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?:: |$)"),
        "exc_vllm_013_illegal_access_exit0", on_text=True, seen="vllm 0.13.0"),
    # module-qualified exception classes not named ...Error (torch._dynamo.exc.BackendCompilerFailed, triton's)
    Sig("exception_line", "python", _rx(r"^(?:[a-z_]\w*\.)+[A-Z]\w*: \S"),
        "exc_sgl_049_triton_smem_out_of_resources", on_text=True, seen="sglang 0.4.9.post6"),
    Sig("traceback", "python", _rx(r"Traceback \(most recent call last\):"), "FORMATS a"),
    Sig("health_failed", "sglang", _rx(r"Health check failed"), "seg_sgl_05x_scheduler_http_up", seen="sglang 0.5.2"),
    Sig("graceful_stop", "sglang/uvicorn", _rx(r"SIGTERM received\. signum=None frame=None\. Draining requests"
                                               r"|Gracefully exiting\.\.\.|Signal SIGTERM received"
                                               r"|\[shutdown\] API server: shutdown triggered"),
        "op_sgl_059_stop_graceful_sigkill", seen="sglang 0.5.9"),
    Sig("shutdown_line", "vllm/uvicorn", _rx(r"Engine is gracefully shutting down|EngineCore exiting"
                                             r"|Shutting down engine|^INFO: +Shutting down$"),
        "op_vllm_085_restart_during_compile", on_text=True, seen="vllm 0.8.5"),
    Sig("assert_source", "python traceback", _rx(r"^assert "), "exc2_vllm_0111_mla_assert_exit0", on_text=True,
        seen="vllm 0.11.1"),
    Sig("init_failed", "sglang", _rx(r"Initialization failed\. warmup error"), "FORMATS a"),
    # noise: the HTTP layer's answer to a bad request (not an incident)
    Sig("client_error", "vllm/uvicorn", _rx(r'HTTP/1\.1" 4\d\d |maximum context length|prompt is too long'
                                           r"|Prompt length of \d+ is longer|is longer than the maximum model length"
                                           r"|Aborted request|client disconnected|ClientDisconnect"),
        "ok_vllm_090_context_length_400s", seen="vllm 0.9.0"),
)

MARKS: tuple[Mark, ...] = (
    Mark("kv_sizing", _rx(r"Load weight end|Loading weights took|Model loading took|Memory profiling takes"
                          r"|KV Cache is allocated|Available KV cache memory|# GPU blocks:|GPU KV cache size"
                          r"|llama_context: n_ctx_seq \(\d+\)|llama_kv_cache: "),
         "rt_vllm_011_oom_exit0_restart"),
    Mark("capture", _rx(r"Capture (?:\w+ )*cuda graph begin|Capturing CUDA graph(?: shapes|s \()|Capturing batches \("
                        r"|Capturing cudagraphs|Capturing the model for CUDA graphs|in capture_model"
                        r"|capture_model\(\)|graph_runner\.capture|cuda_graph_runner\.py", re.IGNORECASE),
         "cap_vllm_v0_082_capture_oom_wrapper"),
    Mark("warmup", _rx(r"Capture (?:\w+ )*cuda graph end|Graph capturing finished"), "cap_vllm_019_capture_model_oom"),
    Mark("ready", _rx(r"The server is fired up and ready to roll!|Decode batch|Avg generation throughput"),
         "FORMATS a.1/b.3"),
)

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_VLLM_TAG = re.compile(r"^\s*\((?:[A-Za-z_]+[\w]*)(?: rank=\d+)? pid=\d+\)\s*")  # (VllmWorker rank=1 pid=N) too
_VLLM_HEAD = re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
                        r"(?:\[[\w.]+:\d+\]|[\w.]+:\d+\]) ?")
_LLAMA_HEAD = re.compile(r"^\d+\.\d\d\.\d{3}\.\d{3} [IWEDT] ")  # llama.cpp's log prefix
_SGL_HEAD = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Z_]+\d+)*\] ")
_GATE = re.compile(
    r"memory|Memory|graph|Graph|rror|xception|NCCL|nccl|bus|ECC|Segmentation|SIG|core dumped|terminate"
    r"|Killed|oom|sigquit|dead|died|Traceback|Health|watchdog|Gracefully|shutdown|Errno|address already"
    r"|ADDRINUSE|afetensor|tokenizer|weights|Fatal|warmup|Process |device handle|NVML|GPU|Draining|Not enough"
    r"|huggingface|gated|restricted|401|Max retries|snapshot|Offline|Repository|path_or_model|HTTP/1\.1\" 4"
    r"|context length|too long|longer|Aborted|disconnect|usage: |max_total_num_tokens|initialization failed"
    r"|capture_model|graph_runner|capture_end|exiting|hutting down|assert |in use|not available|exc\.|Failed"
    r"|OutOfResources|Initializ|Init torch|Load weight|load model|loading model|couldn't bind|n_ctx_seq|failed to open"
)


def strip_engine_prefix(message: str) -> str:
    """The text of an engine line without colour codes, process tag and log head."""
    text = _ANSI.sub("", message) if "\x1b" in message else message
    text = _VLLM_TAG.sub("", text, count=1)
    text = _VLLM_HEAD.sub("", text, count=1)
    text = _SGL_HEAD.sub("", text, count=1)
    text = _LLAMA_HEAD.sub("", text, count=1)
    return text.lstrip()


def signals_of(message: str) -> tuple[str, ...]:
    """The signal names `message` carries, in table order without repeats (empty for ordinary lines)."""
    if not _GATE.search(message):
        return ()
    text = strip_engine_prefix(message)
    found: list[str] = []
    for row in SIGNATURES:
        if row.signal not in found and row.pattern.search(text if row.on_text else message):
            found.append(row.signal)
    return tuple(found)


def phase_mark(message: str, *, engine: Engine | None) -> str | None:
    """The phase this line starts (`None` for most lines). ``engine`` is the engine the invocation's lines were
    recognised as (`services.engines.engine_of_line`): its own ready line starts `ready` too (vLLM's `Application
    startup complete.`, which SGLang's uvicorn prints before its warm-up)."""
    if engine is not None and engine.is_ready_line(message):
        return "ready"
    for mark in MARKS:
        if mark.pattern.search(message):
            return mark.phase
    return None
