"""Engine-neutral flag machinery: a flag's definition, checking a typed value, planning an argv edit.

Owns the argv's flags as written (`parse_flags`, `get_flag`, `first_flag`, `FlagChange`), `FlagDef` (one
engine flag: names, chat aliases, type, bounds), `check_plain` and `parse_value` (numbers within bounds,
choices, and only plain characters — never anything a shell or systemd would interpret),
`FlagPlan`/`format_change` (what a change does, for the preview), and the two argv steps every engine
schema shares: finding the schema's flags in an argv (`current_flags`) and writing a plan back in place
(`rewrite_flags`: a flag changes where it stands, a new one goes at the end), and `plain_version` (a version
string an engine's HTTP answer gave, kept only when it looks like one). Each engine's schema
(`services.engines.sglang.flags`, `services.engines.vllm.flags`) builds on these.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from services.errors import UnitError, UserInputError

__all__ = [
    "MAX_VALUE_LEN",
    "CurrentFlags",
    "FlagChange",
    "FlagDef",
    "FlagPlan",
    "check_plain",
    "current_flags",
    "first_flag",
    "flag_key",
    "flag_values",
    "format_change",
    "get_flag",
    "help_line",
    "index_flags",
    "number_or_none",
    "parse_flags",
    "parse_value",
    "plain_version",
    "resolve_in",
    "rewrite_flags",
    "suggest",
]


@dataclass(frozen=True)
class FlagChange:
    """One flag's change: ``old``/``new`` are None when absent, ``"true"`` for a bare switch."""

    flag: str
    old: str | None
    new: str | None
    derived: bool = False
    reason: str = ""
    key: str = ""  # a key inside the flag's JSON value (vLLM's --speculative-config), "" for the flag itself


FlagItem = tuple[str, str | None, int, int]


def parse_flags(argv: Sequence[str], switches: frozenset[str] = frozenset(), *, short: bool = False) -> list[FlagItem]:
    """Split argv (after the executable) into (flag, value, index, count) items.

    ``--name=value`` is one word; ``--name value`` takes the next word unless it starts with
    ``--`` or the flag is a known switch; a flag without a value has ``value`` None. With ``short``
    (llama.cpp's parser) one-dash options count too (``-np 4``), and a value may be a negative number
    (``-t -1``) but no other word starting with ``-``.
    """
    items: list[FlagItem] = []
    i = 1
    n = len(argv)
    while i < n:
        w = argv[i]
        if (w.startswith("-") and len(w) > 1 and not _is_number(w)) if short else (w.startswith("--") and len(w) > 2):
            if w.startswith("--") and "=" in w:
                name, _, val = w.partition("=")
                items.append((name, val, i, 1))
                i += 1
                continue
            nxt = argv[i + 1] if i + 1 < n else ""
            takes = not nxt.startswith("-") or _is_number(nxt) if short else not nxt.startswith("--")
            if w not in switches and i + 1 < n and takes:
                items.append((w, nxt, i, 2))
                i += 2
                continue
            items.append((w, None, i, 1))
        i += 1
    return items


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def get_flag(argv: Sequence[str], name: str, switches: frozenset[str] = frozenset()) -> str | None:
    """The value of ``name`` in argv (last one wins, as argparse), ``"true"`` if bare, None if absent."""
    result: str | None = None
    for flag, value, _, _ in parse_flags(argv, switches):
        if flag == name:
            result = "true" if value is None else value
    return result


def first_flag(argv: Sequence[str], *names: str) -> str | None:
    """The value of the first of ``names`` the argv gives (`get_flag`), None when it gives none of them."""
    for name in names:
        value = get_flag(argv, name)
        if value is not None:
            return value
    return None




Kind = Literal["int", "float", "choice", "bool", "str"]

_VALUE_RE = re.compile(r"[A-Za-z0-9._:/=+-]+")
_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_TRUE = {"true", "on", "yes", "1", "enable", "enabled"}
_FALSE = {"false", "off", "no", "0", "disable", "disabled"}
MAX_VALUE_LEN = 256


@dataclass(frozen=True)
class FlagDef:
    """One engine flag: canonical name, other spellings the engine accepts, chat aliases, type, bounds."""

    name: str
    kind: Kind
    help: str
    aliases: tuple[str, ...] = ()
    spellings: tuple[str, ...] = ()  # other argparse spellings of the same flag
    minimum: float | None = None
    maximum: float | None = None
    exclusive: bool = False  # bounds are exclusive (0 < x < 1)
    exclusive_low: bool = False  # only the lower bound is exclusive (0 < x <= 1)
    choices: tuple[str, ...] = ()
    specials: tuple[str, ...] = ()  # extra literal values, e.g. "-1" to disable

    @property
    def short(self) -> str:
        """The name people type: the first alias, else the flag without dashes."""
        return self.aliases[0] if self.aliases else self.name[2:]

    @property
    def all_spellings(self) -> tuple[str, ...]:
        return (self.name, *self.spellings)

    def describe(self) -> str:
        """The value a flag takes, in words: ``a whole number from 1 to 16``, ``one of EAGLE, ...``."""
        if self.kind == "bool":
            return "on/off switch"
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "str":
            return "text (letters, digits, . _ : / = + -)"
        lo = _fmt_num(self.minimum)
        hi = _fmt_num(self.maximum)
        word = "a whole number" if self.kind == "int" else "a number"
        if self.exclusive:
            rng = f"between {lo} and {hi} (exclusive)"
        elif self.exclusive_low:
            rng = f"above {lo}, at most {hi}"
        else:
            rng = f"from {lo} to {hi}"
        extra = f" (or {', '.join(self.specials)})" if self.specials else ""
        return f"{word} {rng}{extra}"


def _fmt_num(x: float | None) -> str:
    if x is None:
        return "?"
    return str(int(x)) if float(x).is_integer() else repr(x)


def suggest(word: str, candidates: Sequence[str]) -> str | None:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def check_plain(text: str, what: str) -> None:
    """Refuse anything but plain value characters (no shell metacharacters, spaces, quotes, NUL)."""
    if not text:
        raise UserInputError(f"The value for {what} is empty.")
    if len(text) > MAX_VALUE_LEN:
        raise UserInputError(f"The value for {what} is too long (at most {MAX_VALUE_LEN} characters).")
    if not _VALUE_RE.fullmatch(text):
        raise UserInputError(f"The value for {what} may only contain letters, digits and . _ : / = + - "
                             "(no spaces, quotes or shell characters).")


def parse_value(flag: FlagDef, text: str) -> str:
    """Check ``text`` as a value of ``flag`` and return it normalized (``"0.85"``, ``"10"``, ``"EAGLE"``)."""
    check_plain(text, flag.short)
    if flag.kind in _TEXT_PARSERS:
        return _TEXT_PARSERS[flag.kind](flag, text)
    if text in flag.specials:
        return text
    number, normalized = _number(flag, text)
    lo, hi = flag.minimum, flag.maximum
    if flag.exclusive:
        bad = (lo is not None and number <= lo) or (hi is not None and number >= hi)
    elif flag.exclusive_low:
        bad = (lo is not None and number <= lo) or (hi is not None and number > hi)
    else:
        bad = (lo is not None and number < lo) or (hi is not None and number > hi)
    if bad:
        raise UserInputError(f"{flag.short} must be {flag.describe()}; {normalized} is out of range.")
    return normalized


def _bool_value(flag: FlagDef, text: str) -> str:
    low = text.lower()
    if low in _TRUE:
        return "true"
    if low in _FALSE:
        return "false"
    raise UserInputError(f"{flag.short} is an on/off switch: say on or off.")


def _choice_value(flag: FlagDef, text: str) -> str:
    for choice in flag.choices:
        if choice.lower() == text.lower():
            return choice
    suggestion = suggest(text.upper() if flag.choices[0].isupper() else text.lower(), flag.choices)
    hint = f" Did you mean {suggestion}?" if suggestion else ""
    raise UserInputError(f"{flag.short} must be one of {', '.join(flag.choices)}.{hint}")


def _str_value(flag: FlagDef, text: str) -> str:
    if text.startswith("-"):
        raise UserInputError(f"The value for {flag.short} cannot start with '-'.")
    if ".." in text.split("/"):
        raise UserInputError(f"The value for {flag.short} cannot contain '..' path parts.")
    return text


_TEXT_PARSERS = {"bool": _bool_value, "choice": _choice_value, "str": _str_value}


def _number(flag: FlagDef, text: str) -> tuple[float, str]:
    """The number `text` says for an int or float flag, and its normalized spelling."""
    if flag.kind == "int":
        if not _INT_RE.fullmatch(text):
            raise UserInputError(f"{flag.short} must be {flag.describe()}.")
        return int(text), str(int(text))
    if not _FLOAT_RE.fullmatch(text):
        raise UserInputError(f"{flag.short} must be {flag.describe()}.")
    number = float(text)
    if not math.isfinite(number):
        raise UserInputError(f"{flag.short} must be a finite number.")
    return number, repr(number)


@dataclass(frozen=True)
class FlagPlan:
    """The argv to deploy, what changes (derived changes marked, with why) and notes for the preview."""

    new_argv: tuple[str, ...]
    diff: tuple[FlagChange, ...]
    notes: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.diff)


def format_change(change: FlagChange) -> str:
    """One line for a preview: ``--speculative-num-steps 3 -> 10`` (+ why, when derived); a key inside a flag's
    JSON value reads ``--speculative-config num_speculative_tokens 3 -> 5``."""
    old = "(unset)" if change.old is None else change.old
    new = "(unset)" if change.new is None else change.new
    where = f"{change.flag} {change.key}" if change.key else change.flag
    line = f"{where} {old} -> {new}"
    if change.derived:
        line += f" (derived: {change.reason})" if change.reason else " (derived)"
    return line


# per flag found in argv: (value, index, word count, spelling, written with '=')
CurrentFlags = dict[FlagDef, tuple[str, int, int, str, bool]]


def current_flags(argv: Sequence[str], by_name: Mapping[str, FlagDef], switches: frozenset[str], *,
                  short: bool = False) -> CurrentFlags:
    """Schema flags in argv: flag -> (value, index, count, spelling, uses '=') (``short``: see `parse_flags`)."""
    out: dict[FlagDef, tuple[str, int, int, str, bool]] = {}
    for name, value, idx, count in parse_flags(argv, switches, short=short):
        fdef = by_name.get(name)
        if fdef is None:
            continue
        if fdef in out:
            raise UnitError(f"The unit sets {fdef.name} twice; fix the unit by hand before changing it.")
        uses_eq = count == 1 and value is not None
        out[fdef] = ("true" if value is None else value, idx, count, name, uses_eq)
    return out


def flag_values(argv: Sequence[str], by_name: Mapping[str, FlagDef], switches: frozenset[str], *,
                short: bool = False) -> dict[str, str]:
    """Schema flags in argv by canonical name -> value (``"true"`` for a bare switch; last one wins, as argparse)."""
    out: dict[str, str] = {}
    for name, value, _, _ in parse_flags(argv, switches, short=short):
        fdef = by_name.get(name)
        if fdef is not None:
            out[fdef.name] = "true" if value is None else value
    return out


def rewrite_flags(argv: Sequence[str], current: CurrentFlags, final: Mapping[FlagDef, str | None],
             derived: Mapping[FlagDef, tuple[str | None, str]], notes: list[str]) -> FlagPlan:
    """The new argv (each flag changed where it stands, new flags at the end) and the diff."""
    slots: list[list[str]] = [[w] for w in argv]
    tail: list[str] = []
    diff: list[FlagChange] = []
    for fdef, value in final.items():
        old = current.get(fdef)
        old_value = old[0] if old else None
        if old_value == value:
            continue
        reason = derived[fdef][1] if fdef in derived else ""
        diff.append(FlagChange(fdef.name, old_value, value, derived=fdef in derived, reason=reason))
        if old is None:
            if value is not None:
                tail.extend([fdef.name] if fdef.kind == "bool" else [fdef.name, value])
            continue
        _, idx, count, spelling, uses_eq = old
        if value is None:
            for k in range(idx, idx + count):
                slots[k] = []
        elif fdef.kind == "bool":
            pass
        elif uses_eq or count == 1:
            slots[idx] = [f"{spelling}={value}"]
        else:
            slots[idx + 1] = [value]
    new_argv = tuple(w for slot in slots for w in slot) + tuple(tail)
    return FlagPlan(new_argv, tuple(diff), tuple(notes))


def help_line(f: FlagDef) -> str:
    """``steps (--speculative-num-steps; also num-steps): a whole number from 1 to 16. Draft steps ...``."""
    others = ", ".join(f.aliases[1:])
    alias_note = f"; also {others}" if others else ""
    return f"{f.short} ({f.name}{alias_note}): {f.describe()}. {f.help}"


def flag_key(word: str) -> str:
    """The form flag words are indexed by: lower case, ``_`` as ``-``, no leading dashes."""
    return word.strip().lower().replace("_", "-").lstrip("-")


def index_flags(flags: Sequence[FlagDef]) -> tuple[dict[str, FlagDef], dict[str, FlagDef]]:
    """(word -> flag for every ``--`` spelling and alias, first one wins; exact spelling -> flag). One-dash short
    spellings (llama.cpp's ``-c``, ``-np``) are no chat words: ``c`` is the concurrency's, ``a`` a host's name."""
    by_word: dict[str, FlagDef] = {}
    for f in flags:
        for w in (*(s[2:] for s in f.all_spellings if s.startswith("--")), *f.aliases):  # not llama.cpp's `-c`
            by_word.setdefault(w, f)
    return by_word, {s: f for f in flags for s in f.all_spellings}


def resolve_in(word: str, by_word: Mapping[str, FlagDef]) -> FlagDef:
    """The flag ``word`` names in ``by_word``, or a `UserInputError` with a "did you mean"."""
    key = flag_key(word)
    found = by_word.get(key)
    if found is not None:
        return found
    shown = word if _VALUE_RE.fullmatch(word or "-") and len(word) <= 64 else "that"
    close = suggest(key, list(by_word))
    if close is not None:
        raise UserInputError(f"I don't know the flag '{shown}'. Did you mean '{close}'?", suggestion=close)
    raise UserInputError(f"I don't know the flag '{shown}'. Say 'help flags' for the list.")


_PLAIN_VERSION = re.compile(r"\d+(?:\.\d+)+[0-9A-Za-z.+-]{0,40}")


def plain_version(v: object) -> str | None:
    """``v`` when it reads as a version (``0.11.0``, ``0.5.2rc1``, ``0.12.0+cu128``), else None: what a server
    answers goes into chat, so anything else is dropped."""
    return v if isinstance(v, str) and _PLAIN_VERSION.fullmatch(v) else None


def number_or_none(v: str | None, kind: type) -> Any:
    """``kind(v)``, or None when ``v`` is absent or not such a number."""
    if v is None:
        return None
    try:
        return kind(v)
    except ValueError:
        return None
