"""llama.cpp as pitcrew knows it: the `Engine` protocol implemented for ``llama-server -m MODEL …``.

Detection (the ``llama-server`` executable, also behind wrappers), the version line (``build N (COMMIT) with …``,
logged only with ``-lv 4``) and the running server's ``/props`` ``build_info`` (how the version is read at the
default verbosity), the flag schema with the draft length of the unit's own ``--spec-type``
(`services.engines.llamacpp.flags`), the engine's own parser as preflight's check (the unit's binary run with the
new flags and ``--help``: it exits 0 or says what it refuses), readiness (``/health`` answers 200 once the model is
loaded; the log's ``listening on`` line follows ``model loaded``), the capacity lines (``llama_context: n_ctx = …``,
``n_seq_max``, the KV cache size), the `/metrics` counters (``--metrics``: ``llamacpp:spec_decode_*``,
``llamacpp:tokens_predicted_total``), and the words that have no meaning here (``mem``, ``tp``: llama.cpp has no GPU
memory fraction and no tensor parallel size).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from services.engines.flags import FlagDef, number_or_none
from services.engines.llamacpp import flags
from services.engines.llamacpp.flags import apply_changes, flag_help_lines, lookup_flag, read_values
from services.engines.llamacpp.log import (
    LlamaCapacityReader,
    build_info_version,
    claims_line,
    is_ready_line,
    version_of,
)
from services.engines.metrics import metric_delta
from services.engines.protocol import Capacity, ForecastKnobs, HelpProbe, Metrics, WindowFigures

__all__ = ["LLAMACPP", "LlamaCpp"]

_EXE = "llama-server"


class LlamaCpp:
    name = "llamacpp"
    display = "llama.cpp"

    flags: tuple[FlagDef, ...] = flags.FLAGS
    knob_flags: Mapping[str, str] = {
        "steps": "--spec-draft-n-max", "draft tokens": "--spec-draft-n-max", "context": "--ctx-size",
        "max running": "--parallel", "chunked prefill": "--batch-size"}
    knob_labels: Mapping[str, str] = {**{k: k for k in knob_flags}, "steps": "draft tokens"}
    knob_absent: Mapping[str, str] = {
        "mem": "llama.cpp has no GPU memory fraction: it allocates what the model, the context (--ctx-size) and "
               "the slots (--parallel) need, and -ngl sets how many layers go to the GPU. Change context or max "
               "running instead.",
        "tp": "llama.cpp has no tensor parallel size: it splits a model across GPUs with --split-mode and "
              "--tensor-split, which pitcrew does not change."}
    deprecated_flags: Mapping[str, str] = {
        "--draft-max": "the argument has been removed. use --spec-draft-n-max or --spec-ngram-mod-n-max",
        "--draft-min": "the argument has been removed. use --spec-draft-n-min or --spec-ngram-mod-n-min"}
    # the KV cache grows with --ctx-size; the compute buffers with the slots, the batches and the draft length
    # (a verification step decodes draft + 1 tokens per slot): the unit's MemoryMax= ends what does not fit
    memory_direction: Mapping[str, int] = {
        "--ctx-size": 1, "--parallel": 1, "--batch-size": 1, "--ubatch-size": 1, "--spec-draft-n-max": 1,
        "--spec-ngram-simple-size-m": 1, "--spec-ngram-map-k-size-m": 1, "--spec-ngram-map-k4v-size-m": 1,
        "--spec-ngram-mod-n-max": 1}
    advice_flags: Mapping[str, str] = {
        "mem": "the unit's memory limit (MemoryMax=) or a smaller model", "len": "--ctx-size",
        "seqs": "--parallel", "spec": "a shorter draft (the draft length of --spec-type)",
        "graphs": "--n-gpu-layers", "chunk": "--batch-size / --ubatch-size"}
    default_port = 8080
    mem_flag = ""  # llama.cpp has no GPU memory fraction: the host checks have none to compare
    mem_default: float | None = None
    no_model = "model path: ExecStart= gives no model (llama-server -m MODEL.gguf)"
    help_unread: str | None = None
    help_probe: HelpProbe | None = None  # its parser is run on the whole argv instead (`parser_check`)

    # --- detection and version
    def plain_launch(self, argv: Sequence[str]) -> tuple[str, int] | None:
        if argv and os.path.basename(argv[0]) == _EXE:
            return argv[0], 1
        return None

    def launched_by(self, word: str, nxt: str) -> bool:
        return os.path.basename(word) == _EXE

    def version_of(self, line: str) -> str | None:
        return version_of(line)

    version_path = "/props"  # its default verbosity logs no build line: the running server names it here

    def served_version(self, doc: object) -> str | None:
        return build_info_version(doc)

    def device_of(self, line: str) -> str | None:
        return None  # its default verbosity does not say where the model is

    def claims_line(self, message: str) -> bool:
        return claims_line(message)

    # --- vocabulary
    # the engine's flags module answers these four as they are
    lookup_flag = staticmethod(lookup_flag)
    apply_changes = staticmethod(apply_changes)
    flag_help_lines = staticmethod(flag_help_lines)
    read_values = staticmethod(read_values)

    def label_hides(self, flag: str, values: Mapping[str, str]) -> bool:
        return False

    def parser_check(self, argv: Sequence[str]) -> list[str] | None:
        """The host command that runs the unit's own ``llama-server`` parser on ``argv``: the flags followed by
        ``--help`` (llama.cpp parses every argument first, then prints its usage and exits 0; a refused argument
        exits 1 with its error line first). Bounded by coreutils' ``timeout``."""
        return ["timeout", "10", *argv, "--help"]

    # --- lifecycle
    warmup_phase = ""  # it captures no graphs at start: ready follows its capacity line

    def is_ready_line(self, message: str) -> bool:
        return is_ready_line(message)

    def capacity_reader(self) -> LlamaCapacityReader:
        return LlamaCapacityReader()

    def capacity_extras(self, capacity: Capacity) -> dict[str, object]:
        return {}

    # --- metrics
    def window_figures(self, before: Metrics | None, after: Metrics | None, elapsed_s: float) -> WindowFigures:
        """`/metrics` (needs ``--metrics``): accept rate = Δaccepted / Δdraft tokens, accept length = 1 + Δaccepted /
        Δverification steps, generation throughput = Δ`llamacpp:tokens_predicted_total` / window."""
        accepted = metric_delta(before, after, "llamacpp:spec_decode_num_accepted_tokens_total")
        steps = metric_delta(before, after, "llamacpp:spec_decode_num_drafts_total")
        drafted = metric_delta(before, after, "llamacpp:spec_decode_num_draft_tokens_total")
        gen = metric_delta(before, after, "llamacpp:tokens_predicted_total")
        return WindowFigures(
            accept_len=1.0 + accepted / steps if accepted is not None and steps else None,
            accept_rate=accepted / drafted if accepted is not None and drafted else None,
            gen_throughput=gen / elapsed_s if gen is not None and elapsed_s > 0 else None)

    def report_notes(self, capacity: Mapping[str, Any], no_accept: bool) -> list[str]:
        if no_accept:
            return ["accept len/rate: llama.cpp reports them on /metrics only with --metrics, and only when the "
                    "unit drafts (--spec-type)."]
        return []

    def forecast_knobs(self, argv: Sequence[str], label: str) -> ForecastKnobs:
        """The draft length of the unit's --spec-type (+ 1), no memory fraction, the context, the slots."""
        values = flags.read_values(argv)
        k = number_or_none(values.get("--spec-draft-n-max"), int) if flags.spec_types(argv) else None
        return ForecastKnobs(draft_tokens=(k + 1) if k else 1, mem_fraction=None,
                             context_length=number_or_none(values.get("--ctx-size"), int),
                             explicit_max_running=number_or_none(values.get("--parallel"), int),
                             label=label or (f"draft tokens {k}" if k else "no speculation"))

    # --- host facts
    def model_of(self, argv: Sequence[str]) -> str:
        return flags.model_path(argv)


LLAMACPP = LlamaCpp()
