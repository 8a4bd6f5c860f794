"""Which inference engine a unit runs: read from its ``ExecStart=`` words.

Owns `detect_engine` (``python -m sglang.launch_server …`` is SGLang; ``vllm serve MODEL …`` and
``python -m vllm.entrypoints.openai.api_server …`` are vLLM), the engines' display names, and the
version line each engine writes at start (`engine_version`: vLLM 0.11's ``vLLM API server version
0.11.0``, FORMATS.md b.0). A command line pitcrew cannot place is ``unknown``; flag editing then
treats it as SGLang, as pitcrew always did.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from services.errors import UnitError
from services.units.editor import read_exec_start
from services.units.engine_cli import engine_of

__all__ = ["ENGINES", "Engine", "detect_engine", "engine_display", "engine_version", "unit_engine"]

Engine = Literal["sglang", "vllm", "unknown"]
ENGINES: tuple[Engine, ...] = ("sglang", "vllm")

_DISPLAY = {"sglang": "SGLang", "vllm": "vLLM", "unknown": "unknown"}
_SGLANG_MODULES = ("sglang.launch_server", "sglang.srt.server", "sglang")
_VLLM_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
# vLLM 0.11 `api_server.py:1839`, 0.33 with VLLM_DISABLE_LOG_LOGO, the 0.33 logo line (FORMATS.md b.0/b.3)
_VERSION_RES: tuple[tuple[Engine, re.Pattern[str]], ...] = (
    ("vllm", re.compile(r"vLLM API server version (\d+\.\d+\.\d+[0-9A-Za-z.+-]*)")),
    ("vllm", re.compile(r"vLLM server version (\d+\.\d+\.\d+[0-9A-Za-z.+-]*), serving model")),
    ("vllm", re.compile(r"Initializing a V1 LLM engine \(v(\d+\.\d+\.\d+[0-9A-Za-z.+-]*)\)")),
    ("vllm", re.compile(r"█\s+version (\d+\.\d+\.\d+[0-9A-Za-z.+-]*)\s*$")),
)


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def detect_engine(argv: Sequence[str]) -> Engine:
    """The engine an ExecStart= argv launches, or ``unknown``.

    The plain forms are `engine_cli.engine_of`'s; beyond those it looks at every word, so wrappers
    (``/usr/bin/env``, ``numactl …``, ``uv run``) do not hide the engine:
    ``-m <module>`` names the module, and an executable ``vllm`` followed by ``serve`` is vLLM's CLI.
    """
    direct = engine_of(argv)  # the plain forms, as preflight reads them
    if direct is not None:
        return "vllm" if direct[0] == "vllm" else "sglang"
    words = list(argv)
    for i, word in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if word == "-m" and nxt:
            module = nxt
            if module in _VLLM_MODULES or module.startswith("vllm.entrypoints."):
                return "vllm"
            if module in _SGLANG_MODULES or module.startswith("sglang.launch_server"):
                return "sglang"
        base = _basename(word)
        if base == "vllm" and nxt == "serve":
            return "vllm"
        if base == "sglang" and nxt in ("serve", "launch_server"):
            return "sglang"
    return "unknown"


def engine_display(engine: str) -> str:
    """``SGLang``, ``vLLM`` or the word as given."""
    return _DISPLAY.get(engine, engine or "unknown")


def engine_version(line: str) -> tuple[Engine, str] | None:
    """(engine, version) when ``line`` is an engine's own version line, else None."""
    for engine, rx in _VERSION_RES:
        m = rx.search(line)
        if m:
            return engine, m.group(1)
    return None


def unit_engine(text: str) -> Engine:
    """The engine a unit file launches; ``unknown`` when its ExecStart= cannot be read."""
    try:
        return detect_engine(read_exec_start(text).argv)
    except UnitError:
        return "unknown"
