"""The typed chat commands: one frozen dataclass per command, holding what its words said.

Owns the command values. Everything else about a command (its words, parser, canonical text,
role, confirmation, help and handler) is declared once on its handler (`handlers.spec.command`,
listed by `handlers.registry`). Flag names in commands are SGLang's canonical names
(``--speculative-num-steps``) and values are already checked and normalized by the flag schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Ack",
    "Again",
    "Bench",
    "Cancel",
    "Command",
    "Compare",
    "Confirm",
    "Deny",
    "Diff",
    "Doctor",
    "Health",
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
    "Tune",
    "Unschedule",
]

Changes = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Command:
    """Base of every command."""


@dataclass(frozen=True)
class Try(Command):
    """`try`: what it was told (its help is its handler's docstring)."""

    changes: Changes
    host: str | None = None
    concurrency: tuple[int, ...] | None = None
    dry_run: bool = False  # preflight and forecast only: nothing is queued, nothing on the host changes


@dataclass(frozen=True)
class Sweep(Command):
    """`sweep`: what it was told (its help is its handler's docstring)."""

    flag: str
    values: tuple[str, ...]
    concurrency: tuple[int, ...] | None = None
    host: str | None = None


@dataclass(frozen=True)
class Tune(Command):
    """`tune`: what it was told (its help is its handler's docstring)."""

    knobs: tuple[tuple[str, tuple[str, ...]], ...]  # canonical flag -> the values to choose from
    concurrency: int  # the goal: throughput at this concurrency
    ttft_p95_ms: float | None = None  # the constraint, when given
    budget: int | None = None  # restarts at most (None: the default share of the grid)
    host: str | None = None
    resume: int | None = None  # `tune resume <job>`: that tune's knobs and goal, its measured points kept


@dataclass(frozen=True)
class Bench(Command):
    """`bench`: what it was told (its help is its handler's docstring)."""

    concurrency: tuple[int, ...] | None = None
    host: str | None = None


@dataclass(frozen=True)
class Status(Command):
    """`status`: what it was told (its help is its handler's docstring)."""

    host: str | None = None


@dataclass(frozen=True)
class Health(Command):
    """`health`: the bot's own figures (its help is its handler's docstring)."""


@dataclass(frozen=True)
class Doctor(Command):
    """`doctor`: one host, or every host (its help is its handler's docstring)."""

    host: str | None = None


@dataclass(frozen=True)
class Queue(Command):
    """`queue`: what it was told (its help is its handler's docstring)."""


@dataclass(frozen=True)
class Cancel(Command):
    """`cancel`: what it was told (its help is its handler's docstring)."""

    job_id: int


@dataclass(frozen=True)
class Rollback(Command):
    """`rollback`: what it was told (its help is its handler's docstring)."""

    host: str | None = None
    to_revision: int | None = None


@dataclass(frozen=True)
class Show(Command):
    """`show`: what it was told (its help is its handler's docstring)."""

    job_id: int


@dataclass(frozen=True)
class Compare(Command):
    """`compare`: what it was told (its help is its handler's docstring)."""

    a: int
    b: int


@dataclass(frozen=True)
class History(Command):
    """`history`: what it was told (its help is its handler's docstring)."""

    host: str | None = None
    n: int | None = None


@dataclass(frozen=True)
class Diff(Command):
    """`diff`: what it was told (its help is its handler's docstring)."""

    host: str | None = None


@dataclass(frozen=True)
class Help(Command):
    """`help`: what it was told (its help is its handler's docstring)."""

    topic: str | None = None


@dataclass(frozen=True)
class Confirm(Command):
    """`yes`: what it was told (its help is its handler's docstring)."""

    token: str | None = None


@dataclass(frozen=True)
class Deny(Command):
    """`no`: what it was told (its help is its handler's docstring)."""

    token: str | None = None


@dataclass(frozen=True)
class KillStale(Command):
    """`kill-stale`: what it was told (its help is its handler's docstring)."""

    host: str | None
    pid: int


@dataclass(frozen=True)
class Mute(Command):
    """`mute`: what it was told (its help is its handler's docstring)."""

    incident_id: int
    minutes: int = 60


@dataclass(frozen=True)
class Ack(Command):
    """`ack`: what it was told (its help is its handler's docstring)."""

    incident_id: int


@dataclass(frozen=True)
class Logs(Command):
    """`logs`: what it was told (its help is its handler's docstring)."""

    host: str | None = None
    incident_id: int | None = None
    n: int | None = None


@dataclass(frozen=True)
class Again(Command):
    """`again`: what it was told (its help is its handler's docstring)."""

    changes: Changes = ()
    value: str | None = None  # "again with 12": the thread's flag, resolved by the router


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
    """`every`: what it was told (its help is its handler's docstring)."""

    cron: ScheduleSpec
    command: Command
    command_text: str  # the scheduled command as canonical text (what the schedules table stores)


@dataclass(frozen=True)
class Schedules(Command):
    """`schedules`: what it was told (its help is its handler's docstring)."""


@dataclass(frozen=True)
class Unschedule(Command):
    """`unschedule`: what it was told (its help is its handler's docstring)."""

    schedule_id: int
