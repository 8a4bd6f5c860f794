"""The typed chat commands: one frozen dataclass per command, and the registry help is built from.

Owns the command vocabulary. Each class's docstring is its one-line help; ``usage`` and
``examples`` complete it. `parse` (in `handlers.grammar`) turns text into one of these; the router
dispatches on the type. Flag names in commands are SGLang's canonical names
(``--speculative-num-steps``) and values are already checked and normalized by the flag schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

__all__ = [
    "COMMANDS",
    "SCHEDULABLE",
    "Ack",
    "Again",
    "Bench",
    "Cancel",
    "Command",
    "CommandInfo",
    "Compare",
    "Confirm",
    "Deny",
    "Diff",
    "Help",
    "History",
    "KillStale",
    "Logs",
    "Mute",
    "Queue",
    "Rollback",
    "Schedule",
    "ScheduleSpec",
    "Schedules",
    "Show",
    "Status",
    "Sweep",
    "Try",
    "Unschedule",
]

Changes = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Command:
    """Base of every command."""

    verb: ClassVar[str] = ""
    usage: ClassVar[str] = ""
    examples: ClassVar[tuple[str, ...]] = ()


@dataclass(frozen=True)
class Try(Command):
    """Deploy a flag change, wait until the server is ready, benchmark it and compare with the previous run."""

    changes: Changes
    host: str | None = None
    concurrency: tuple[int, ...] | None = None

    verb: ClassVar[str] = "try"
    usage: ClassVar[str] = "try <flag> <value> [<flag>=<value> ...] [c=1,4,16] [on <host>]"
    examples: ClassVar[tuple[str, ...]] = ("try 10 steps", "try steps=10 mem=0.85 on gpu-2",
                                           "try --speculative-num-steps 10")


@dataclass(frozen=True)
class Sweep(Command):
    """Try several values of one flag in order, then post one summary table and a chart."""

    flag: str
    values: tuple[str, ...]
    concurrency: tuple[int, ...] | None = None
    host: str | None = None

    verb: ClassVar[str] = "sweep"
    usage: ClassVar[str] = "sweep <flag> <a>..<b> | <v1>,<v2>,... [c=1,8] [on <host>]"
    examples: ClassVar[tuple[str, ...]] = ("sweep steps 1..5", "sweep steps 1,2,4,8 c=1,8")


@dataclass(frozen=True)
class Bench(Command):
    """Benchmark the current configuration as it is (no deploy)."""

    concurrency: tuple[int, ...] | None = None
    host: str | None = None

    verb: ClassVar[str] = "bench"
    usage: ClassVar[str] = "bench [c=1,4,16] [on <host>]"
    examples: ClassVar[tuple[str, ...]] = ("bench", "bench c=1,4,16")


@dataclass(frozen=True)
class Status(Command):
    """Show a host's server state, current flags, running job and open incidents."""

    host: str | None = None

    verb: ClassVar[str] = "status"
    usage: ClassVar[str] = "status [host]"
    examples: ClassVar[tuple[str, ...]] = ("status", "status gpu-1")


@dataclass(frozen=True)
class Queue(Command):
    """List running and queued jobs with their positions."""

    verb: ClassVar[str] = "queue"
    usage: ClassVar[str] = "queue"
    examples: ClassVar[tuple[str, ...]] = ("queue",)


@dataclass(frozen=True)
class Cancel(Command):
    """Stop a job at its next safe point and restore the unit that was live before it."""

    job_id: int

    verb: ClassVar[str] = "cancel"
    usage: ClassVar[str] = "cancel <job>"
    examples: ClassVar[tuple[str, ...]] = ("cancel 42",)


@dataclass(frozen=True)
class Rollback(Command):
    """Restore the last known-good unit (or a named revision) through the careful stop/start path."""

    host: str | None = None
    to_revision: int | None = None

    verb: ClassVar[str] = "rollback"
    usage: ClassVar[str] = "rollback [host] [to <revision>]"
    examples: ClassVar[tuple[str, ...]] = ("rollback", "rollback gpu-1 to 3")


@dataclass(frozen=True)
class Show(Command):
    """Show a job: its steps, timings, flag diff and results."""

    job_id: int

    verb: ClassVar[str] = "show"
    usage: ClassVar[str] = "show <job>"
    examples: ClassVar[tuple[str, ...]] = ("show 42",)


@dataclass(frozen=True)
class Compare(Command):
    """Compare the results of two jobs side by side."""

    a: int
    b: int

    verb: ClassVar[str] = "compare"
    usage: ClassVar[str] = "compare <job> <job>"
    examples: ClassVar[tuple[str, ...]] = ("compare 41 42",)


@dataclass(frozen=True)
class History(Command):
    """List the last jobs on a host with their headline results."""

    host: str | None = None
    n: int | None = None

    verb: ClassVar[str] = "history"
    usage: ClassVar[str] = "history [host] [n]"
    examples: ClassVar[tuple[str, ...]] = ("history", "history gpu-1 20")


@dataclass(frozen=True)
class Diff(Command):
    """Show the flag diff between the host's live unit and its last known-good revision."""

    host: str | None = None

    verb: ClassVar[str] = "diff"
    usage: ClassVar[str] = "diff [host]"
    examples: ClassVar[tuple[str, ...]] = ("diff gpu-1",)


@dataclass(frozen=True)
class Help(Command):
    """Show the commands, one command's usage, or the flags pitcrew can change."""

    topic: str | None = None

    verb: ClassVar[str] = "help"
    usage: ClassVar[str] = "help [command | flags | <flag>]"
    examples: ClassVar[tuple[str, ...]] = ("help", "help sweep", "help flags")


@dataclass(frozen=True)
class Confirm(Command):
    """Confirm the action pitcrew asked about (a token picks one when several are pending)."""

    token: str | None = None

    verb: ClassVar[str] = "yes"
    usage: ClassVar[str] = "yes [token]"
    examples: ClassVar[tuple[str, ...]] = ("yes",)


@dataclass(frozen=True)
class Deny(Command):
    """Decline the action pitcrew asked about."""

    token: str | None = None

    verb: ClassVar[str] = "no"
    usage: ClassVar[str] = "no [token]"
    examples: ClassVar[tuple[str, ...]] = ("no",)


@dataclass(frozen=True)
class KillStale(Command):
    """Kill a leftover process that still holds GPU memory (confirmed and audited)."""

    host: str | None
    pid: int

    verb: ClassVar[str] = "kill-stale"
    usage: ClassVar[str] = "kill-stale [host] <pid>"
    examples: ClassVar[tuple[str, ...]] = ("kill-stale gpu-1 48213",)


@dataclass(frozen=True)
class Mute(Command):
    """Stop alerts for an incident for a while (default 60 minutes)."""

    incident_id: int
    minutes: int = 60

    verb: ClassVar[str] = "mute"
    usage: ClassVar[str] = "mute <incident> [for <30m | 2h | 1d>]"
    examples: ClassVar[tuple[str, ...]] = ("mute 7 for 2h",)


@dataclass(frozen=True)
class Ack(Command):
    """Acknowledge an incident: someone is on it."""

    incident_id: int

    verb: ClassVar[str] = "ack"
    usage: ClassVar[str] = "ack <incident>"
    examples: ClassVar[tuple[str, ...]] = ("ack 7",)


@dataclass(frozen=True)
class Logs(Command):
    """Show the last journal lines of a host, or the evidence of an incident."""

    host: str | None = None
    incident_id: int | None = None
    n: int | None = None

    verb: ClassVar[str] = "logs"
    usage: ClassVar[str] = "logs [host | incident <id>] [n]"
    examples: ClassVar[tuple[str, ...]] = ("logs gpu-1 50", "logs incident 7")


@dataclass(frozen=True)
class Again(Command):
    """In a job's thread: run it again, with a new value for the same flag or with other changes."""

    changes: Changes = ()
    value: str | None = None  # "again with 12": the thread's flag, resolved by the router

    verb: ClassVar[str] = "again"
    usage: ClassVar[str] = "again [with <value> | <flag> <value> ...]"
    examples: ClassVar[tuple[str, ...]] = ("again with 12", "again steps=6 mem=0.85")


@dataclass(frozen=True)
class ScheduleSpec:
    """When a schedule fires: a cron-like time of day (optionally on some weekdays) or an interval.

    Times are in the scheduler's time zone (UTC unless configured). ``day_of_week`` uses
    APScheduler's names (``mon``, ``mon-fri``); None means every day.
    """

    kind: Literal["cron", "interval"]
    hour: int | None = None
    minute: int | None = None
    day_of_week: str | None = None
    every_seconds: int | None = None

    def describe(self) -> str:
        """Canonical text, parseable again: ``every day at 02:00``, ``every mon at 09:30``, ``every 6h``."""
        if self.kind == "interval":
            secs = self.every_seconds or 0
            if secs % 86400 == 0:
                return f"every {secs // 86400}d"
            if secs % 3600 == 0:
                return f"every {secs // 3600}h"
            return f"every {secs // 60}m"
        when = "day" if self.day_of_week is None else self.day_of_week
        return f"every {when} at {self.hour or 0:02d}:{self.minute or 0:02d}"

    def cron_kwargs(self) -> dict[str, str | int]:
        """Arguments for APScheduler's ``CronTrigger`` (cron kind only)."""
        kwargs: dict[str, str | int] = {"hour": self.hour or 0, "minute": self.minute or 0}
        if self.day_of_week is not None:
            kwargs["day_of_week"] = self.day_of_week
        return kwargs


@dataclass(frozen=True)
class Schedule(Command):
    """Run try, sweep, bench or status on a schedule; missed runs are reported, not dropped."""

    cron: ScheduleSpec
    command: Command
    command_text: str = ""  # the scheduled command as canonical text (what the schedules table stores)

    verb: ClassVar[str] = "every"
    usage: ClassVar[str] = "every <day | monday | weekday | 6h | 30m> [at HH:MM] <command>"
    examples: ClassVar[tuple[str, ...]] = ("every day at 02:00 sweep steps 1..5 on gpu-1",
                                           "every monday at 09:30 bench on gpu-1", "every 6h bench")


@dataclass(frozen=True)
class Schedules(Command):
    """List the schedules with their next run."""

    verb: ClassVar[str] = "schedules"
    usage: ClassVar[str] = "schedules"
    examples: ClassVar[tuple[str, ...]] = ("schedules",)


@dataclass(frozen=True)
class Unschedule(Command):
    """Remove a schedule."""

    schedule_id: int

    verb: ClassVar[str] = "unschedule"
    usage: ClassVar[str] = "unschedule <schedule>"
    examples: ClassVar[tuple[str, ...]] = ("unschedule 3",)


@dataclass(frozen=True)
class CommandInfo:
    """One registry entry: the command class and the words that name it."""

    cls: type[Command]
    words: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.cls.verb

    @property
    def summary(self) -> str:
        doc = self.cls.__doc__ or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""


COMMANDS: tuple[CommandInfo, ...] = (
    CommandInfo(Try, ("try", "set")),
    CommandInfo(Sweep, ("sweep",)),
    CommandInfo(Bench, ("bench", "benchmark")),
    CommandInfo(Status, ("status",)),
    CommandInfo(Queue, ("queue", "jobs")),
    CommandInfo(Cancel, ("cancel", "abort")),
    CommandInfo(Rollback, ("rollback", "revert")),
    CommandInfo(Show, ("show",)),
    CommandInfo(Compare, ("compare",)),
    CommandInfo(History, ("history",)),
    CommandInfo(Diff, ("diff",)),
    CommandInfo(Logs, ("logs", "log", "journal")),
    CommandInfo(KillStale, ("kill-stale", "killstale")),
    CommandInfo(Ack, ("ack", "acknowledge")),
    CommandInfo(Mute, ("mute", "snooze")),
    CommandInfo(Again, ("again", "rerun")),
    CommandInfo(Schedule, ("every", "daily", "hourly")),
    CommandInfo(Schedules, ("schedules",)),
    CommandInfo(Unschedule, ("unschedule",)),
    CommandInfo(Confirm, ("yes", "y", "confirm", "ok")),
    CommandInfo(Deny, ("no", "n", "deny", "nope")),
    CommandInfo(Help, ("help", "?", "usage")),
)

SCHEDULABLE: tuple[type[Command], ...] = (Try, Sweep, Bench, Status)
