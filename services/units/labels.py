"""Short names for a unit's configuration, for tables, sweeps and history: ``steps 4``, ``spec tokens 5 · mem 0.90``.

Owns `config_label` (a configuration described by its speculative-tokens knob and every flag that
differs from the host's baseline, in the unit's own engine and words) and `changes_label` (what a
person asked for, before the engine is known). Knobs read as their engine-neutral words ("steps" on
SGLang, "spec tokens" on vLLM, "mem", "context", "max running", "chunked prefill", "tp"); other flags
as their short name; token counts that are whole multiples of 1024 as ``32k``. SGLang's draft
tokens, when they are steps + 1 (what SGLang derives with topk 1), are not named: steps says it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.units.engine_flags import KNOBS, SCHEMAS, engine_flag, knob_of, resolve_flag, schema_engine
from services.units.flags import FlagDef
from services.units.vllm_flags import FLAGS as VLLM_FLAGS

__all__ = ["NO_CHANGE", "changes_label", "config_label", "flag_label", "format_label_value"]

NO_CHANGE = "current config"
SEP = " · "
_TOKEN_COUNTS = frozenset({"--context-length", "--max-model-len", "--chunked-prefill-size",
                           "--max-num-batched-tokens", "--max-total-tokens", "--max-prefill-tokens"})
_STEPS = KNOBS[0]


def format_label_value(flag: str, value: str | None) -> str:
    """``32768`` -> ``32k`` for token counts; a switch reads ``on``/``off``; an absent flag ``unset``."""
    if value is None:
        return "unset"
    if value in ("true", "false") and _is_switch(flag):
        return "on" if value == "true" else "off"
    if flag in _TOKEN_COUNTS and value.isdigit() and int(value) >= 1024 and int(value) % 1024 == 0:
        return f"{int(value) // 1024}k"
    return value


def _is_switch(flag: str) -> bool:
    return any(f.name == flag and f.kind == "bool" for s in SCHEMAS.values() for f in s.flags)


def _name(flag: str, engine: str) -> str:
    knob = knob_of(flag)
    if knob is not None:
        return knob.label(engine)
    fdef = SCHEMAS[engine].lookup(flag)
    return fdef.short if fdef is not None else flag.lstrip("-")


def flag_label(word: str, engine: str) -> str:
    """How labels name the flag ``word`` means on ``engine`` ("steps" on SGLang, "spec tokens" on vLLM)."""
    schema = "vllm" if engine == "vllm" else "sglang"
    return _name(engine_flag(word, schema).name, schema)


def config_label(argv: Sequence[str], baseline: Sequence[str] | None = None) -> str:
    """The configuration ``argv`` runs, named against ``baseline`` (the host's first recorded unit).

    The speculative-tokens knob comes first when the unit sets it; then each flag whose value
    differs from the baseline, in the unit's order. Without a baseline only the first part.
    """
    engine = schema_engine(argv)
    schema = SCHEMAS[engine]
    values = schema.values(argv)
    steps_flag = _STEPS.flag(engine)
    parts: list[str] = []
    if steps_flag in values:
        parts.append(f"{_STEPS.label(engine)} {values[steps_flag]}")
    if baseline is not None and schema_engine(baseline) == engine:
        base = schema.values(baseline)
        changed = [f for f in values if f != steps_flag and base.get(f) != values[f]]
        changed += [f for f in base if f != steps_flag and f not in values]
        for flag in changed:
            if engine == "sglang" and flag == "--speculative-num-draft-tokens" and _derived_draft(values):
                continue
            parts.append(f"{_name(flag, engine)} {format_label_value(flag, values.get(flag))}")
    return SEP.join(parts) or NO_CHANGE


def _derived_draft(values: Mapping[str, str]) -> bool:
    steps, draft, topk = (values.get("--speculative-num-steps"), values.get("--speculative-num-draft-tokens"),
                          values.get("--speculative-eagle-topk", "1"))
    return bool(steps and draft and steps.isdigit() and draft.isdigit() and topk == "1"
                and int(draft) == int(steps) + 1)


def changes_label(changes: Mapping[str, str | None]) -> str:
    """What a person asked for, in the words of the engine whose flag they named: ``steps 4 · mem 0.85``."""
    parts = []
    for word, value in changes.items():
        fdef: FlagDef = resolve_flag(word)
        engine = "vllm" if fdef in VLLM_FLAGS else "sglang"
        parts.append(f"{_name(fdef.name, engine)} {format_label_value(fdef.name, value)}")
    return SEP.join(parts)
