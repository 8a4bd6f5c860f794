"""The one place engines are registered, and the questions asked of all of them: which engine is this?

Owns `ENGINES` (every engine pitcrew drives, in registration order: help and flag lookups list
SGLang's first), `engine_named` (an engine by its stored name), `detect_engine` (the engine an
``ExecStart=`` argv launches, by each engine's own detection, or ``unknown``), `engine_for` (the engine
an argv is planned with: an argv pitcrew cannot place is treated as the default engine, SGLang, as
pitcrew always did), `plain_launch` (preflight's plain forms), `engine_display`, `engine_version`
(an engine's own version line) and `engine_of_line` (whose journal line this is).
Adding an engine is its package plus one line in `ENGINES`.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.engines.llamacpp import LLAMACPP
from services.engines.protocol import Engine
from services.engines.sglang import SGLANG
from services.engines.vllm import VLLM

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "detect_engine",
    "engine_display",
    "engine_for",
    "engine_named",
    "engine_of_line",
    "engine_version",
    "find_engine",
    "plain_launch",
]

ENGINES: tuple[Engine, ...] = (
    SGLANG,
    VLLM,
    LLAMACPP,
)
DEFAULT_ENGINE: Engine = SGLANG  # an argv pitcrew cannot place is planned as this engine
_BY_NAME = {e.name: e for e in ENGINES}


def find_engine(name: str | None) -> Engine | None:
    """The engine registered as ``name``, or None."""
    return _BY_NAME.get(name or "")


def engine_named(name: str) -> Engine:
    """The engine stored as ``name``; the default engine for a name pitcrew does not know (``unknown``, "")."""
    return _BY_NAME.get(name, DEFAULT_ENGINE)


def plain_launch(argv: Sequence[str]) -> tuple[Engine, str, int] | None:
    """(engine, interpreter or executable, index of the first flag) for a plain launch argv, or None."""
    for engine in ENGINES:
        found = engine.plain_launch(argv)
        if found is not None:
            return engine, found[0], found[1]
    return None


def _detect(argv: Sequence[str]) -> Engine | None:
    """The plain forms first (as preflight reads them); beyond those each engine looks at every word, so wrappers
    (``/usr/bin/env``, ``numactl …``, ``uv run``) do not hide the engine."""
    direct = plain_launch(argv)
    if direct is not None:
        return direct[0]
    words = list(argv)
    for i, word in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        for engine in ENGINES:
            if engine.launched_by(word, nxt):
                return engine
    return None


def detect_engine(argv: Sequence[str]) -> str:
    """The name of the engine an ExecStart= argv launches, or ``unknown``."""
    found = _detect(argv)
    return found.name if found is not None else "unknown"


def engine_for(argv: Sequence[str]) -> Engine:
    """The engine an argv is planned with: its own, or the default engine when pitcrew cannot place it."""
    return _detect(argv) or DEFAULT_ENGINE


def engine_display(name: str) -> str:
    """``SGLang``, ``vLLM`` or the word as given."""
    found = _BY_NAME.get(name)
    return found.display if found is not None else (name or "unknown")


def engine_of_line(message: str) -> Engine | None:
    """The engine that claims a journal line as its own (`Engine.claims_line`), or None."""
    return next((e for e in ENGINES if e.claims_line(message)), None)


def engine_version(line: str) -> tuple[str, str] | None:
    """(engine, version) when ``line`` is an engine's own version line, else None."""
    for engine in ENGINES:
        version = engine.version_of(line)
        if version is not None:
            return engine.name, version
    return None
