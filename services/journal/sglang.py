"""Parsers for SGLang's log lines (FORMATS a) and the error signatures diagnosis matches on.

`parse_decode` reads every known `Decode batch` shape (0.4.6 `Decode batch.` with no trailing comma,
0.5.2/0.5.5 with a trailing `,`, 0.5.9/0.5.23 without; `Decode batch [N]` heads; hybrid-model
`full token usage`; `cpu graph`/`npu graph`) with one regex per field, as FORMATS a.1 recommends.
`parse_prefill`, `parse_capacity` and `is_ready_line` cover the other lines pitcrew reads.
`signatures(message)` names the error signatures a line carries (SGLang, torch, NCCL, uvicorn, argparse,
the kernel and vLLM's equivalents) — diagnosis orders and weighs them; this module only recognises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PREFIX = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)((?: [A-Z_]+\d+)*)\] ")

_DECODE_HEAD = re.compile(r"Decode batch(?: \[\d+\])?[.,] ")
_RUNNING = re.compile(r"#running-req: (\d+)")
_TOKENS = re.compile(r"#(?:full )?token: (\d+)")
_USAGE = re.compile(r"token usage: ([\d.]+)")
_ACCEPT_LEN = re.compile(r"accept len: ([\d.]+)")
_ACCEPT_RATE = re.compile(r"accept rate: ([\d.]+)")
_GRAPH = re.compile(r"(?:cuda|cpu|npu|\w+) graph: (True|False)")
_GEN_TPUT = re.compile(r"gen throughput \(token/s\): ([\d.]+)")
_QUEUE = re.compile(r"#queue-req: (\d+)")

_PREFILL_HEAD = re.compile(r"Prefill batch(?: \[\d+\])?[.,] ")
_NEW_SEQ = re.compile(r"#new-seq: (\d+)")
_NEW_TOKEN = re.compile(r"#new-token: (\d+)")
_CACHED = re.compile(r"#cached-token: (\d+)")

_CAPACITY = re.compile(r"max_total_num_tokens=(\d+)")
_CAP_FIELDS = {
    "chunked_prefill_size": re.compile(r"chunked_prefill_size=(-?\d+)"),
    "max_prefill_tokens": re.compile(r"max_prefill_tokens=(\d+)"),
    "max_running_requests": re.compile(r"max_running_requests=(\d+)"),
    "context_len": re.compile(r"context_len=(\d+)"),
}
_AVAIL_MEM = re.compile(r"available_gpu_mem=([\d.]+) GB")

READY_TEXT = "The server is fired up and ready to roll!"


@dataclass(frozen=True, slots=True)
class DecodeStats:
    """One `Decode batch` line."""

    running_req: int
    tokens: int | None
    token_usage: float | None
    accept_len: float | None
    accept_rate: float | None
    cuda_graph: bool | None
    gen_throughput: float | None
    queue_req: int | None


@dataclass(frozen=True, slots=True)
class PrefillStats:
    """One `Prefill batch` line."""

    new_seq: int
    new_token: int | None
    cached_token: int | None
    token_usage: float | None
    running_req: int | None
    queue_req: int | None


@dataclass(frozen=True, slots=True)
class Capacity:
    """The scheduler's capacity line (`max_total_num_tokens=..., max_running_requests=...`)."""

    max_total_num_tokens: int
    chunked_prefill_size: int | None
    max_prefill_tokens: int | None
    max_running_requests: int | None
    context_len: int | None
    available_gpu_mem_gb: float | None


def strip_prefix(message: str) -> tuple[str | None, str, str]:
    """Split `[ts TPn] text` into (timestamp or None, rank tags like `TP0`, text)."""
    m = _PREFIX.match(message)
    if m is None:
        return None, "", message
    return m.group(1), m.group(2).strip(), message[m.end():]


def _i(rx: re.Pattern[str], text: str) -> int | None:
    m = rx.search(text)
    return int(m.group(1)) if m else None


def _f(rx: re.Pattern[str], text: str) -> float | None:
    m = rx.search(text)
    if not m:
        return None
    try:
        return float(m.group(1))
    except ValueError:
        return None


def parse_decode(message: str) -> DecodeStats | None:
    """Parse a `Decode batch` line of any known SGLang version; None for other lines."""
    if "Decode batch" not in message:
        return None
    head = _DECODE_HEAD.search(message)
    if head is None:
        return None
    body = message[head.end():]
    running = _i(_RUNNING, body)
    if running is None:
        return None
    graph = _GRAPH.search(body)
    return DecodeStats(
        running_req=running,
        tokens=_i(_TOKENS, body),
        token_usage=_f(_USAGE, body),
        accept_len=_f(_ACCEPT_LEN, body),
        accept_rate=_f(_ACCEPT_RATE, body),
        cuda_graph=(graph.group(1) == "True") if graph else None,
        gen_throughput=_f(_GEN_TPUT, body),
        queue_req=_i(_QUEUE, body),
    )


def parse_prefill(message: str) -> PrefillStats | None:
    """Parse a `Prefill batch` line; None for other lines."""
    if "Prefill batch" not in message:
        return None
    head = _PREFILL_HEAD.search(message)
    if head is None:
        return None
    body = message[head.end():]
    new_seq = _i(_NEW_SEQ, body)
    if new_seq is None:
        return None
    return PrefillStats(new_seq, _i(_NEW_TOKEN, body), _i(_CACHED, body), _f(_USAGE, body),
                        _i(_RUNNING, body), _i(_QUEUE, body))


def parse_capacity(message: str) -> Capacity | None:
    """Parse the scheduler's capacity line; None for other lines."""
    if "max_total_num_tokens=" not in message:
        return None
    total = _i(_CAPACITY, message)
    if total is None:
        return None
    values = {k: _i(rx, message) for k, rx in _CAP_FIELDS.items()}
    return Capacity(total, values["chunked_prefill_size"], values["max_prefill_tokens"],
                    values["max_running_requests"], values["context_len"], _f(_AVAIL_MEM, message))


def is_ready_line(message: str, *, engine: str = "sglang") -> bool:
    """True for the server's ready line.

    SGLang: `The server is fired up and ready to roll!` only — SGLang's uvicorn prints `Application startup
    complete.` before it even binds the port and before the warm-up request, so that line is not readiness.
    vLLM (`engine="vllm"`): uvicorn's `Application startup complete.` is the ready signal (FORMATS b.3).
    """
    if engine == "vllm":
        return "Application startup complete." in message
    return READY_TEXT in message


# --- error signatures --------------------------------------------------------------------------

# Name → pattern. Names are stable identifiers diagnosis rules refer to.
SIGNATURES: dict[str, re.Pattern[str]] = {
    "kv_not_enough": re.compile(
        r"Not enough memory\. Please try to increase --mem-fraction-static"
        r"|No available memory for the cache blocks"
        r"|KV cache is needed, which is larger than the available KV cache memory"
        r"|max_total_num_tokens=0\b|The memory pool is too small|Not enough memory for KV cache"
    ),
    "graph_capture_failed": re.compile(
        r"Capture (?:\w+ )*cuda graph failed|Capture (?:\w+ )*CUDA graph failed|CUDA graph capture failed",
        re.IGNORECASE,
    ),
    "graph_capture_begin": re.compile(r"Capture (?:\w+ )*(?:cuda|CUDA) graph begin|Capturing batches \("),
    "graph_capture_end": re.compile(r"Capture (?:\w+ )*(?:cuda|CUDA) graph end"),
    "cuda_oom": re.compile(
        r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|cudaErrorMemoryAllocation"
        r"|CUBLAS_STATUS_ALLOC_FAILED"
    ),
    "foreign_gpu_process": re.compile(r"Process (\d+) has ([\d.]+ [GM]iB) memory in use"),
    "gpu_memory_taken": re.compile(
        r"The memory capacity is unbalanced\. Some GPUs may be occupied by other processes"
        r"|Free memory on device .*is less than desired GPU memory utilization"
    ),
    "port_in_use": re.compile(r"address already in use|Address already in use|\[Errno 98\]"),
    "bad_argument": re.compile(
        r"^(?:[\w.-]+\.py|sglang|vllm|python3?(?: -m [\w.]+)?): error: "
        r"|error: unrecognized arguments:|error: argument --[\w-]+"
        r"|error: the following arguments are required"
    ),
    "usage_line": re.compile(r"^usage: [\w.-]+ \["),
    "model_load": re.compile(
        r"does not appear to have a file named|SafetensorError|Error while deserializing header"
        r"|Can't load tokenizer|Can't load the configuration|Repository Not Found|HFValidationError"
        r"|Incorrect path_or_model_id"
        r"|No such file or directory: .*(?:config\.json|\.safetensors|\.bin|tokenizer)"
        r"|is not a local folder and is not a valid model identifier|Cannot find any model weights"
        r"|PytorchStreamReader failed|invalid load key|Unrecognized model in "
        r"|model type `\w+` but Transformers"
    ),
    "nccl": re.compile(
        r"NCCL error|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|ncclRemoteError"
        r"|Watchdog caught collective operation timeout|DistBackendError|NCCL WARN|NCCL communicator"
        r"|ProcessGroupNCCL.*(?:timeout|timed out|error)"
    ),
    "xid": re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)(?: [^)]*)?\): (\d+), (.*)"),
    "gpu_lost": re.compile(
        r"GPU has fallen off the bus|fallen off the bus|Unable to determine the device handle for GPU"
        r"|uncorrectable ECC error|ECC error encountered|nvidia-smi error:|NVML_ERROR_GPU_IS_LOST"
        r"|GPU is lost|RmInitAdapter failed"
    ),
    "segfault": re.compile(
        r"Fatal Python error: (?:Segmentation fault|Aborted|Bus error|Floating point exception)"
        r"|Segmentation fault|SIGSEGV|core dumped|terminate called after throwing|Aborted \(core dumped\)"
        r"|\*\*\* SIGABRT|\*\*\* SIGBUS"
    ),
    "host_oom": re.compile(
        r"Out of memory: Killed process (\d+)|Memory cgroup out of memory: Killed process (\d+)"
        r"|oom-kill:constraint=|invoked oom-killer"
    ),
    "engine_exception": re.compile(
        r"Scheduler hit an exception|DetokenizerManager hit an exception|TokenizerManager hit an exception"
        r"|EngineCore encountered a fatal error|EngineCore failed to start|WorkerProc hit an exception"
        r"|Received sigquit from a child process|SIGQUIT received\. signum=|scheduler is dead"
    ),
    "exception_line": re.compile(
        r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?:: |$)"
    ),
    "traceback": re.compile(r"^Traceback \(most recent call last\):"),
    "health_failed": re.compile(r"Health check failed|watchdog timeout \(self\.watchdog_timeout"),
    "graceful_stop": re.compile(
        r"SIGTERM received\. signum=None frame=None\. Draining requests|Gracefully exiting\.\.\."
        r"|Signal SIGTERM received|\[shutdown\] API server: shutdown triggered|Shutting down"
    ),
    "init_failed": re.compile(r"Initialization failed\. warmup error"),
}

# Cheap substring gates: a line can only carry a signature if one of these is in it.
_GATES = (
    "memory", "Memory", "graph", "Graph", "Error", "error", "Exception", "exception", "NCCL", "nccl",
    "Xid", "bus", "ECC", "Segmentation", "SIG", "core dumped", "terminate", "Killed", "oom", "sigquit",
    "dead", "Traceback", "Health", "watchdog", "Gracefully", "Shutting", "shutdown", "Errno",
    "address already", "safetensors", "Safetensor", "tokenizer", "weights", "Fatal", "warmup", "Capturing",
    "Capture", "Process ", "Unable to determine", "NVML", "GPU", "Draining", "Not enough",
)


_GATE_RX = re.compile("|".join(re.escape(g) for g in _GATES))


def signatures(message: str) -> tuple[str, ...]:
    """Names of the SIGNATURES `message` matches (empty for ordinary lines)."""
    if not _GATE_RX.search(message) and not message.startswith("usage: "):
        return ()
    _, _, text = strip_prefix(message)
    text = text.lstrip()
    found = []
    for name, rx in SIGNATURES.items():
        target = text if name in {"exception_line", "traceback", "usage_line", "bad_argument"} else message
        if rx.search(target):
            found.append(name)
    return tuple(found)
