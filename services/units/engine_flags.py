"""The seam between chat words and each engine's flags: one vocabulary, planned on the unit's own engine.

Owns the engine-neutral knobs (`KNOBS`: "steps"/"spec tokens", "mem", "context", "max running",
"chunked prefill", "tp"), each naming its flag in SGLang and in vLLM; the word lookup the grammar
uses (`lookup_flag`/`resolve_flag`: every flag and alias of both engines, SGLang's first, so
commands keep naming SGLang's flags as before); and `apply_changes`, which reads the engine from
the argv (`detect_engine`), translates each asked-for word to that engine's flag and hands the
plan to that engine's schema (`sglang_flags` or `vllm_flags`; an argv pitcrew cannot place is
planned as SGLang, as pitcrew always did).

A knob word or either engine's flag for a knob means the knob: ``mem`` and ``--mem-fraction-static``
change ``--gpu-memory-utilization`` on a vLLM unit. Any other flag must exist in the unit's own
engine (``--speculative-eagle-topk`` on a vLLM unit is refused with the reason).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from services.errors import UserInputError
from services.units import sglang_flags, vllm_flags
from services.units.engines import Engine, detect_engine, engine_display
from services.units.flags import FlagDef, FlagPlan, flag_key, index_flags, resolve_in

__all__ = [
    "FLAGS",
    "KNOBS",
    "SCHEMAS",
    "EngineFlags",
    "Knob",
    "apply_changes",
    "engine_flag",
    "flag_help_lines",
    "knob_of",
    "lookup_flag",
    "resolve_flag",
    "schema_engine",
]


@dataclass(frozen=True)
class EngineFlags:
    """What pitcrew knows of one engine's flags: the schema, the lookup, the planner, the help lines."""

    engine: Engine
    flags: tuple[FlagDef, ...]
    lookup: Callable[[str], FlagDef | None]
    apply: Callable[[Sequence[str], Mapping[str, str | None]], FlagPlan]
    help_lines: Callable[[], tuple[str, ...]]
    values: Callable[[Sequence[str]], dict[str, str]]  # the schema's flags an argv sets, name -> value

    @property
    def display(self) -> str:
        return engine_display(self.engine)


SCHEMAS: dict[str, EngineFlags] = {
    "sglang": EngineFlags("sglang", sglang_flags.FLAGS, sglang_flags.lookup_flag, sglang_flags.apply_changes,
                          sglang_flags.flag_help_lines, sglang_flags.read_values),
    "vllm": EngineFlags("vllm", vllm_flags.FLAGS, vllm_flags.lookup_flag, vllm_flags.apply_changes,
                        vllm_flags.flag_help_lines, vllm_flags.read_values),
}


@dataclass(frozen=True)
class Knob:
    """One engine-neutral setting: its words in chat and its flag in each engine."""

    sglang: str
    vllm: str
    label_sglang: str  # how a config label names it on each engine ("steps 4", "spec tokens 5")
    label_vllm: str

    def flag(self, engine: str) -> str:
        return self.vllm if engine == "vllm" else self.sglang

    def label(self, engine: str) -> str:
        return self.label_vllm if engine == "vllm" else self.label_sglang


KNOBS: tuple[Knob, ...] = (
    Knob("--speculative-num-steps", "--num-speculative-tokens", "steps", "spec tokens"),
    Knob("--mem-fraction-static", "--gpu-memory-utilization", "mem", "mem"),
    Knob("--context-length", "--max-model-len", "context", "context"),
    Knob("--max-running-requests", "--max-num-seqs", "max running", "max running"),
    Knob("--chunked-prefill-size", "--max-num-batched-tokens", "chunked prefill", "chunked prefill"),
    Knob("--tp-size", "--tensor-parallel-size", "tp", "tp"),
)

FLAGS: tuple[FlagDef, ...] = (*sglang_flags.FLAGS, *vllm_flags.FLAGS)
_BY_WORD, _ = index_flags(FLAGS)  # SGLang's words first: an alias both engines use names SGLang's flag


def lookup_flag(word: str) -> FlagDef | None:
    """The flag ``word`` names in either engine (SGLang's first), or None."""
    return _BY_WORD.get(flag_key(word))


def resolve_flag(word: str) -> FlagDef:
    """The flag ``word`` names in either engine, or a `UserInputError` with a "did you mean"."""
    return resolve_in(word, _BY_WORD)


def knob_of(flag_name: str) -> Knob | None:
    """The knob whose SGLang or vLLM flag is ``flag_name``."""
    return next((k for k in KNOBS if flag_name in (k.sglang, k.vllm)), None)


def schema_engine(argv: Sequence[str]) -> str:
    """The schema an argv is planned with: ``vllm`` for a vLLM unit, else ``sglang``."""
    return "vllm" if detect_engine(argv) == "vllm" else "sglang"


def engine_flag(word: str, engine: str) -> FlagDef:
    """The flag of ``engine`` that the chat word ``word`` means (a knob is translated; any other flag must exist)."""
    fdef = resolve_flag(word)
    knob = knob_of(fdef.name)
    schema = SCHEMAS[engine]
    target = schema.lookup(knob.flag(engine) if knob is not None else fdef.name)
    if target is None:
        other = "vLLM" if fdef in vllm_flags.FLAGS else "SGLang"
        raise UserInputError(f"This unit runs {schema.display}, which has no {fdef.name} (that is {other}'s "
                             f"flag). Say 'help flags' for the flags of each engine.")
    return target


def apply_changes(argv: Sequence[str], changes: Mapping[str, str | None]) -> FlagPlan:
    """Plan ``changes`` (chat word or flag -> value, None to remove) on an argv, in the argv's own engine."""
    engine = schema_engine(argv)
    translated: dict[str, str | None] = {}
    for word, value in changes.items():
        target = engine_flag(word, engine)
        if target.name in translated:
            raise UserInputError(f"{target.short} is given twice.")
        translated[target.name] = value
    return SCHEMAS[engine].apply(argv, translated)


def flag_help_lines() -> tuple[str, ...]:
    """Every flag of both engines, one line each (SGLang's, then vLLM's), in `FLAGS` order."""
    return (*SCHEMAS["sglang"].help_lines(), *SCHEMAS["vllm"].help_lines())
