"""The inference engine's own command line, read from the engine, and a check of a unit's argv against it.

Owns: reading CPython argparse's ``--help`` output into a flag table (`parse_help`: every
option string, whether it takes a value, its choices, its nargs), the value types the engine's parser declares
(`EngineCli.types`, read from the parser object itself when the engine allows it), and `check_argv`: the checks
argparse would make when the server starts — unknown or ambiguous flags (argparse accepts unambiguous prefixes),
a value missing, a value given to a switch, a wrong type, a value outside the choices, a required flag missing —
each worded as argparse words it (``launch_server.py: error: argument --mem-fraction-static: invalid float value:
'0.95x'``), plus flags the engine deprecates or that an earlier version on the host accepted and this one does not.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from services.engines import engine_named

__all__ = [
    "EngineCli",
    "EngineOption",
    "FlagProblem",
    "check_argv",
    "parse_help",
]

_OPT_RE = re.compile(r"^\s{1,8}(-{1,2}[A-Za-z0-9][^\s,]*)")
_CHOICES_RE = re.compile(r"^\{([^}]*)\}$")
_NEG_NUM = re.compile(r"^-\d+$|^-\d*\.\d+$")
_POSITIONAL_RE = re.compile(r"^\s{2}([A-Za-z_][\w-]*)(?:\s|$)")


@dataclass(frozen=True)
class EngineOption:
    """One option of the engine's parser: its spellings, whether it takes a value, nargs, choices, type."""

    names: tuple[str, ...]
    takes_value: bool
    nargs: str | None = None  # None (one value), "?", "*", "+"
    choices: tuple[str, ...] = ()
    type: str | None = None  # "int", "float", "str", ... when the engine told us

    @property
    def name(self) -> str:
        """The first long spelling (`--tensor-parallel-size` of `--tensor-parallel-size, -tp`)."""
        return next((n for n in self.names if n.startswith("--")), self.names[0])


@dataclass(frozen=True)
class EngineCli:
    """The flag table of one engine version on one host (interpreter), as the engine printed it."""

    engine: str
    version: str
    prog: str
    options: tuple[EngineOption, ...]
    required: tuple[str, ...] = ()
    positionals: tuple[str, ...] = ()  # the parser's positional arguments (vLLM's `model_tag`)
    by_name: dict[str, EngineOption] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for opt in self.options:
            for n in opt.names:
                self.by_name.setdefault(n, opt)

    def with_types(self, types: Mapping[str, str]) -> EngineCli:
        opts = tuple(EngineOption(o.names, o.takes_value, o.nargs, o.choices,
                                  next((types[n] for n in o.names if n in types), o.type)) for o in self.options)
        return EngineCli(self.engine, self.version, self.prog, opts, self.required, self.positionals)

    def lookup(self, word: str) -> tuple[EngineOption | None, tuple[str, ...]]:
        """The option `word` names (exactly, or as an unambiguous prefix as argparse allows); else the candidates."""
        if word in self.by_name:
            return self.by_name[word], ()
        if word.startswith("--"):
            hits = tuple(n for n in self.by_name if n.startswith(word))
            opts = {self.by_name[n].name for n in hits}
            if len(opts) == 1:
                return self.by_name[hits[0]], ()
            return None, hits
        return None, ()


@dataclass(frozen=True)
class FlagProblem:
    """One thing the engine would refuse (``error``) or warn about (``warning``) in the new command line."""

    flag: str
    message: str  # the engine's wording, e.g. "argument --port: invalid int value: 'x'"
    severity: str = "error"


def parse_help(text: str, *, engine: str, version: str) -> EngineCli:
    """Read CPython argparse's ``--help`` output (3.8-3.13 layouts) into an `EngineCli`."""
    lines = text.splitlines()
    prog = "launch_server.py"
    m = re.search(r"^usage:\s+(\S+)", text, re.MULTILINE)
    if m:
        prog = m.group(1)
        lines = text[m.start():].splitlines()  # what the engine printed before its usage (warnings) is not help
    usage: list[str] = []
    body_start = len(lines)
    for i, line in enumerate(lines):
        if i > 0 and not line.strip():
            body_start = i
            break
        usage.append(line)
    required = tuple(sorted(set(re.findall(r"(?<![\[\w-])(--[A-Za-z0-9][\w-]*) [A-Z_]+(?![^\[]*\])",
                                           " ".join(usage)))))
    options: list[EngineOption] = []
    positionals: list[str] = []
    section = ""
    for line in lines[body_start:]:
        if line and not line[0].isspace():
            section = line.strip().rstrip(":").lower()
            continue
        pm = _POSITIONAL_RE.match(line)
        if section == "positional arguments" and pm:
            positionals.append(pm.group(1))
            continue
        om = _OPT_RE.match(line)
        if not om or not line.lstrip().startswith("-"):
            continue
        spec = line.strip()
        # the invocation part ends at two spaces (then the help text) or at the end of the line
        spec = re.split(r"\s{2,}", spec, maxsplit=1)[0]
        names: list[str] = []
        metas: list[str] = []
        for part in (p.strip() for p in _split_invocations(spec)):
            words = part.split(" ", 1)
            if not words[0].startswith("-"):
                continue
            names.append(words[0])
            if len(words) > 1:
                metas.append(words[1])
        if not names or names == ["-h", "--help"] or "--help" in names:
            continue
        meta = metas[0] if metas else ""
        options.append(_option(tuple(names), meta))  # every spelling, as declared (vLLM's `-tp`, `-sc`)
    return EngineCli(engine, version, prog, tuple(options), required, tuple(positionals))


def _split_invocations(spec: str) -> list[str]:
    """``--a A, --b A`` → [``--a A``, ``--b A``] (commas inside ``{...}`` choices kept)."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in spec:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def _option(names: tuple[str, ...], meta: str) -> EngineOption:
    if not meta:
        return EngineOption(names, takes_value=False)
    first = meta.split(" ", 1)[0]
    choices: tuple[str, ...] = ()
    cm = _CHOICES_RE.match(first.strip("[]"))
    if cm:
        choices = tuple(c for c in cm.group(1).split(",") if c)
    if meta.startswith("[") and "..." in meta:
        nargs: str | None = "*"
    elif "..." in meta:
        nargs = "+"
    elif meta.startswith("["):
        nargs = "?"
    else:
        nargs = None
    return EngineOption(names, takes_value=True, nargs=nargs, choices=choices)


_CONVERT = {"int": int, "float": float}


def _bad_value(opt: EngineOption, value: str) -> str | None:
    conv = _CONVERT.get(opt.type or "")
    if conv is not None:
        try:
            conv(value)
        except ValueError:
            return f"argument {'/'.join(opt.names)}: invalid {opt.type} value: {value!r}"
    if opt.choices and value not in opt.choices:
        listed = ", ".join(repr(c) for c in opt.choices)
        return f"argument {'/'.join(opt.names)}: invalid choice: {value!r} (choose from {listed})"
    return None


def _is_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and not _NEG_NUM.match(word)


def check_argv(cli: EngineCli, argv: Sequence[str], start: int,
               removed: Mapping[str, str] | None = None) -> tuple[FlagProblem, ...]:
    """What the engine's parser would say about ``argv[start:]`` (errors first), argparse's wording.

    ``removed`` maps flags an earlier engine version on this host accepted to that version (``"0.5.5"``)."""
    problems: list[FlagProblem] = []
    extras: list[str] = []
    seen: set[str] = set()
    removed = removed or {}
    words = list(argv[start:])
    i = 0
    while i < len(words):
        w = words[i]
        if not _is_flag(w):
            extras.append(w)
            i += 1
            continue
        name, eq, inline = w.partition("=")
        opt, candidates = cli.lookup(name)
        if opt is None:
            if len(candidates) > 1:
                problems.append(FlagProblem(name, f"ambiguous option: {name} could match {', '.join(candidates)}"))
            else:
                extras.append(w)
                problems += _unknown_flag_notes(cli, name, removed)
            i += 1
            continue
        seen.add(opt.name)
        dep = engine_named(cli.engine).deprecated_flags.get(opt.name)  # the engine marks it deprecated
        if dep:
            problems.append(FlagProblem(opt.name, f"{name} is deprecated: {dep}", "warning"))
        values, i = _values(opt, words, i, inline if eq else None)
        problems += _value_problems(opt, values)
    extras = extras[len(cli.positionals):]  # argparse fills the positionals first (vLLM's model_tag)
    missing = [cli.by_name[r] for r in cli.required if r in cli.by_name and cli.by_name[r].name not in seen]
    if missing:
        listed = ", ".join("/".join(o.names) for o in missing)
        problems.append(FlagProblem(missing[0].name, f"the following arguments are required: {listed}"))
    if extras:
        problems.append(FlagProblem(extras[0], f"unrecognized arguments: {' '.join(extras)}"))
    order = {"error": 0, "warning": 1, "note": 2}
    return tuple(sorted(problems, key=lambda p: order.get(p.severity, 3)))


def _unknown_flag_notes(cli: EngineCli, name: str, removed: Mapping[str, str]) -> list[FlagProblem]:
    """A typo's nearest flag, or the version on this host that still took a flag this one does not."""
    if name in removed:
        return [FlagProblem(name, f"{name} was accepted by {cli.engine} {removed[name]} on this host and is not by "
                                  f"{cli.version} (removed or renamed)", "note")]
    close = difflib.get_close_matches(name, [n for n in cli.by_name if n.startswith("--")], n=1, cutoff=0.8)
    return [FlagProblem(name, f"{name}: did you mean {close[0]}?", "note")] if close else []


def _values(opt: EngineOption, words: list[str], i: int, inline: str | None) -> tuple[list[str] | None, int]:
    """The values the option at ``words[i]`` takes (None for a switch) and the index after them."""
    if not opt.takes_value:
        return None if inline is None else [inline], i + 1
    if inline is not None:
        return [inline], i + 1
    values: list[str] = []
    j = i + 1
    while j < len(words) and not _is_flag(words[j]):
        values.append(words[j])
        j += 1
        if opt.nargs in (None, "?"):
            break
    return values, j


def _value_problems(opt: EngineOption, values: list[str] | None) -> list[FlagProblem]:
    names = "/".join(opt.names)
    if not opt.takes_value:
        return [FlagProblem(opt.name, f"argument {names}: ignored explicit argument {values[0]!r}")] if values else []
    if not values and opt.nargs in (None, "+"):
        what = "expected one argument" if opt.nargs is None else "expected at least one argument"
        return [FlagProblem(opt.name, f"argument {names}: {what}")]
    for v in values or ():
        bad = _bad_value(opt, v)
        if bad:
            return [FlagProblem(opt.name, bad)]
    return []
