"""SGLang as pitcrew knows it: the `Engine` protocol implemented for ``python -m sglang.launch_server``.

Detection (the plain ``python -m sglang.launch_server`` and wrapped forms), the flag schema
(`services.engines.sglang.flags`), the ready line (`The server is fired up and ready to roll!`; SGLang's
uvicorn prints `Application startup complete.` before it even binds the port and before the warm-up
request, so that line is not readiness), the one-line capacity (`max_total_num_tokens=…`), the
`/metrics` gauges and counters, the memory-advice flags and the host facts preflight uses.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from services.engines.flags import FlagDef, first_flag, get_flag, number_or_none, plain_version
from services.engines.metrics import metric_delta, metric_mean
from services.engines.protocol import Capacity, ForecastKnobs, HelpProbe, Metrics, WindowFigures
from services.engines.sglang import flags
from services.engines.sglang.flags import apply_changes, flag_help_lines, lookup_flag, read_values
from services.engines.sglang.log import READY_TEXT, parse_capacity

__all__ = ["SGLANG", "SGLang", "SglangCapacityReader"]

_MODULES = ("sglang.launch_server", "sglang.srt.server", "sglang")
# the unit's interpreter: its sglang's version, launch_server's --help, and the value types of the parser object
_HELP = HelpProbe(
    version="\"$1\" -c 'import importlib.metadata as m; print(m.version(\"sglang\"))' 2>/dev/null || echo \"?\"",
    help='"$1" -m sglang.launch_server --help',
    types=('"$1" -c "import argparse, json; from sglang.srt.server_args import ServerArgs; '
           "p = argparse.ArgumentParser(); ServerArgs.add_cli_args(p); "
           "print(json.dumps({s: getattr(a.type, '__name__', None) for a in p._actions"
           ' for s in a.option_strings if a.type is not None}))"'),
    what="-m sglang.launch_server --help")


class SglangCapacityReader:
    """SGLang's capacity is one scheduler line."""

    def __init__(self) -> None:
        self.capacity: Capacity | None = None

    def feed(self, message: str) -> bool:
        cap = parse_capacity(message)
        if cap is not None:
            self.capacity = cap
        return cap is not None


class SGLang:
    name = "sglang"
    display = "SGLang"

    flags: tuple[FlagDef, ...] = flags.FLAGS
    knob_flags: Mapping[str, str] = {
        "steps": "--speculative-num-steps", "mem": "--mem-fraction-static", "context": "--context-length",
        "max running": "--max-running-requests", "chunked prefill": "--chunked-prefill-size", "tp": "--tp-size",
        "draft tokens": "--speculative-num-draft-tokens"}
    knob_labels: Mapping[str, str] = {**{k: k for k in knob_flags}, "draft tokens": "draft"}
    knob_absent: Mapping[str, str] = {}
    # Flags the engine itself marks deprecated (SGLang 0.5.9 `DeprecatedAction`, its help says what replaces them).
    deprecated_flags: Mapping[str, str] = {
        "--hybrid-kvcache-ratio": "use --swa-full-tokens-ratio instead (deprecated in 0.5.9)",
        "--prefill-round-robin-balance": "deprecated in 0.5.9; it has no effect"}
    # more draft tokens reserve more per request; a larger static fraction leaves less headroom outside it; more
    # running requests or context need more
    memory_direction: Mapping[str, int] = {
        "--speculative-num-steps": 1, "--speculative-num-draft-tokens": 1, "--mem-fraction-static": 1,
        "--max-running-requests": 1, "--context-length": 1, "--chunked-prefill-size": 1}
    # the flags memory advice names (SGLang's ServerArgs)
    advice_flags: Mapping[str, str] = {
        "mem": "--mem-fraction-static", "len": "--context-length", "seqs": "--max-running-requests",
        "spec": "fewer speculative steps (--speculative-num-steps)", "graphs": "--cuda-graph-max-bs",
        "chunk": "--chunked-prefill-size"}
    default_port = 30000
    mem_flag = "--mem-fraction-static"
    mem_default: float | None = None
    no_model = "model path: ExecStart= gives no --model-path"
    help_unread: str | None = None
    help_probe: HelpProbe | None = _HELP

    # --- detection and version
    def plain_launch(self, argv: Sequence[str]) -> tuple[str, int] | None:
        if (len(argv) >= 3 and os.path.basename(argv[0]).startswith("python") and argv[1] == "-m"
                and argv[2] in ("sglang.launch_server", "sglang.launch_server.py")):
            return argv[0], 3
        return None

    def launched_by(self, word: str, nxt: str) -> bool:
        if word == "-m" and nxt and (nxt in _MODULES or nxt.startswith("sglang.launch_server")):
            return True
        return word.rsplit("/", 1)[-1] == "sglang" and nxt in ("serve", "launch_server")

    def version_of(self, line: str) -> str | None:
        return None  # SGLang logs no version line at start

    version_path = "/get_server_info"  # its server arguments, scheduler figures and ``"version": "0.5.2"``

    def served_version(self, doc: object) -> str | None:
        return plain_version(doc.get("version") if isinstance(doc, dict) else None)

    def device_of(self, line: str) -> str | None:
        return None  # SGLang runs on GPUs here

    def claims_line(self, message: str) -> bool:
        return False  # the default engine: lines no engine claims are read as SGLang's

    # --- vocabulary
    # the engine's flags module answers these four as they are
    lookup_flag = staticmethod(lookup_flag)
    apply_changes = staticmethod(apply_changes)
    flag_help_lines = staticmethod(flag_help_lines)
    read_values = staticmethod(read_values)

    def parser_check(self, argv: Sequence[str]) -> list[str] | None:
        return None  # preflight reads SGLang's --help and argparse types (services.experiments.preflight)

    def label_hides(self, flag: str, values: Mapping[str, str]) -> bool:
        """SGLang's draft tokens, when they are steps + 1 (what SGLang derives with topk 1): steps says it."""
        if flag != "--speculative-num-draft-tokens":
            return False
        steps, draft, topk = (values.get("--speculative-num-steps"), values.get("--speculative-num-draft-tokens"),
                              values.get("--speculative-eagle-topk", "1"))
        return bool(steps and draft and steps.isdigit() and draft.isdigit() and topk == "1"
                    and int(draft) == int(steps) + 1)

    # --- lifecycle
    warmup_phase = "capturing CUDA graphs"

    def is_ready_line(self, message: str) -> bool:
        return READY_TEXT in message

    def capacity_reader(self) -> SglangCapacityReader:
        return SglangCapacityReader()

    def capacity_extras(self, capacity: Capacity) -> dict[str, object]:
        return {}

    # --- metrics
    def window_figures(self, before: Metrics | None, after: Metrics | None, elapsed_s: float) -> WindowFigures:
        """`/metrics` (needs `--enable-metrics`): accept length/rate gauges at the window's end, generation
        throughput from `sglang:generation_tokens_total` over the window (else the gauge)."""
        gen = metric_delta(before, after, "sglang:generation_tokens_total")
        throughput = gen / elapsed_s if gen is not None and elapsed_s > 0 else None
        if throughput is None:
            throughput = metric_mean(after, "sglang:gen_throughput")
        return WindowFigures(accept_len=metric_mean(after, "sglang:spec_accept_length"),
                             accept_rate=metric_mean(after, "sglang:spec_accept_rate"),
                             gen_throughput=throughput)

    def report_notes(self, capacity: Mapping[str, Any], no_accept: bool) -> list[str]:
        return ["accept len/rate: SGLang reports them on /metrics only with --enable-metrics."] if no_accept else []

    def forecast_knobs(self, argv: Sequence[str], label: str) -> ForecastKnobs:
        """SGLang's defaults and topk-1 coupling applied: draft tokens = steps + 1 unless topk > 1 pins them."""
        algo = get_flag(argv, "--speculative-algorithm")
        steps = number_or_none(get_flag(argv, "--speculative-num-steps"), int)
        topk = number_or_none(get_flag(argv, "--speculative-eagle-topk"), int) or 1
        draft = number_or_none(get_flag(argv, "--speculative-num-draft-tokens"), int)
        if algo is None:
            d = 1
        else:
            steps = steps or 3
            d = steps + 1 if topk == 1 or draft is None else draft
        return ForecastKnobs(draft_tokens=d,
                             mem_fraction=number_or_none(get_flag(argv, "--mem-fraction-static"), float),
                             context_length=number_or_none(get_flag(argv, "--context-length"), int),
                             explicit_max_running=number_or_none(get_flag(argv, "--max-running-requests"), int),
                             label=label or (f"steps {steps}" if algo is not None else "no speculation"))

    # --- host facts
    def model_of(self, argv: Sequence[str]) -> str:
        return first_flag(argv, "--model-path", "--model") or ""


SGLANG = SGLang()
