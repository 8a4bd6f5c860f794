"""vLLM as pitcrew knows it: the `Engine` protocol implemented for ``vllm serve`` (vLLM 0.11).

Detection (``vllm serve MODEL …`` and ``python -m vllm.entrypoints.openai.api_server …``, wrapped forms
too), the version lines (FORMATS.md b.0/b.3), the flag schema with spec tokens written inside the
``--speculative-config`` JSON (`services.engines.vllm.flags`), the ready line (uvicorn's `Application startup
complete.`, FORMATS b.3), the capacity spread over several lines, the speculative-decoding counters of
`/metrics`, the memory-advice flags and the host facts preflight uses.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from services.engines.flags import FlagDef, first_flag, number_or_none, plain_version
from services.engines.metrics import metric_delta
from services.engines.protocol import Capacity, ForecastKnobs, HelpProbe, Metrics, WindowFigures
from services.engines.vllm import flags
from services.engines.vllm.flags import apply_changes, flag_help_lines, lookup_flag, read_values
from services.engines.vllm.log import VllmCapacityReader, device_of_line

__all__ = ["VLLM", "Vllm"]

_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
# vLLM 0.11 `api_server.py:1839`, 0.33 with VLLM_DISABLE_LOG_LOGO, the 0.33 logo line (FORMATS.md b.0/b.3)
_VERSION_RES: tuple[re.Pattern[str], ...] = (
    re.compile(r"vLLM API server version (\d+\.\d+\.\d+[0-9A-Za-z.+-]*)"),
    re.compile(r"vLLM server version (\d+\.\d+\.\d+[0-9A-Za-z.+-]*), serving model"),
    re.compile(r"Initializing a V1 LLM engine \(v(\d+\.\d+\.\d+[0-9A-Za-z.+-]*)\)"),
    re.compile(r"█\s+version (\d+\.\d+\.\d+[0-9A-Za-z.+-]*)\s*$"),
)

# `$1` is the `vllm` script (its interpreter is on its #! line) or the interpreter of `python -m vllm.…`; the
# version from the package metadata (no vLLM import: fast), the help with every flag (`--help` alone lists only
# the config groups since 0.10)
_PY = ('py="$1"; if [ "$(head -c 2 "$1" 2>/dev/null)" = "#!" ]; then '
       'py=$(head -n 1 "$1" | cut -c 3- | cut -d " " -f 1); fi; ')
_HELP = HelpProbe(
    version=_PY + "\"$py\" -c 'import importlib.metadata as m; print(m.version(\"vllm\"))' 2>/dev/null || echo \"?\"",
    help=('if [ "$(head -c 2 "$1" 2>/dev/null)" = "#!" ]; then "$1" serve --help=all; '
          'else "$1" -m vllm.entrypoints.openai.api_server --help=all; fi'),
    what="vllm serve --help=all")

# a line only vLLM writes: its version line, its engine's start, its process tags, its module paths
_LINE = re.compile(r"vLLM API server version|Initializing an? (?:V[01] )?LLM engine|\(APIServer pid=|\(EngineCore"
                   r"|\(VllmWorkerProcess pid=|\((?:VllmWorker-\d+|Worker(?:_TP\d+)?) pid=\d+\)"
                   r"|vllm/(?:entrypoints|engine|worker|v1)/")


class Vllm:
    name = "vllm"
    display = "vLLM"

    flags: tuple[FlagDef, ...] = flags.FLAGS
    knob_flags: Mapping[str, str] = {
        "steps": "--num-speculative-tokens", "mem": "--gpu-memory-utilization", "context": "--max-model-len",
        "max running": "--max-num-seqs", "chunked prefill": "--max-num-batched-tokens",
        "tp": "--tensor-parallel-size", "draft tokens": "--num-speculative-tokens"}
    knob_labels: Mapping[str, str] = {**{k: k for k in knob_flags}, "steps": "spec tokens",
                                      "draft tokens": "spec tokens"}
    knob_absent: Mapping[str, str] = {}
    deprecated_flags: Mapping[str, str] = {}
    # more spec tokens grow the sampler's buffers and the decode workspace per request; a larger utilization leaves
    # less outside vLLM's budget (CUDA context, graphs, the decode workspace); more sequences or context need more
    memory_direction: Mapping[str, int] = {
        "--num-speculative-tokens": 1, "--gpu-memory-utilization": 1, "--max-num-seqs": 1, "--max-model-len": 1,
        "--max-num-batched-tokens": 1}
    # the flags memory advice names (vLLM's EngineArgs)
    advice_flags: Mapping[str, str] = {
        "mem": "--gpu-memory-utilization", "len": "--max-model-len", "seqs": "--max-num-seqs",
        "spec": "fewer speculative tokens (num_speculative_tokens in --speculative-config)",
        "graphs": "the CUDA-graph capture sizes (--compilation-config) or --enforce-eager",
        "chunk": "--max-num-batched-tokens",
        "kv_space": "VLLM_CPU_KVCACHE_SPACE (the KV cache's GiB of host memory, in the unit's Environment=)"}
    default_port = 8000
    mem_flag = "--gpu-memory-utilization"
    mem_default: float | None = 0.9  # vLLM 0.11 CacheConfig; vLLM refuses to start below it (FORMATS b.4)
    no_model = "model path: ExecStart= gives no model (vllm serve MODEL or --model)"
    help_unread: str | None = None
    help_probe: HelpProbe | None = _HELP

    # --- detection and version
    def plain_launch(self, argv: Sequence[str]) -> tuple[str, int] | None:
        if (len(argv) >= 3 and os.path.basename(argv[0]).startswith("python") and argv[1] == "-m"
                and argv[2] == "vllm.entrypoints.openai.api_server"):
            return argv[0], 3
        if len(argv) >= 2 and os.path.basename(argv[0]) == "vllm" and argv[1] == "serve":
            return argv[0], 2
        return None

    def launched_by(self, word: str, nxt: str) -> bool:
        if word == "-m" and nxt and (nxt in _MODULES or nxt.startswith("vllm.entrypoints.")):
            return True
        return word.rsplit("/", 1)[-1] == "vllm" and nxt == "serve"

    def claims_line(self, message: str) -> bool:
        return bool(_LINE.search(message))

    def version_of(self, line: str) -> str | None:
        for rx in _VERSION_RES:
            m = rx.search(line)
            if m:
                return m.group(1)
        return None

    def device_of(self, line: str) -> str | None:
        return device_of_line(line)

    version_path = "/version"  # ``{"version": "0.11.0"}``

    def served_version(self, doc: object) -> str | None:
        return plain_version(doc.get("version") if isinstance(doc, dict) else None)

    # --- vocabulary
    # the engine's flags module answers these four as they are
    lookup_flag = staticmethod(lookup_flag)
    apply_changes = staticmethod(apply_changes)
    flag_help_lines = staticmethod(flag_help_lines)
    read_values = staticmethod(read_values)

    def parser_check(self, argv: Sequence[str]) -> list[str] | None:
        return None

    def label_hides(self, flag: str, values: Mapping[str, str]) -> bool:
        return False

    # --- lifecycle
    warmup_phase = "capturing CUDA graphs"  # on GPUs; its CPU build (device "cpu") captures none

    def is_ready_line(self, message: str) -> bool:
        return "Application startup complete." in message

    def capacity_reader(self) -> VllmCapacityReader:
        return VllmCapacityReader()

    def capacity_extras(self, capacity: Capacity) -> dict[str, object]:
        extras: dict[str, object] = {"max_concurrency": capacity.max_concurrency,
                                     "concurrency_tokens": capacity.concurrency_tokens,
                                     "kv_cache_gib": capacity.kv_cache_gib}
        if capacity.device:
            extras["device"] = capacity.device
        return extras

    # --- metrics
    def window_figures(self, before: Metrics | None, after: Metrics | None, elapsed_s: float) -> WindowFigures:
        """accept rate = Δaccepted/Δdraft_tokens, accept length = 1 + Δaccepted/Δdrafts,
        generation throughput = Δ`vllm:generation_tokens_total` / window."""
        accepted = metric_delta(before, after, "vllm:spec_decode_num_accepted_tokens_total")
        drafts = metric_delta(before, after, "vllm:spec_decode_num_drafts_total")
        draft_tokens = metric_delta(before, after, "vllm:spec_decode_num_draft_tokens_total")
        gen = metric_delta(before, after, "vllm:generation_tokens_total")
        return WindowFigures(
            accept_len=1.0 + accepted / drafts if accepted is not None and drafts else None,
            accept_rate=accepted / draft_tokens if accepted is not None and draft_tokens else None,
            gen_throughput=gen / elapsed_s if gen is not None and elapsed_s > 0 else None,
        )

    def report_notes(self, capacity: Mapping[str, Any], no_accept: bool) -> list[str]:
        line = "max running: vLLM logs no such figure (its cap is --max-num-seqs)"
        tokens, conc = capacity.get("max_total_num_tokens"), capacity.get("max_concurrency")
        per = capacity.get("concurrency_tokens")
        if tokens and conc and per:
            line += f"; its KV cache of {tokens:,} tokens holds {conc:.2f}x requests of {per:,} tokens"
        notes = [line + "."]
        if no_accept:
            notes.append("accept len/rate: vLLM reported no speculative-decoding counters (vllm:spec_decode_*) "
                         "in the window.")
        return notes

    def forecast_knobs(self, argv: Sequence[str], label: str) -> ForecastKnobs:
        """spec tokens + 1 draft tokens, gpu-memory-utilization, max-model-len."""
        values = flags.read_values(argv)
        k = number_or_none(values.get("--num-speculative-tokens"), int)
        return ForecastKnobs(draft_tokens=(k + 1) if k else 1,
                             mem_fraction=number_or_none(values.get("--gpu-memory-utilization"), float),
                             context_length=number_or_none(values.get("--max-model-len"), int),
                             explicit_max_running=number_or_none(values.get("--max-num-seqs"), int),
                             label=label or (f"spec tokens {k}" if k else "no speculation"))

    # --- host facts
    def model_of(self, argv: Sequence[str]) -> str:
        """``vllm serve MODEL`` or ``--model``."""
        found = first_flag(argv, "--model-path", "--model")
        if found is not None:
            return found
        words = list(argv)
        if "serve" in words:
            i = words.index("serve") + 1
            if i < len(words) and not words[i].startswith("-"):
                return words[i]
        return ""


VLLM = Vllm()
