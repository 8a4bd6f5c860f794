"""Argument words of the grammar: numbers and ids, host names, concurrency levels, flag/value pairs.

Owns the bounded little parsers `handlers.grammar` builds commands from: ``on <host>``,
``c=1,4,16``, ``10 steps`` / ``steps=10`` / ``--speculative-num-steps 10`` / ``5 spec tokens`` (flag words
of either engine, `services.units.lookup_flag`), ids like ``#42``.
Every refusal is a `UserInputError` with one or two plain sentences.
"""

from __future__ import annotations

import re
from typing import NoReturn

from services.engines import FlagDef, check_plain, lookup_flag, parse_value, resolve_flag
from services.errors import UserInputError

__all__ = [
    "BOOL_WORDS", "FILLERS", "HOST_RE", "MAX_CONCURRENCY", "MAX_ID", "MAX_LEVELS", "MAX_SWEEP_VALUES", "NUM",
    "changes", "int_arg", "is_flag_word", "join_phrases", "no_args", "one_id", "only_host", "pairs", "parse_host",
    "split_commas", "take_host", "take_levels",
]

MAX_SWEEP_VALUES = 12
MAX_LEVELS = 8
MAX_CONCURRENCY = 256
MAX_ID = 2**31 - 1
HOST_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
NUM = re.compile(r"#?[0-9]{1,10}")
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
BOOL_WORDS = frozenset({"on", "off", "true", "false", "yes", "no", "enable", "disable", "enabled", "disabled"})
FILLERS = frozenset({"with", "and", "please", "the", "to"})


def int_arg(tok: str, what: str, lo: int = 1, hi: int = MAX_ID) -> int:
    if not NUM.fullmatch(tok):
        raise UserInputError(f"{what} must be a number, not '{tok[:40]}'.")
    value = int(tok.lstrip("#"))
    if not lo <= value <= hi:
        raise UserInputError(f"{what} must be from {lo} to {hi}.")
    return value


def parse_host(tok: str) -> str:
    """A host name as typed, lower-cased and checked: ``[a-z0-9][a-z0-9._-]{0,62}``, no ``..``."""
    host = tok.lower()
    if not HOST_RE.fullmatch(host) or ".." in host:
        raise UserInputError(f"'{tok[:70]}' is not a valid host name. Use letters, digits, '.', '_' and '-' "
                             "(starting with a letter or digit, at most 63 characters).")
    return host


def take_host(args: list[str], bool_guard: bool = False) -> tuple[str | None, list[str]]:
    """Remove ``on <host>`` (or ``host=<host>``) from args."""
    host: str | None = None
    rest: list[str] = []
    i = 0
    while i < len(args):
        low = args[i].lower()
        found: str | None = None
        nxt = args[i + 1].lower() if i + 1 < len(args) else ""
        prev = lookup_flag(args[i - 1]) if i > 0 and bool_guard else None
        nxt_flag = lookup_flag(nxt) if bool_guard else None
        # right after a switch, `on` is its value when a number or another flag follows (`no-cuda-graph on
        # schedule lpm`); `on <switch>` (`try on torch-compile`) turns the switch on; `on <any other flag word>`
        # names a host (`try steps 5 on pp`: a host, not the value `on` for the whole-number
        # --pipeline-parallel-size)
        after_switch = prev is not None and prev.kind == "bool" and (
            re.fullmatch(r"[0-9.+-]+", nxt) is not None or nxt_flag is not None)
        if low in ("on", "@") and nxt and "=" not in nxt and not after_switch and not (bool_guard and (
                nxt in BOOL_WORDS or nxt in FILLERS or (nxt_flag is not None and nxt_flag.kind == "bool"))):
            found, i = args[i + 1], i + 2
        elif low.startswith("host="):
            found, i = args[i][5:], i + 1
        else:
            rest.append(args[i])
            i += 1
            continue
        if host is not None:
            raise UserInputError("Name one host per command.")
        host = parse_host(found)
    return host, rest


def _levels_arg(spec: str) -> tuple[int, ...]:
    parts = [p for p in spec.split(",") if p]
    if not parts:
        raise UserInputError("Give concurrency levels like c=1,4,16.")
    if len(parts) > MAX_LEVELS:
        raise UserInputError(f"At most {MAX_LEVELS} concurrency levels per run.")
    levels: list[int] = []
    for p in parts:
        level = int_arg(p, "A concurrency level", 1, MAX_CONCURRENCY)
        if level not in levels:
            levels.append(level)
    return tuple(levels)


def take_levels(args: list[str]) -> tuple[tuple[int, ...] | None, list[str]]:
    levels: tuple[int, ...] | None = None
    rest: list[str] = []
    i = 0
    while i < len(args):
        low = args[i].lower().lstrip("-")
        key, eq, val = low.partition("=")
        after_on = bool(rest) and rest[-1].lower() in ("on", "@") and not eq
        if key in ("c", "concurrency", "conc") and (eq or i + 1 < len(args)) and not after_on:
            if not eq:
                val, i = args[i + 1], i + 1
            if levels is not None:
                raise UserInputError("Give the concurrency levels once, e.g. c=1,4,16.")
            levels = _levels_arg(val)
            if rest and rest[-1].lower() == "at":
                rest.pop()
        else:
            rest.append(args[i])
        i += 1
    return levels, rest


def only_host(args: list[str], name: str) -> str | None:
    host, rest = take_host(args)
    rest = [a for a in rest if a.lower() not in ("of", "for", "host")]
    if len(rest) > 1 or (rest and host is not None):
        raise UserInputError(f"{name} takes at most a host name, e.g. '{name} gpu-1'.")
    return parse_host(rest[0]) if rest else host


def no_args(args: list[str], name: str) -> None:
    if args:
        raise UserInputError(f"'{name}' takes nothing after it.")


def one_id(args: list[str], what: str, usage: str, skip: tuple[str, ...]) -> int:
    rest = [a for a in args if a.lower() not in skip]
    if len(rest) != 1:
        raise UserInputError(f"Say which {what}, e.g. '{usage}'.")
    return int_arg(rest[0], f"The {what} number")


# ---- flag/value pairs -----------------------------------------------------------------------------

def is_flag_word(tok: str) -> bool:
    return "=" not in tok and not NUM.fullmatch(tok) and lookup_flag(tok) is not None


def join_phrases(args: list[str]) -> list[str]:
    """Two words that together name a flag become one: ``spec tokens`` -> ``spec-tokens``, ``max running=8``."""
    out: list[str] = []
    i = 0
    while i < len(args):
        if i + 1 < len(args) and "=" not in args[i] and not NUM.fullmatch(args[i]):
            joint = f"{args[i]}-{args[i + 1]}"
            if lookup_flag(joint.partition("=")[0]) is not None:
                out.append(joint)
                i += 2
                continue
        out.append(args[i])
        i += 1
    return out


def _engine_flag(tok: str) -> FlagDef | None:
    """A ``--long-flag`` pitcrew's schema does not know: kept as typed, for the engine's own parser to judge."""
    name = tok.partition("=")[0]
    if not re.fullmatch(r"--[a-z0-9][a-z0-9-]{1,62}", name) or lookup_flag(name) is not None:
        return None
    return FlagDef(name, "str", "a flag only the engine knows")


Pair = tuple[FlagDef, str]


def pairs(args: list[str], engine_flags: bool = False) -> list[Pair]:
    """(flag, raw value) pairs; with `engine_flags`, unknown ``--long-flags`` are kept for the engine to judge."""
    out: list[Pair] = []
    args = join_phrases(args)
    i, n = 0, len(args)
    while i < n:
        tok = args[i]
        if tok.lower() in FILLERS:
            i += 1
            continue
        raw = _engine_flag(tok) if engine_flags else None
        if raw is not None:
            pair, used = _engine_pair(raw, args, i)
        elif "=" in tok:
            pair, used = _assignment(tok), 1
        elif is_flag_word(tok):
            pair, used = _flag_then_value(resolve_flag(tok), args, i)
        elif i + 1 < n and is_flag_word(args[i + 1]):
            pair, used = (resolve_flag(args[i + 1]), tok), 2
        else:
            _unreadable(tok, args, i)
        out.append(pair)
        i += used
    return out


def _engine_pair(raw: FlagDef, args: list[str], i: int) -> tuple[Pair, int]:
    """A flag only the engine knows: ``--x=v``, ``--x v``, or a switch."""
    _, eq, inline = args[i].partition("=")
    if eq:
        return (raw, inline), 1
    if i + 1 < len(args) and not args[i + 1].startswith("-") and "=" not in args[i + 1]:
        return (raw, args[i + 1]), 2
    return (raw, "true"), 1


def _assignment(tok: str) -> Pair:
    key, _, value = tok.partition("=")
    if not key:
        raise UserInputError("Write a change as flag=value, e.g. steps=10.")
    fdef = resolve_flag(key)
    if not value:
        raise UserInputError(f"Give a value after '{key[:40]}=', e.g. {fdef.short}=<value>.")
    return fdef, value


def _flag_then_value(fdef: FlagDef, args: list[str], i: int) -> tuple[Pair, int]:
    """``steps 10``, ``--flag value``; a switch takes an on/off word when one follows."""
    n = len(args)
    if fdef.kind == "bool":
        if i + 1 < n and args[i + 1].lower() in BOOL_WORDS:
            return (fdef, args[i + 1]), 2
        return (fdef, "true"), 1
    if i + 1 >= n or "=" in args[i + 1] or is_flag_word(args[i + 1]):
        raise UserInputError(f"Give a value for {fdef.short}, e.g. '{fdef.short} <value>'.")
    return (fdef, args[i + 1]), 2


def _unreadable(tok: str, args: list[str], i: int) -> NoReturn:
    if NUM.fullmatch(tok) or re.fullmatch(r"[0-9.+-]+", tok):
        if i + 1 < len(args) and "=" not in args[i + 1] and not re.fullmatch(r"[0-9.+-]+", args[i + 1]):
            resolve_flag(args[i + 1])  # "10 stpes": raises with a "did you mean"
        raise UserInputError(f"I can't tell which flag '{tok[:40]}' is for. Write it like 'steps {tok[:40]}'.")
    resolve_flag(tok)  # raises with a "did you mean"
    raise UserInputError(f"I couldn't read '{tok[:40]}'.")  # pragma: no cover - resolve_flag raised


def changes(pairs: list[tuple[FlagDef, str]], engine_values: bool = False) -> tuple[tuple[str, str], ...]:
    """Checked, normalized changes. With `engine_values`, a value that is not even of the flag's type (``0.95x``
    for a number) or a flag only the engine knows is kept as typed (plain characters only): the preview checks
    it with the engine's own parser on the host, which words the refusal."""
    seen: set[str] = set()
    changes: list[tuple[str, str]] = []
    for fdef, raw in pairs:
        if fdef.name in seen:
            raise UserInputError(f"{fdef.short} is given twice.")
        seen.add(fdef.name)
        if engine_values and (lookup_flag(fdef.name) is None or (
                fdef.kind in ("int", "float") and not NUMBER.fullmatch(raw) and raw not in fdef.specials)):
            check_plain(raw, fdef.short)
            changes.append((fdef.name, raw))
            continue
        changes.append((fdef.name, parse_value(fdef, raw)))
    return tuple(changes)



def split_commas(args: list[str]) -> list[str]:
    return [part for a in args for part in a.split(",") if part]

