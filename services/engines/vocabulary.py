"""The seam between chat words and each engine's flags: one vocabulary, planned on the unit's own engine.

Owns the engine-neutral knobs (`KNOBS`: "steps"/"spec tokens", "mem", "context", "max running",
"chunked prefill", "tp", "draft tokens" (the draft length: SGLang's --speculative-num-draft-tokens, vLLM's
spec tokens, the draft length of a llama.cpp unit's --spec-type); each engine names its flag for each in
`Engine.knob_flags`, and says in `Engine.knob_absent` why a word means nothing there); the word lookup the
grammar uses (`lookup_flag`/`resolve_flag`: every flag and alias of every registered engine, in
registration order, so commands keep naming SGLang's flags as before); and `apply_changes`, which
finds the argv's engine (`engine_for`), translates each asked-for word to that engine's flag and hands
the plan to that engine (an argv pitcrew cannot place is planned as the default engine, SGLang).

A knob word or any engine's flag for a knob means the knob: ``mem`` and ``--mem-fraction-static``
change ``--gpu-memory-utilization`` on a vLLM unit. Any other flag must exist in the unit's own
engine (``--speculative-eagle-topk`` on a vLLM unit is refused with the reason).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.engines.flags import FlagDef, FlagPlan, flag_key, index_flags, resolve_in
from services.engines.protocol import Engine
from services.engines.registry import ENGINES, engine_for
from services.errors import UserInputError

__all__ = [
    "FLAGS",
    "KNOBS",
    "Knob",
    "apply_changes",
    "engine_flag",
    "flag_help_lines",
    "flag_owner",
    "knob_of",
    "lookup_flag",
    "resolve_flag",
]


@dataclass(frozen=True)
class Knob:
    """One engine-neutral setting: its word in chat; each engine names its flag and its label word."""

    word: str

    def flag(self, engine: Engine) -> str:
        """This engine's flag for the knob, or a `UserInputError` saying why the word means nothing there."""
        found = engine.knob_flags.get(self.word)
        if found is None:
            why = engine.knob_absent.get(self.word, "")
            raise UserInputError(f"'{self.word}' has no meaning on {engine.display}, which this unit runs"
                                 + (f": {why}" if why else "."))
        return found

    def flag_in(self, engine: Engine) -> str | None:
        """This engine's flag for the knob, None when the word means nothing there (`Engine.knob_absent`)."""
        return engine.knob_flags.get(self.word)

    def label(self, engine: Engine) -> str:
        """How a config label names it on ``engine`` ("steps 4" on SGLang, "spec tokens 5" on vLLM)."""
        return engine.knob_labels[self.word]


KNOBS: tuple[Knob, ...] = tuple(Knob(w) for w in ("steps", "mem", "context", "max running", "chunked prefill", "tp",
                                                  "draft tokens"))

FLAGS: tuple[FlagDef, ...] = tuple(f for e in ENGINES for f in e.flags)
_BY_WORD, _ = index_flags(FLAGS)  # SGLang's words first: an alias both engines use names SGLang's flag


def lookup_flag(word: str) -> FlagDef | None:
    """The flag ``word`` names in any engine (SGLang's first), or None."""
    return _BY_WORD.get(flag_key(word))


def resolve_flag(word: str) -> FlagDef:
    """The flag ``word`` names in any engine, or a `UserInputError` with a "did you mean"."""
    return resolve_in(word, _BY_WORD)


def knob_of(flag_name: str) -> Knob | None:
    """The knob whose flag in some engine is ``flag_name``."""
    return next((k for k in KNOBS if any(e.knob_flags.get(k.word) == flag_name for e in ENGINES)), None)


def flag_owner(fdef: FlagDef) -> Engine:
    """The engine whose schema holds ``fdef`` (the first registered, for a flag two engines share)."""
    return next(e for e in ENGINES if fdef in e.flags)


def engine_flag(word: str, engine: Engine) -> FlagDef:
    """The flag of ``engine`` that the chat word ``word`` means (a knob is translated; any other flag must exist)."""
    fdef = resolve_flag(word)
    knob = knob_of(fdef.name)
    target = engine.lookup_flag(knob.flag(engine) if knob is not None else fdef.name)
    if target is None:
        raise UserInputError(f"This unit runs {engine.display}, which has no {fdef.name} (that is "
                             f"{flag_owner(fdef).display}'s flag). Say 'help flags' for the flags of each engine.")
    return target


def apply_changes(argv: Sequence[str], changes: Mapping[str, str | None]) -> FlagPlan:
    """Plan ``changes`` (chat word or flag -> value, None to remove) on an argv, in the argv's own engine."""
    engine = engine_for(argv)
    translated: dict[str, str | None] = {}
    for word, value in changes.items():
        target = engine_flag(word, engine)
        if target.name in translated:
            raise UserInputError(f"{target.short} is given twice.")
        translated[target.name] = value
    return engine.apply_changes(argv, translated)


def flag_help_lines() -> tuple[str, ...]:
    """Every flag of every engine, one line each (SGLang's, then vLLM's), in `FLAGS` order."""
    return tuple(line for e in ENGINES for line in e.flag_help_lines())
