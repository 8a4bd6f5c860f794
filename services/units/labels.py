"""Short names for a unit's configuration, for tables, sweeps and history: ``steps 4``, ``spec tokens 5 · mem 0.90``.

Owns `config_label` (a configuration described by its speculative-tokens knob and every flag that
differs from the host's baseline, in the unit's own engine and words) and `changes_label` (what a
person asked for, before the engine is known). Knobs read as their engine-neutral words ("steps" on
SGLang, "spec tokens" on vLLM, "mem", "context", "max running", "chunked prefill", "tp"); other flags
as their short name; token counts that are whole multiples of 1024 as ``32k``. A flag whose value follows
from the others in its engine (`Engine.label_hides`: SGLang's draft tokens = steps + 1) is not named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.engines import (
    ENGINES,
    KNOBS,
    Engine,
    FlagDef,
    engine_flag,
    engine_for,
    engine_named,
    flag_owner,
    knob_of,
    resolve_flag,
)

__all__ = ["NO_CHANGE", "changes_label", "config_label", "flag_label", "format_label_value"]

NO_CHANGE = "current config"
SEP = " · "
_TOKEN_COUNTS = frozenset({"--context-length", "--max-model-len", "--chunked-prefill-size",
                           "--max-num-batched-tokens", "--max-total-tokens", "--max-prefill-tokens",
                           "--ctx-size", "--batch-size", "--ubatch-size"})
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
    return any(f.name == flag and f.kind == "bool" for e in ENGINES for f in e.flags)


def _name(flag: str, engine: Engine) -> str:
    knob = knob_of(flag)
    if knob is not None:
        return knob.label(engine)
    fdef = engine.lookup_flag(flag)
    return fdef.short if fdef is not None else flag.lstrip("-")


def flag_label(word: str, engine: str) -> str:
    """How labels name the flag ``word`` means on the engine named ``engine`` ("steps" on SGLang, "spec tokens"
    on vLLM; an engine pitcrew does not know is named as the default engine)."""
    schema = engine_named(engine)
    return _name(engine_flag(word, schema).name, schema)


def config_label(argv: Sequence[str], baseline: Sequence[str] | None = None) -> str:
    """The configuration ``argv`` runs, named against ``baseline`` (the host's first recorded unit).

    The speculative-tokens knob comes first when the unit sets it; then each flag whose value
    differs from the baseline, in the unit's order. Without a baseline only the first part.
    """
    engine = engine_for(argv)
    values = engine.read_values(argv)
    steps_flag = _STEPS.flag(engine)
    parts: list[str] = []
    if steps_flag in values:
        parts.append(f"{_STEPS.label(engine)} {values[steps_flag]}")
    if baseline is not None and engine_for(baseline) is engine:
        base = engine.read_values(baseline)
        changed = [f for f in values if f != steps_flag and base.get(f) != values[f]]
        changed += [f for f in base if f != steps_flag and f not in values]
        for flag in changed:
            if engine.label_hides(flag, values):
                continue
            parts.append(f"{_name(flag, engine)} {format_label_value(flag, values.get(flag))}")
    return SEP.join(parts) or NO_CHANGE


def changes_label(changes: Mapping[str, str | None]) -> str:
    """What a person asked for, in the words of the engine whose flag they named: ``steps 4 · mem 0.85``."""
    parts = []
    for word, value in changes.items():
        fdef: FlagDef = resolve_flag(word)
        parts.append(f"{_name(fdef.name, flag_owner(fdef))} {format_label_value(fdef.name, value)}")
    return SEP.join(parts)
