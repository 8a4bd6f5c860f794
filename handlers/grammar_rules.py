"""The parsers of the chat commands: one function per command, from its words to its typed `Command`.

Each takes a `Said` (the verb, the argument words, the grammar for nested commands and the
vocabulary) and returns its command or raises `UserInputError` with one or two plain sentences.
Flags and values go through the flag schemas of both engines (`services.units`; the unit's own engine
is applied when the job plans the change); hosts, ids, concurrency
levels, sweep sizes and durations are bounded by `handlers.grammar_args`. Each command's
declaration names its parser; `handlers.grammar` picks it by the first word.
"""

from __future__ import annotations

import difflib
import re

from handlers.commands import (
    Ack,
    Again,
    Bench,
    Cancel,
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
    Tune,
    Unschedule,
)
from handlers.grammar_args import (
    FILLERS,
    MAX_CONCURRENCY,
    MAX_SWEEP_VALUES,
    NUM,
    changes,
    int_arg,
    is_flag_word,
    join_phrases,
    no_args,
    one_id,
    only_host,
    pairs,
    parse_host,
    split_commas,
    take_host,
    take_levels,
)
from handlers.grammar_time import parse_duration_minutes, parse_schedule_spec
from handlers.spec import Said
from services.engines import FlagDef, check_plain, lookup_flag, parse_value, resolve_flag
from services.errors import UserInputError

_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


DRY_RUN_WORDS = frozenset({"--dry-run", "dry-run", "--check-only"})


def parse_try(said: Said) -> Try:
    args = said.args
    dry_run = any(a.lower() in DRY_RUN_WORDS for a in args)
    args = [a for a in args if a.lower() not in DRY_RUN_WORDS]
    levels, args = take_levels(args)
    host, args = take_host(split_commas(args), bool_guard=True)
    # unknown --long-flags and values not of the flag's type are kept for the engine's own parser (preview)
    wanted = changes(pairs(args, engine_flags=True), engine_values=True)
    if not wanted:
        raise UserInputError("Say what to try, e.g. 'try 10 steps' or 'try mem=0.85 on gpu-2'.")
    return Try(changes=wanted, host=host, concurrency=levels, dry_run=dry_run)


def _expand(fdef: FlagDef, spec: str, limit: int = MAX_SWEEP_VALUES, too_many: str = "A sweep tries") -> list[str]:
    values: list[str] = []
    for part in (p for p in spec.split(",") if p):
        if ".." in part:
            lo_s, _, hi_s = part.partition("..")
            if fdef.kind != "int" or not re.fullmatch(r"-?[0-9]{1,9}", lo_s) or not re.fullmatch(
                    r"-?[0-9]{1,9}", hi_s):
                raise UserInputError("A range like 1..5 works for whole-number flags only; "
                                     "list the values instead, e.g. 0.8,0.85,0.9.")
            lo, hi = int(lo_s), int(hi_s)
            if abs(hi - lo) + 1 > limit:
                raise UserInputError(f"{too_many} at most {limit} values.")
            step = 1 if hi >= lo else -1
            values.extend(str(v) for v in range(lo, hi + step, step))
        else:
            values.append(part)
        if len(values) > limit:
            raise UserInputError(f"{too_many} at most {limit} values.")
    return values


def parse_sweep(said: Said) -> Sweep:
    args = said.args
    levels, args = take_levels(args)
    host, args = take_host(args, bool_guard=True)
    args = join_phrases([a for a in args if a.lower() not in ("from", "values", "over", "in", "with")])
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


MAX_TUNE_KNOBS = 4
MAX_TUNE_VALUES = 64  # per knob
MAX_TUNE_GRID = 4096
TUNE_EXAMPLE = "'tune steps 1..8, mem 0.80,0.85,0.90 for throughput at 16 with ttft p95 under 500ms'"
_GOAL_RE = re.compile(r"throughput\s+at\s+(?:c\s*=\s*)?([0-9]{1,4})")
_TTFT_RE = re.compile(r"(?:with\s+|and\s+|,\s*)?ttft\s*(?:p95\s*)?(?:under|below|at\s+most|max)\s*"
                      r"([0-9]+(?:\.[0-9]+)?)\s*(ms|s)?(?![a-z0-9])")
_BUDGET_RE = re.compile(r"(?:in|within|budget)\s+([0-9]{1,4})(?:\s+restarts?)?")


def parse_tune(said: Said) -> Tune:
    """``tune <flag> <values>[, <flag> <values> ...] for throughput at <C> [with ttft p95 under <N>ms]
    [in <N> restarts] [on <host>]``; a flag's values are a range (``1..8``) or a list (``0.80,0.85``)."""
    host, args = take_host(said.args, bool_guard=True)
    lowered = [a.lower() for a in args]
    if lowered[:1] == ["resume"]:
        job = one_id(args[1:], "tune job to resume", "tune resume 12", ("job",))
        return Tune(knobs=(), concurrency=0, host=host, resume=job)
    if "for" not in lowered:
        raise UserInputError(f"Say what to tune for, e.g. {TUNE_EXAMPLE}.")
    cut = lowered.index("for")
    knobs = _tune_knobs(args[:cut])
    goal = " ".join(lowered[cut + 1:])
    m = _GOAL_RE.match(goal)
    if m is None:
        raise UserInputError(f"The goal is the throughput at one concurrency, e.g. 'for throughput at 16' "
                             f"(optionally 'with ttft p95 under 500ms'); I read '{goal[:60]}'.")
    concurrency = int_arg(m.group(1), "the goal's concurrency", 1, MAX_CONCURRENCY)
    rest = goal[m.end():].strip()
    limit: float | None = None
    budget: int | None = None
    if (t := _TTFT_RE.match(rest)) is not None:
        limit = float(t.group(1)) * (1000.0 if t.group(2) == "s" else 1.0)
        if not 0 < limit <= 600_000:
            raise UserInputError("The TTFT limit must be between 1 ms and 10 minutes.")
        rest = rest[t.end():].strip()
    elif "ttft" in rest:
        raise UserInputError("Say the TTFT limit as 'with ttft p95 under 500ms'.")
    if (b := _BUDGET_RE.match(rest)) is not None:
        budget = int_arg(b.group(1), "the restart budget", 1, MAX_TUNE_GRID)
        rest = rest[b.end():].strip()
    if rest:
        raise UserInputError(f"I did not understand '{rest[:60]}' in the goal; e.g. {TUNE_EXAMPLE}.")
    return Tune(knobs=knobs, concurrency=concurrency, ttft_p95_ms=limit, budget=budget, host=host)


def _tune_knobs(args: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    words = join_phrases([w for a in args for w in a.replace(",", ", ").split()
                          if w.lower() not in ("over", "values", "from")])
    specs: list[tuple[FlagDef, list[str]]] = []
    for w in words:
        word = w.rstrip(",")
        if not word:
            continue
        key, eq, value = word.partition("=")
        if eq:
            specs.append((resolve_flag(key), [value] if value else []))
        elif is_flag_word(word):
            specs.append((resolve_flag(word), []))
        elif not specs:
            if not re.fullmatch(r"[0-9.,+-]+", word):
                resolve_flag(word)  # "did you mean" for a misspelt flag
            raise UserInputError(f"Say which flags to tune, e.g. {TUNE_EXAMPLE}.")
        elif word.lower() == "to" and specs[-1][1]:
            specs[-1][1][-1] += ".."
        elif specs[-1][1] and specs[-1][1][-1].endswith(".."):
            specs[-1][1][-1] += word
        else:
            specs[-1][1].append(word)
    if not specs:
        raise UserInputError(f"Say which flags to tune, e.g. {TUNE_EXAMPLE}.")
    if len(specs) > MAX_TUNE_KNOBS:
        raise UserInputError(f"A tune searches at most {MAX_TUNE_KNOBS} flags at once.")
    out: list[tuple[str, tuple[str, ...]]] = []
    for fdef, parts in specs:
        if fdef.name in (f for f, _ in out):
            raise UserInputError(f"{fdef.short} is named twice; give all its values once, e.g. 'steps 1..8'.")
        out.append((fdef.name, _tune_values(fdef, parts)))
    grid = 1
    for _, values in out:
        grid *= len(values)
    if grid > MAX_TUNE_GRID:
        raise UserInputError(f"That grid has {grid:,} configurations; a tune searches at most {MAX_TUNE_GRID:,}.")
    return tuple(out)


def _tune_values(fdef: FlagDef, parts: list[str]) -> tuple[str, ...]:
    if not parts:
        raise UserInputError(f"Give the values of {fdef.short} to choose from, e.g. '{fdef.short} 1..8'.")
    values: list[str] = []
    for raw in _expand(fdef, ",".join(parts), MAX_TUNE_VALUES, "A tune chooses from"):
        v = parse_value(fdef, raw)
        if v not in values:
            values.append(v)
    if len(values) < 2:
        raise UserInputError(f"Give {fdef.short} at least two values to choose from (or set it with 'try').")
    return tuple(values)


def parse_bench(said: Said) -> Bench:
    args = said.args
    levels, args = take_levels(args)
    return Bench(concurrency=levels, host=only_host(args, "bench"))


def parse_rollback(said: Said) -> Rollback:
    args = said.args
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


def parse_history(said: Said) -> History:
    args = said.args
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


def parse_logs(said: Said) -> Logs:
    args = said.args
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


def parse_kill_stale(said: Said) -> KillStale:
    args = said.args
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


def parse_mute(said: Said) -> Mute:
    args = said.args
    args = [a for a in args if a.lower() not in ("incident", "inc")]
    if not args:
        raise UserInputError("Say which incident, e.g. 'mute 7 for 2h'.")
    incident = int_arg(args[0], "The incident number")
    rest = [a for a in args[1:] if a.lower() != "for"]
    minutes = parse_duration_minutes(rest) if rest else 60
    return Mute(incident_id=incident, minutes=minutes)


def parse_again(said: Said) -> Again:
    args = said.args
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


def parse_help(said: Said) -> Help:
    args = said.args
    if not args:
        return Help()
    topic = args[0].lower()
    if len(args) > 1:
        raise UserInputError("Ask for help on one thing, e.g. 'help sweep'.")
    if topic in ("flags", "flag"):
        return Help(topic="flags")
    if topic in ("kill",):
        topic = "kill-stale"
    spec = said.grammar.spec_for(topic)
    if spec is not None:
        return Help(topic=spec.name)
    fdef = lookup_flag(topic)
    if fdef is not None:
        return Help(topic=fdef.name)
    words = [w for w in said.grammar.words() if len(w) > 2] + ["flags"]
    close = difflib.get_close_matches(topic, words, n=1, cutoff=0.6)
    hint = f" Did you mean 'help {close[0]}'?" if close else " Say 'help' for the list."
    raise UserInputError(f"There is no help on '{topic[:40]}'.{hint}")


def parse_schedule(said: Said) -> Schedule:
    spec, rest = parse_schedule_spec(said.verb, said.args)
    if not rest:
        raise UserInputError("Say what to run, e.g. 'every day at 02:00 sweep steps 1..5 on gpu-1'.")
    command = said.grammar.parse_words(rest)
    if not said.grammar.spec_of(command).schedulable:
        raise UserInputError("Only try, sweep, bench and status can be scheduled.")
    return Schedule(cron=spec, command=command, command_text=said.grammar.render(command))


def parse_compare(said: Said) -> Compare:
    args = said.args
    ids = [a for a in args if a.lower() not in ("with", "vs", "and", "to", "job", "jobs", "versus")]
    if len(ids) != 2:
        raise UserInputError("Say which two jobs, e.g. 'compare 41 42'.")
    return Compare(a=int_arg(ids[0], "The job number"), b=int_arg(ids[1], "The job number"))


def parse_status(said: Said) -> Status:
    return Status(host=only_host(said.args, "status"))


def parse_diff(said: Said) -> Diff:
    return Diff(host=only_host(said.args, "diff"))


def parse_queue(said: Said) -> Queue:
    no_args(said.args, "queue")
    return Queue()


def parse_schedules(said: Said) -> Schedules:
    no_args(said.args, "schedules")
    return Schedules()


def parse_cancel(said: Said) -> Cancel:
    return Cancel(job_id=one_id(said.args, "job", "cancel 42", ("job",)))


def parse_show(said: Said) -> Show:
    return Show(job_id=one_id(said.args, "job", "show 42", ("job",)))


def parse_ack(said: Said) -> Ack:
    return Ack(incident_id=one_id(said.args, "incident", "ack 7", ("incident", "inc")))


def parse_unschedule(said: Said) -> Unschedule:
    return Unschedule(schedule_id=one_id(said.args, "schedule", "unschedule 3", ("schedule",)))


def parse_confirm(said: Said) -> Confirm:
    return Confirm(token=_token(said.args, "yes"))


def parse_deny(said: Said) -> Deny:
    return Deny(token=_token(said.args, "no"))
