"""The chat command grammar: text in, one typed `Command` out — forgiving in wording, strict in meaning.

Owns `parse` (and `render`, its inverse: canonical text that parses back to the same command).
Before any word is read, the whole text is checked: one line, plain ASCII, no shell
metacharacters, quotes or NUL, at most `MAX_LEN` characters. Flags and values go through the
SGLang flag schema (`services.units.sglang_flags`); host names, ids, concurrency levels, sweep sizes and
durations are bounded here. Every refusal is a `UserInputError` (or `UnknownCommand`) whose message
is one or two plain sentences.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from handlers.commands import (
    COMMANDS,
    SCHEDULABLE,
    Ack,
    Again,
    Bench,
    Cancel,
    Command,
    Compare,
    Confirm,
    Deny,
    Diff,
    Help,
    History,
    KillStale,
    Logs,
    Mute,
    Queue,
    Rollback,
    Schedule,
    Schedules,
    Show,
    Status,
    Sweep,
    Try,
    Unschedule,
)
from handlers.grammar_args import (
    FILLERS,
    HOST_RE,
    MAX_CONCURRENCY,
    MAX_LEVELS,
    MAX_SWEEP_VALUES,
    NUM,
    changes,
    int_arg,
    is_flag_word,
    no_args,
    one_id,
    only_host,
    pairs,
    parse_host,
    split_commas,
    take_host,
    take_levels,
)
from handlers.grammar_render import render
from handlers.grammar_time import parse_duration_minutes, parse_schedule_spec
from services.errors import UnknownCommand, UserInputError
from services.units import FlagDef, check_plain, lookup_flag, parse_value, resolve_flag

__all__ = ["HOST_RE", "MAX_CONCURRENCY", "MAX_LEN", "MAX_LEVELS", "MAX_SWEEP_VALUES", "parse", "parse_host", "render"]

MAX_LEN = 500
_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t._:/=+,#@-")
_MENTION = re.compile(r"^\s*(?:<@[A-Za-z0-9]+(?:\|[A-Za-z0-9._-]*)?>|[@/]pitcrew\b|pitcrew\s*[:,])\s*", re.I)
_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Slack turns host-like words into links: <http://gpu-1.lab|gpu-1.lab> or <http://gpu-1.lab>
_SLACK_LINK = re.compile(r"<(?:https?://)([A-Za-z0-9._-]{1,253})/?(?:\|([A-Za-z0-9._-]{1,253}))?>")

_VERBS: dict[str, type[Command]] = {w: info.cls for info in COMMANDS for w in info.words}


def _describe_char(c: str) -> str:
    if c in "\n\r":
        return "a line break"
    if c == "\x00":
        return "a NUL byte"
    if ord(c) < 0x20 or ord(c) == 0x7F:
        return "a control character"
    if c in "\"'\u201c\u201d\u2018\u2019`":
        return "a quote"
    if ord(c) > 0x7F:
        return f"the character '{c}' (only plain ASCII is accepted)"
    return f"'{c}'"


def _sanitize(text: str) -> str:
    if not isinstance(text, str):
        raise UserInputError("A command must be text.")
    text = text.replace("\u00a0", " ")
    text = re.sub(r"(?<=[0-9])[\u2013\u2014](?=[0-9])", "..", text)
    text = re.sub(r"[\u2013\u2014](?=[A-Za-z])", "--", text)
    for c in text:
        if c not in _ALLOWED:
            if c == "?" and text.strip() in ("?", "help?"):
                continue
            raise UserInputError(f"That command contains {_describe_char(c)}. pitcrew never accepts shell "
                                 "characters, quotes, line breaks or NUL bytes in a command.")
    if len(text) > MAX_LEN:
        raise UserInputError(f"That command is too long (at most {MAX_LEN} characters).")
    return text


def _tokens(text: str) -> list[str]:
    text = re.sub(r"\s*,\s*", ",", text)
    text = re.sub(r"\s*=\s*", "=", text)
    text = re.sub(r"\s*\.\.\s*", "..", text)
    return text.split()


def parse(text: str) -> Command:
    """Parse one chat command. Raises `UserInputError` (or `UnknownCommand`) and nothing else."""
    if isinstance(text, str):
        text = _MENTION.sub("", text, count=1)
        text = _SLACK_LINK.sub(lambda m: m.group(2) or m.group(1), text)
    clean = _sanitize(text)
    if clean.strip() in ("?", "help?"):
        return Help()
    tokens = _tokens(clean)
    if not tokens:
        raise UserInputError("Say a command, or 'help' for the list.")
    return _parse_tokens(tokens)


def _parse_tokens(tokens: list[str]) -> Command:
    verb = tokens[0].lower()
    args = tokens[1:]
    if verb == "kill" and args and args[0].lower() == "stale":
        verb, args = "kill-stale", args[1:]
    cls = _VERBS.get(verb)
    if cls is None:
        raise _unknown(verb, tokens)
    if cls is Schedule:
        return _parse_schedule(verb, args)
    return _PARSERS[cls](args)


def _unknown(verb: str, tokens: list[str]) -> UnknownCommand:
    shown = verb[:40]
    if lookup_flag(verb.partition("=")[0]) is not None or NUM.fullmatch(verb):
        guess = "try " + " ".join(tokens)[:60]
        return UnknownCommand(f"I don't know the command '{shown}'. Did you mean '{guess}'?", suggestion=guess)
    words = [w for w in _VERBS if len(w) > 2]
    close = difflib.get_close_matches(verb, words, n=1, cutoff=0.6)
    if close:
        return UnknownCommand(f"I don't know the command '{shown}'. Did you mean '{close[0]}'?",
                              suggestion=close[0])
    return UnknownCommand(f"I don't know the command '{shown}'. Say 'help' for the list.")


# ---- small value parsers -------------------------------------------------------------------------

# ---- commands ---------------------------------------------------------------------------------

def _parse_try(args: list[str]) -> Try:
    levels, args = take_levels(args)
    host, args = take_host(split_commas(args), bool_guard=True)
    wanted = changes(pairs(args))
    if not wanted:
        raise UserInputError("Say what to try, e.g. 'try 10 steps' or 'try mem=0.85 on gpu-2'.")
    return Try(changes=wanted, host=host, concurrency=levels)


def _expand(fdef: FlagDef, spec: str) -> list[str]:
    values: list[str] = []
    for part in (p for p in spec.split(",") if p):
        if ".." in part:
            lo_s, _, hi_s = part.partition("..")
            if fdef.kind != "int" or not re.fullmatch(r"-?[0-9]{1,9}", lo_s) or not re.fullmatch(
                    r"-?[0-9]{1,9}", hi_s):
                raise UserInputError("A range like 1..5 works for whole-number flags only; "
                                     "list the values instead, e.g. 0.8,0.85,0.9.")
            lo, hi = int(lo_s), int(hi_s)
            if abs(hi - lo) + 1 > MAX_SWEEP_VALUES:
                raise UserInputError(f"A sweep tries at most {MAX_SWEEP_VALUES} values.")
            step = 1 if hi >= lo else -1
            values.extend(str(v) for v in range(lo, hi + step, step))
        else:
            values.append(part)
        if len(values) > MAX_SWEEP_VALUES:
            raise UserInputError(f"A sweep tries at most {MAX_SWEEP_VALUES} values.")
    return values


def _parse_sweep(args: list[str]) -> Sweep:
    levels, args = take_levels(args)
    host, args = take_host(args, bool_guard=True)
    args = [a for a in args if a.lower() not in ("from", "values", "over", "in", "with")]
    fdef: FlagDef | None = None
    spec_parts: list[str] = []
    for a in args:
        key, eq, value = a.partition("=")
        if eq and fdef is None:
            fdef = resolve_flag(key)
            spec_parts.append(value)
        elif fdef is None and is_flag_word(a):
            fdef = resolve_flag(a)
        elif a.lower() == "to" and spec_parts:
            spec_parts[-1] += ".."
        elif spec_parts and spec_parts[-1].endswith(".."):
            spec_parts[-1] += a
        else:
            spec_parts.append(a)
    if fdef is None:
        if spec_parts and not re.fullmatch(r"[0-9.,+-]+", spec_parts[0]):
            resolve_flag(spec_parts[0].partition("=")[0])
        raise UserInputError("Say which flag to sweep, e.g. 'sweep steps 1..5'.")
    raw = _expand(fdef, ",".join(spec_parts))
    values: list[str] = []
    for r in raw:
        v = parse_value(fdef, r)
        if v not in values:
            values.append(v)
    if len(values) < 2:
        raise UserInputError("A sweep needs at least two values; use 'try' for one.")
    return Sweep(flag=fdef.name, values=tuple(values), concurrency=levels, host=host)


def _parse_bench(args: list[str]) -> Bench:
    levels, args = take_levels(args)
    return Bench(concurrency=levels, host=only_host(args, "bench"))


def _parse_rollback(args: list[str]) -> Rollback:
    host, args = take_host(args)
    revision: int | None = None
    rest: list[str] = []
    i = 0
    while i < len(args):
        low = args[i].lower()
        if low in ("to", "revision", "rev"):
            i += 1
            continue
        if re.fullmatch(r"(?:r|rev|#)?[0-9]{1,10}", low):
            if revision is not None:
                raise UserInputError("Name one revision, e.g. 'rollback gpu-1 to 3'.")
            revision = int_arg(re.sub(r"^(?:r|rev)", "", low), "The revision number")
        else:
            rest.append(args[i])
        i += 1
    if rest:
        if host is not None or len(rest) > 1:
            raise UserInputError("Say it like 'rollback gpu-1 to 3'.")
        host = parse_host(rest[0])
    return Rollback(host=host, to_revision=revision)


def _parse_history(args: list[str]) -> History:
    host, args = take_host(args)
    n: int | None = None
    for a in args:
        if a.lower() in ("last", "of", "for"):
            continue
        if NUM.fullmatch(a):
            if n is not None:
                raise UserInputError("Say it like 'history gpu-1 20'.")
            n = int_arg(a, "The number of jobs", 1, 100)
        elif host is None:
            host = parse_host(a)
        else:
            raise UserInputError("Say it like 'history gpu-1 20'.")
    return History(host=host, n=n)


def _parse_logs(args: list[str]) -> Logs:
    host, args = take_host(args)
    incident: int | None = None
    n: int | None = None
    i = 0
    while i < len(args):
        low = args[i].lower()
        if low in ("incident", "inc") and i + 1 < len(args):
            incident = int_arg(args[i + 1], "The incident number")
            i += 2
            continue
        if low in ("last", "of", "for", "lines"):
            pass
        elif NUM.fullmatch(low):
            if n is not None:
                raise UserInputError("Say it like 'logs gpu-1 50' or 'logs incident 7'.")
            n = int_arg(low, "The number of lines", 1, 500)
        elif host is None:
            host = parse_host(args[i])
        else:
            raise UserInputError("Say it like 'logs gpu-1 50' or 'logs incident 7'.")
        i += 1
    if incident is not None and host is not None:
        raise UserInputError("Ask for a host's logs or an incident's, not both.")
    return Logs(host=host, incident_id=incident, n=n)


def _parse_kill_stale(args: list[str]) -> KillStale:
    host, args = take_host(args)
    pid: int | None = None
    for a in args:
        low = a.lower()
        if low in ("pid", "process"):
            continue
        if NUM.fullmatch(low) and pid is None:
            pid = int_arg(low, "The pid", 2, 4194304)
        elif host is None and not NUM.fullmatch(low):
            host = parse_host(a)
        else:
            raise UserInputError("Say it like 'kill-stale gpu-1 48213' (host, then the pid).")
    if pid is None:
        raise UserInputError("Say which process, e.g. 'kill-stale gpu-1 48213'.")
    return KillStale(host=host, pid=pid)


def _parse_mute(args: list[str]) -> Mute:
    args = [a for a in args if a.lower() not in ("incident", "inc")]
    if not args:
        raise UserInputError("Say which incident, e.g. 'mute 7 for 2h'.")
    incident = int_arg(args[0], "The incident number")
    rest = [a for a in args[1:] if a.lower() != "for"]
    minutes = parse_duration_minutes(rest) if rest else 60
    return Mute(incident_id=incident, minutes=minutes)


def _parse_again(args: list[str]) -> Again:
    args = [a for a in args if a.lower() not in FILLERS]
    if not args:
        return Again()
    if len(args) == 1 and "=" not in args[0] and not is_flag_word(args[0]):
        check_plain(args[0], "again")
        if len(args[0]) > 64:
            raise UserInputError("That value is too long.")
        return Again(value=args[0])
    return Again(changes=changes(pairs(split_commas(args))))


def _token(args: list[str], word: str) -> str | None:
    if not args:
        return None
    if len(args) > 1 or not _TOKEN_RE.fullmatch(args[0]):
        raise UserInputError(f"Say just '{word}', or '{word}' and the code pitcrew showed you.")
    return args[0]


def _parse_help(args: list[str]) -> Help:
    if not args:
        return Help()
    topic = args[0].lower()
    if len(args) > 1:
        raise UserInputError("Ask for help on one thing, e.g. 'help sweep'.")
    if topic in ("flags", "flag"):
        return Help(topic="flags")
    if topic in ("kill",):
        topic = "kill-stale"
    cls = _VERBS.get(topic)
    if cls is not None:
        return Help(topic=cls.verb)
    fdef = lookup_flag(topic)
    if fdef is not None:
        return Help(topic=fdef.name)
    words = [w for w in _VERBS if len(w) > 2] + ["flags"]
    close = difflib.get_close_matches(topic, words, n=1, cutoff=0.6)
    hint = f" Did you mean 'help {close[0]}'?" if close else " Say 'help' for the list."
    raise UserInputError(f"There is no help on '{topic[:40]}'.{hint}")


def _parse_schedule(verb: str, args: list[str]) -> Schedule:
    spec, rest = parse_schedule_spec(verb, args)
    if not rest:
        raise UserInputError("Say what to run, e.g. 'every day at 02:00 sweep steps 1..5 on gpu-1'.")
    command = _parse_tokens(rest)
    if not isinstance(command, SCHEDULABLE):
        raise UserInputError("Only try, sweep, bench and status can be scheduled.")
    return Schedule(cron=spec, command=command, command_text=render(command))


_PARSERS: dict[type[Command], Callable[[list[str]], Command]] = {
    Try: _parse_try,
    Sweep: _parse_sweep,
    Bench: _parse_bench,
    Status: lambda a: Status(host=only_host(a, "status")),
    Queue: lambda a: no_args(a, Queue()),
    Cancel: lambda a: Cancel(job_id=one_id(a, "job", "cancel 42", ("job",))),
    Rollback: _parse_rollback,
    Show: lambda a: Show(job_id=one_id(a, "job", "show 42", ("job",))),
    Compare: lambda a: _compare(a),
    History: _parse_history,
    Diff: lambda a: Diff(host=only_host(a, "diff")),
    Logs: _parse_logs,
    KillStale: _parse_kill_stale,
    Ack: lambda a: Ack(incident_id=one_id(a, "incident", "ack 7", ("incident", "inc"))),
    Mute: _parse_mute,
    Again: _parse_again,
    Schedules: lambda a: no_args(a, Schedules()),
    Unschedule: lambda a: Unschedule(schedule_id=one_id(a, "schedule", "unschedule 3", ("schedule",))),
    Confirm: lambda a: Confirm(token=_token(a, "yes")),
    Deny: lambda a: Deny(token=_token(a, "no")),
    Help: _parse_help,
}


def _compare(args: list[str]) -> Compare:
    ids = [a for a in args if a.lower() not in ("with", "vs", "and", "to", "job", "jobs", "versus")]
    if len(ids) != 2:
        raise UserInputError("Say which two jobs, e.g. 'compare 41 42'.")
    return Compare(a=int_arg(ids[0], "The job number"), b=int_arg(ids[1], "The job number"))
