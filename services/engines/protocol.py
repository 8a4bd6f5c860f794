"""What an inference engine is to pitcrew: the one typed protocol every engine package implements.

Owns `Engine` (the protocol: detection and version, the flag vocabulary and schema, the lifecycle
signals, the metrics, the failure advice, the host facts preflight needs) and the plain values its
methods return: `Capacity` (what a start logged about its KV cache), `CapacityReading` (a reader
fed one start's lines), `WindowFigures` (server-side figures of a benchmark window, from two
`/metrics` snapshots), `ForecastKnobs` (the features the capacity forecast fits on) and `HelpProbe` (how
preflight reads the engine's own command line on a host).
Each engine lives in its own package (`services.engines.sglang`, `services.engines.vllm`,
`services.engines.llamacpp`) and is
registered once in `services.engines.registry`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from services.engines.flags import FlagDef, FlagPlan

__all__ = ["Capacity", "CapacityReading", "Engine", "ForecastKnobs", "HelpProbe", "Metrics", "WindowFigures"]

Metrics = Mapping[str, list[float]]  # a `/metrics` snapshot: metric name -> values of its series


@dataclass(frozen=True, slots=True)
class Capacity:
    """A server's capacity at start: SGLang's scheduler line (`max_total_num_tokens=..., max_running_requests=...`)
    or vLLM's KV cache lines (`services.engines.vllm.VllmCapacityReader`); None where the engine does not say."""

    max_total_num_tokens: int  # KV cache size in tokens (vLLM: `GPU KV cache size: N tokens`)
    chunked_prefill_size: int | None
    max_prefill_tokens: int | None
    max_running_requests: int | None
    context_len: int | None
    available_gpu_mem_gb: float | None
    max_concurrency: float | None = None  # vLLM: `Maximum concurrency for N tokens per request: X`
    concurrency_tokens: int | None = None  # ... the N of that line
    kv_cache_gib: float | None = None  # vLLM: `Available KV cache memory: X GiB`
    device: str | None = None  # where the KV cache lives when the engine says (vLLM: "cpu" from `CPU KV cache size`)


class CapacityReading(Protocol):
    """Gathers one start's capacity lines into `capacity`."""

    capacity: Capacity | None

    def feed(self, message: str) -> bool:
        """Read one message; True when it completed the capacity."""
        ...


@dataclass(frozen=True, slots=True)
class WindowFigures:
    """Server-side figures of one benchmark window; None where the server does not say."""

    accept_len: float | None = None
    accept_rate: float | None = None
    gen_throughput: float | None = None


@dataclass(frozen=True, slots=True)
class ForecastKnobs:
    """The features of an ExecStart argv that the capacity forecast fits on, in the engine's own defaults."""

    draft_tokens: int
    mem_fraction: float | None
    context_length: int | None
    explicit_max_running: int | None
    label: str  # "steps 4" / "spec tokens 5" / "no speculation"


@dataclass(frozen=True, slots=True)
class HelpProbe:
    """How preflight reads the engine's own command line on a host: bash snippets run there, each given the
    launcher `plain_launch` found as `$1` (the interpreter of ``python -m …``, or the ``vllm`` script)."""

    version: str  # prints the installed version (last line), "?" when it cannot tell
    help: str  # prints the parser's full ``--help`` (CPython argparse layout)
    types: str = ""  # prints {option: type name} as JSON, read from the parser object ("": not offered)
    what: str = "--help"  # how the help was asked for, for messages ("-m sglang.launch_server --help")


class Engine(Protocol):
    """Everything pitcrew knows about one inference engine."""

    # --- detection and version
    name: str  # "sglang": the word stored with revisions and runs, and the bench child's metrics source
    display: str  # "SGLang"

    def plain_launch(self, argv: Sequence[str]) -> tuple[str, int] | None:
        """(interpreter or executable, index of the first flag) when argv is the engine's plain launch form."""
        ...

    def launched_by(self, word: str, nxt: str) -> bool:
        """True when an argv word and the one after it launch this engine (``-m MODULE``, ``vllm serve``), so
        wrappers such as ``env``, ``numactl …`` or ``uv run`` before them do not hide the engine."""
        ...

    def version_of(self, line: str) -> str | None:
        """The version when ``line`` is this engine's own version line, else None."""
        ...

    # the running server's HTTP path whose JSON answer names its version ("/props"), "" when it has none: the
    # version of an engine that logs none at start (SGLang; llama.cpp at its default verbosity)
    version_path: str

    def served_version(self, doc: object) -> str | None:
        """The version in `version_path`'s JSON answer, written as `version_of` writes it, else None."""
        ...

    def device_of(self, line: str) -> str | None:
        """Where the engine runs when one of its start lines says it is not on GPUs ("cpu": vLLM's CPU build),
        else None (on GPUs, or the line does not say)."""
        ...

    def claims_line(self, message: str) -> bool:
        """True when a journal line is unmistakably this engine's (diagnosis reads a unit's lines as that engine's
        when it has no readable unit file); the default engine claims none: it is what no claim means."""
        ...

    # --- vocabulary: the flag schema, the neutral knobs, writing a change back
    flags: tuple[FlagDef, ...]
    knob_flags: Mapping[str, str]  # neutral knob word ("steps", "mem", …) -> this engine's flag
    knob_labels: Mapping[str, str]  # knob word -> how labels name it here ("steps" / "spec tokens")
    knob_absent: Mapping[str, str]  # knob word this engine has no flag for -> why (llama.cpp's "mem")
    deprecated_flags: Mapping[str, str]  # flag -> what the engine's own help says instead
    # this engine's flags whose larger value makes a configuration need more memory (at start or under load): 1;
    # a smaller value: -1; a flag not listed has no known direction. `tune` rules out, without a restart, every
    # configuration at least as demanding in each of its knobs as one that ran out of memory.
    memory_direction: Mapping[str, int]

    def lookup_flag(self, word: str) -> FlagDef | None: ...

    def apply_changes(self, argv: Sequence[str], changes: Mapping[str, str | None]) -> FlagPlan:
        """Plan changes (flag name -> value, None to remove) on an argv, written back the engine's own way."""
        ...

    def flag_help_lines(self) -> tuple[str, ...]: ...

    def parser_check(self, argv: Sequence[str]) -> list[str] | None:
        """A host command that runs the engine's own parser on the whole argv (exit 0: accepted; else its first
        lines say what it refuses), or None when preflight reads the engine's ``--help`` instead (SGLang)."""
        ...

    def read_values(self, argv: Sequence[str]) -> dict[str, str]:
        """The schema's flags an argv sets, name -> value."""
        ...

    def label_hides(self, flag: str, values: Mapping[str, str]) -> bool:
        """True when a config label need not name ``flag`` (its value follows from the others)."""
        ...

    # --- lifecycle signals
    # what a start does between its capacity lines and ready, in the job's progress ("capturing CUDA graphs"); ""
    # when it does nothing worth naming (llama.cpp); a capacity on the CPU (`Capacity.device`) captures no graphs
    warmup_phase: str

    def is_ready_line(self, message: str) -> bool: ...

    def capacity_reader(self) -> CapacityReading: ...

    def capacity_extras(self, capacity: Capacity) -> dict[str, object]:
        """The engine's own capacity figures stored with a run besides the common ones."""
        ...

    # --- metrics
    def window_figures(self, before: Metrics | None, after: Metrics | None, elapsed_s: float) -> WindowFigures:
        """Accept length/rate and generation throughput of a window, from `/metrics` at its start and end."""
        ...

    def forecast_knobs(self, argv: Sequence[str], label: str) -> ForecastKnobs: ...

    def report_notes(self, capacity: Mapping[str, Any], no_accept: bool) -> list[str]:
        """What a run's report should say this engine does not report (``no_accept``: no accept length in any level),
        so an empty cell is not read as zero; ``capacity`` is the run's stored capacity."""
        ...

    # --- failures: advice wording
    # what memory advice names: mem, len, seqs, spec, graphs, chunk; kv_space where the KV cache's size is set
    # otherwise on the CPU (vLLM's VLLM_CPU_KVCACHE_SPACE)
    advice_flags: Mapping[str, str]

    # --- host facts (preflight)
    default_port: int
    mem_flag: str  # the flag of the GPU memory fraction ("" when the engine has none: llama.cpp)
    mem_default: float | None  # its value when the unit does not set it (None: the engine decides at start)
    no_model: str  # the preflight line when ExecStart= names no model
    help_unread: str | None  # None when preflight checks a new argv against the engine's own --help, else why not
    help_probe: HelpProbe | None  # how preflight reads that --help (set exactly when help_unread is None)

    def model_of(self, argv: Sequence[str]) -> str:
        """The model the argv serves ("" when it names none)."""
        ...
