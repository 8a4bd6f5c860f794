"""Help text, built from the command registry and the flag schema so it never drifts from them.

Owns `help_text(topic)`: the list of commands (usage and the handler docstring's first line), one
command in full (usage, description, examples, other words that name it), the flag list, or one
flag (its engine's name, aliases, allowed values and what it does, and the knob it shares with the other engine).
"""

from __future__ import annotations

from typing import Any

from handlers.registry import COMMANDS
from handlers.spec import CommandSpec
from services.engines import ENGINES, FLAGS, KNOBS, flag_help_lines, knob_of, lookup_flag
from services.errors import UserInputError

__all__ = ["help_text"]


def _find(topic: str) -> CommandSpec[Any] | None:
    low = topic.lower()
    for info in COMMANDS:
        if low == info.name or low in info.words:
            return info
    return None


def _overview() -> str:
    lines = ["pitcrew commands (say 'help <command>' for more, 'help flags' for the flags):"]
    for info in COMMANDS:
        lines.append(f"  {info.usage} - {info.summary}")
    for engine in ENGINES:
        lines.append(f"{engine.display} flags you can change: " + ", ".join(f.short for f in engine.flags) + ".")
    return "\n".join(lines)


def _command(info: CommandSpec[Any]) -> str:
    lines = [info.usage, f"  {info.doc}"]
    if info.examples:
        lines.append("  Examples: " + "; ".join(info.examples))
    others = [w for w in info.words if w != info.name]
    if others:
        lines.append("  Also: " + ", ".join(others))
    return "\n".join(lines)


def _knob_line() -> str:
    parts = [f"{k.word} = " + " / ".join(k.flag_in(e) or f"(none on {e.display})" for e in ENGINES) for k in KNOBS]
    return ("Words for every engine (each unit gets its own engine's flag; any engine's flag name works too): "
            + "; ".join(parts) + ". 'spec tokens' is 'steps'; on vLLM it is num_speculative_tokens in "
            "--speculative-config (the rest of the JSON is kept); on llama.cpp steps, spec tokens and draft tokens "
            "are the draft length of the unit's --spec-type.")


def _flags() -> str:
    lines = ["Flags pitcrew can change (use the short name, e.g. 'try steps=5', or the engine's own --name):",
             _knob_line()]
    for engine in ENGINES:
        lines.append(f"{engine.display}:")
        lines.extend(f"  {line}" for line in engine.flag_help_lines())
    lines.append("With topk 1, SGLang sets draft tokens to steps + 1; pitcrew changes a pinned draft with it.")
    return "\n".join(lines)


def help_text(topic: str | None = None) -> str:
    """The help for ``topic``: None (all commands), a command word, ``flags``, or a flag name/alias."""
    if topic is None or not topic.strip():
        return _overview()
    if topic.lower() in ("flags", "flag"):
        return _flags()
    info = _find(topic)
    if info is not None:
        return _command(info)
    fdef = lookup_flag(topic)
    if fdef is not None:
        line = next(line for line, f in zip(flag_help_lines(), FLAGS, strict=True) if f is fdef)
        knob = knob_of(fdef.name)
        if knob is not None:
            line += " Same knob: " + ", ".join(f"{knob.flag_in(e)} on {e.display}" for e in ENGINES
                                               if knob.flag_in(e)) + "."
        return line
    raise UserInputError(f"There is no help on '{topic[:40]}'. Say 'help' for the list.")
