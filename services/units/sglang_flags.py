"""The SGLang server flags pitcrew may change: names, types, bounds, aliases, help, coupling rules.

Owns the flag schema (`FLAGS`), resolving what a person typed to a flag (`resolve_flag`, with a
"did you mean"), checking and normalizing a value (`parse_value`: numbers within bounds, choices,
and only plain characters — never anything a shell or systemd would interpret), and planning a
change to an ``ExecStart=`` argv (`apply_changes`) with SGLang's own coupling rules applied: with
``--speculative-eagle-topk 1`` (given or by default) SGLang forces
``--speculative-num-draft-tokens = steps + 1`` (``ServerArgs``, FORMATS.md a.5), so when the unit
pins the draft tokens, changing the steps changes them too and the plan says so.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from services.errors import UnitError, UserInputError
from services.units.editor import FlagChange, parse_flags

__all__ = [
    "EAGLE_FAMILY",
    "FLAGS",
    "SWITCHES",
    "FlagDef",
    "FlagPlan",
    "apply_changes",
    "check_plain",
    "flag_help_lines",
    "format_change",
    "lookup_flag",
    "parse_value",
    "resolve_flag",
]

Kind = Literal["int", "float", "choice", "bool", "str"]

_VALUE_RE = re.compile(r"[A-Za-z0-9._:/=+-]+")
_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_TRUE = {"true", "on", "yes", "1", "enable", "enabled"}
_FALSE = {"false", "off", "no", "0", "disable", "disabled"}
MAX_VALUE_LEN = 256


@dataclass(frozen=True)
class FlagDef:
    """One SGLang flag: canonical name, other spellings SGLang accepts, chat aliases, type, bounds."""

    name: str
    kind: Kind
    help: str
    aliases: tuple[str, ...] = ()
    spellings: tuple[str, ...] = ()  # other argparse spellings of the same flag
    minimum: float | None = None
    maximum: float | None = None
    exclusive: bool = False  # bounds are exclusive (0 < x < 1)
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
        rng = f"between {lo} and {hi} (exclusive)" if self.exclusive else f"from {lo} to {hi}"
        extra = f" (or {', '.join(self.specials)})" if self.specials else ""
        return f"{word} {rng}{extra}"


def _fmt_num(x: float | None) -> str:
    if x is None:
        return "?"
    return str(int(x)) if float(x).is_integer() else repr(x)


EAGLE_FAMILY = frozenset({"EAGLE", "EAGLE3", "NEXTN", "STANDALONE"})

FLAGS: tuple[FlagDef, ...] = (
    FlagDef("--speculative-algorithm", "choice", "Speculative decoding algorithm.",
            aliases=("algo", "algorithm", "spec"), spellings=(),
            choices=("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")),
    FlagDef("--speculative-num-steps", "int", "Draft steps proposed per verify step.",
            aliases=("steps", "num-steps"), minimum=1, maximum=16),
    FlagDef("--speculative-eagle-topk", "int", "Branching factor of the draft tree per step (1 = a chain).",
            aliases=("topk",), minimum=1, maximum=10),
    FlagDef("--speculative-num-draft-tokens", "int",
            "Draft tokens verified per step (with topk 1 SGLang sets it to steps + 1).",
            aliases=("draft", "draft-tokens"), minimum=1, maximum=64),
    FlagDef("--speculative-draft-model-path", "str", "Path of the draft model.",
            aliases=("draft-model",)),
    FlagDef("--mem-fraction-static", "float", "Fraction of GPU memory for weights and KV cache.",
            aliases=("mem",), minimum=0.0, maximum=1.0, exclusive=True),
    FlagDef("--max-running-requests", "int", "Most requests decoded at once.",
            aliases=("max-running",), minimum=1, maximum=4096),
    FlagDef("--chunked-prefill-size", "int", "Tokens per prefill chunk (-1 disables chunking).",
            aliases=("chunked-prefill",), minimum=1, maximum=1048576, specials=("-1",)),
    FlagDef("--max-prefill-tokens", "int", "Most tokens in one prefill batch.",
            aliases=("max-prefill",), minimum=1, maximum=1048576),
    FlagDef("--cuda-graph-max-bs", "int", "Largest batch size captured in CUDA graphs.",
            aliases=("cuda-graph-max-bs", "cuda-graph-bs"), minimum=1, maximum=1024),
    FlagDef("--context-length", "int", "Model context length in tokens.",
            aliases=("ctx", "context"), minimum=1, maximum=10_485_760),
    FlagDef("--max-total-tokens", "int", "Size of the KV cache pool in tokens.",
            aliases=("max-total-tokens", "max-tokens"), minimum=1, maximum=1_000_000_000),
    FlagDef("--tp-size", "int", "Tensor parallel size (GPUs per model replica).",
            aliases=("tp",), spellings=("--tensor-parallel-size",), minimum=1, maximum=64),
    FlagDef("--dp-size", "int", "Data parallel size (model replicas).",
            aliases=("dp",), spellings=("--data-parallel-size",), minimum=1, maximum=64),
    FlagDef("--page-size", "int", "Tokens per KV cache page.",
            aliases=("page-size",), minimum=1, maximum=1024),
    FlagDef("--stream-interval", "int", "Decode steps between streamed chunks.",
            aliases=("stream-interval",), minimum=1, maximum=1000),
    FlagDef("--schedule-policy", "choice", "Order in which waiting requests are scheduled.",
            aliases=("schedule",), choices=("lpm", "random", "fcfs", "dfs-weight", "lof", "priority")),
    FlagDef("--kv-cache-dtype", "choice", "Data type of the KV cache.",
            aliases=("kv-dtype",), choices=("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1")),
    FlagDef("--attention-backend", "str", "Attention kernel backend (e.g. fa3, flashinfer, triton).",
            aliases=("attention",)),
    FlagDef("--disable-cuda-graph", "bool", "Turn CUDA graphs off (slower decode, less memory).",
            aliases=("no-cuda-graph",)),
    FlagDef("--disable-radix-cache", "bool", "Turn prefix (radix) caching off.",
            aliases=("no-radix-cache",)),
    FlagDef("--enable-torch-compile", "bool", "Compile the model with torch.compile (slower start).",
            aliases=("torch-compile",)),
    FlagDef("--enable-metrics", "bool", "Serve Prometheus metrics on /metrics.",
            aliases=("metrics",)),
)

SWITCHES = frozenset(s for f in FLAGS if f.kind == "bool" for s in f.all_spellings)

_BY_WORD: dict[str, FlagDef] = {}
for _f in FLAGS:
    for _w in (*(s[2:] for s in _f.all_spellings), *_f.aliases):
        _BY_WORD.setdefault(_w, _f)
_BY_NAME: dict[str, FlagDef] = {s: f for f in FLAGS for s in f.all_spellings}

STEPS = _BY_NAME["--speculative-num-steps"]
TOPK = _BY_NAME["--speculative-eagle-topk"]
DRAFT = _BY_NAME["--speculative-num-draft-tokens"]
ALGO = _BY_NAME["--speculative-algorithm"]
_SPEC_FLAGS = frozenset({STEPS, TOPK, DRAFT, _BY_NAME["--speculative-draft-model-path"]})


def _suggest(word: str, candidates: Sequence[str]) -> str | None:
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def lookup_flag(word: str) -> FlagDef | None:
    """The flag named by ``word``, or None (no error, no suggestion)."""
    return _BY_WORD.get(word.strip().lower().replace("_", "-").lstrip("-"))


def resolve_flag(word: str) -> FlagDef:
    """The flag named by ``word``: an alias (``steps``), a flag (``--tp-size``) or ``mem_fraction_static``."""
    key = word.strip().lower().replace("_", "-").lstrip("-")
    found = _BY_WORD.get(key)
    if found is not None:
        return found
    shown = word if _VALUE_RE.fullmatch(word or "-") and len(word) <= 64 else "that"
    suggestion = _suggest(key, list(_BY_WORD))
    if suggestion is not None:
        raise UserInputError(f"I don't know the flag '{shown}'. Did you mean '{suggestion}'?",
                             suggestion=suggestion)
    raise UserInputError(f"I don't know the flag '{shown}'. Say 'help flags' for the list.")


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
    suggestion = _suggest(text.upper() if flag.choices[0].isupper() else text.lower(), flag.choices)
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
    """One line for a preview: ``--speculative-num-steps 3 -> 10`` (+ why, when derived)."""
    old = "(unset)" if change.old is None else change.old
    new = "(unset)" if change.new is None else change.new
    line = f"{change.flag} {old} -> {new}"
    if change.derived:
        line += f" (derived: {change.reason})" if change.reason else " (derived)"
    return line


# per flag found in argv: (value, index, word count, spelling, written with '=')
CurrentFlags = dict[FlagDef, tuple[str, int, int, str, bool]]


def _current(argv: Sequence[str]) -> CurrentFlags:
    """Schema flags in argv: flag -> (value, index, count, spelling, uses '=')."""
    out: dict[FlagDef, tuple[str, int, int, str, bool]] = {}
    for name, value, idx, count in parse_flags(argv, SWITCHES):
        fdef = _BY_NAME.get(name)
        if fdef is None:
            continue
        if fdef in out:
            raise UnitError(f"The unit sets {fdef.name} twice; fix the unit by hand before changing it.")
        uses_eq = count == 1 and value is not None
        out[fdef] = ("true" if value is None else value, idx, count, name, uses_eq)
    return out


def apply_changes(argv: Sequence[str], changes: Mapping[str, str | None]) -> FlagPlan:
    """Plan ``changes`` (flag word -> value, None to remove) on an ExecStart argv, coupling included."""
    current = _current(argv)
    wanted = _wanted(changes)
    effective: dict[FlagDef, str] = {f: v[0] for f, v in current.items()}
    for fdef, value in wanted.items():
        if value is None:
            effective.pop(fdef, None)
        else:
            effective[fdef] = value
    derived, notes = _coupled(current, wanted, effective)
    final: dict[FlagDef, str | None] = dict(wanted)
    for fdef, (value, _) in derived.items():
        final[fdef] = value
    return _rewrite(argv, current, final, derived, notes)


def _wanted(changes: Mapping[str, str | None]) -> dict[FlagDef, str | None]:
    """The asked-for changes by flag, values checked and normalized (a switch turned off is a removal)."""
    wanted: dict[FlagDef, str | None] = {}
    for word, raw in changes.items():
        fdef = resolve_flag(word)
        if fdef in wanted:
            raise UserInputError(f"{fdef.short} is given twice.")
        value = None if raw is None else parse_value(fdef, raw)
        if fdef.kind == "bool" and value == "false":
            value = None
        wanted[fdef] = value
    return wanted


def _coupled(current: CurrentFlags, wanted: Mapping[FlagDef, str | None],
             effective: dict[FlagDef, str]) -> tuple[dict[FlagDef, tuple[str | None, str]], list[str]]:
    """SGLang's own couplings: draft tokens follow steps when topk is 1; notes on what SGLang will do."""
    derived: dict[FlagDef, tuple[str | None, str]] = {}
    notes: list[str] = []
    algo = effective.get(ALGO)
    touched_spec = any(f in _SPEC_FLAGS for f in wanted) or ALGO in wanted
    if algo is None and any(f in _SPEC_FLAGS and v is not None for f, v in wanted.items()):
        raise UserInputError("This unit has no --speculative-algorithm, so speculative flags would do "
                             "nothing. Add one, e.g. 'try algo=EAGLE steps=3'.")
    if algo in EAGLE_FAMILY and touched_spec and STEPS in effective and int(effective.get(TOPK, "1")) == 1:
        want = str(int(effective[STEPS]) + 1)
        if DRAFT in wanted and wanted[DRAFT] is not None and wanted[DRAFT] != want:
            raise UserInputError(f"With topk 1, SGLang always uses steps + 1 = {want} draft tokens. "
                                 f"Ask for draft {want}, or leave draft out.")
        if DRAFT not in wanted and DRAFT in effective and effective[DRAFT] != want:
            derived[DRAFT] = (want, "with topk 1 SGLang uses steps + 1 draft tokens")
            effective[DRAFT] = want
        elif DRAFT not in effective:
            notes.append(f"SGLang will use {want} draft tokens (steps + 1, because topk is 1).")
    if ALGO in wanted and algo is not None and ALGO not in current and _BY_NAME[
            "--max-running-requests"] not in effective:
        notes.append("SGLang caps max_running_requests at 48 with speculative decoding "
                     "unless --max-running-requests is given.")
    return derived, notes


def _rewrite(argv: Sequence[str], current: CurrentFlags, final: Mapping[FlagDef, str | None],
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


def flag_help_lines() -> tuple[str, ...]:
    """One line per flag for help: ``steps (--speculative-num-steps): a whole number from 1 to 16. ...``."""
    lines = []
    for f in FLAGS:
        others = ", ".join(f.aliases[1:])
        alias_note = f"; also {others}" if others else ""
        lines.append(f"{f.short} ({f.name}{alias_note}): {f.describe()}. {f.help}")
    return tuple(lines)
