"""Canonical text of a command: `render(cmd)` is what `handlers.grammar.parse` reads back as ``cmd``.

Owns the one spelling pitcrew stores and shows (schedules' ``command_text``, button commands):
SGLang's canonical flag names with ``=``, ``on <host>``, ``c=1,4``.
"""

from __future__ import annotations

from handlers.commands import (
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
    Rollback,
    Schedule,
    Show,
    Status,
    Sweep,
    Try,
    Unschedule,
)

__all__ = ["render"]


def _opt(prefix: str, value: object | None) -> str:
    return "" if value is None else f" {prefix}{value}"


def _levels_text(levels: tuple[int, ...] | None) -> str:
    return "" if levels is None else " c=" + ",".join(str(c) for c in levels)


def render(cmd: Command) -> str:
    """Canonical text for a command; ``parse(render(cmd)) == cmd``."""
    if isinstance(cmd, Try):
        body = " ".join(f"{f}={v}" for f, v in cmd.changes)
        return f"try {body}{_levels_text(cmd.concurrency)}{_opt('on ', cmd.host)}"
    if isinstance(cmd, Sweep):
        return f"sweep {cmd.flag}={','.join(cmd.values)}{_levels_text(cmd.concurrency)}{_opt('on ', cmd.host)}"
    if isinstance(cmd, Bench):
        return f"bench{_levels_text(cmd.concurrency)}{_opt('on ', cmd.host)}"
    if isinstance(cmd, Status | Diff):
        return f"{cmd.verb}{_opt('on ', cmd.host)}"
    if isinstance(cmd, Cancel | Show):
        return f"{cmd.verb} {cmd.job_id}"
    if isinstance(cmd, Rollback):
        return f"rollback{_opt('on ', cmd.host)}{_opt('to ', cmd.to_revision)}"
    if isinstance(cmd, Compare):
        return f"compare {cmd.a} {cmd.b}"
    if isinstance(cmd, History):
        return f"history{_opt('on ', cmd.host)}{_opt('', cmd.n)}"
    if isinstance(cmd, Logs):
        return f"logs{_opt('on ', cmd.host)}{_opt('incident ', cmd.incident_id)}{_opt('', cmd.n)}"
    if isinstance(cmd, KillStale):
        return f"kill-stale{_opt('on ', cmd.host)} {cmd.pid}"
    if isinstance(cmd, Mute):
        return f"mute {cmd.incident_id} for {cmd.minutes}m"
    if isinstance(cmd, Ack):
        return f"ack {cmd.incident_id}"
    if isinstance(cmd, Again):
        if cmd.value is not None:
            return f"again with {cmd.value}"
        return "again" + "".join(f" {f}={v}" for f, v in cmd.changes)
    if isinstance(cmd, Confirm | Deny):
        return f"{cmd.verb}{_opt('', cmd.token)}"
    if isinstance(cmd, Help):
        return f"help{_opt('', cmd.topic)}"
    if isinstance(cmd, Schedule):
        return f"{cmd.cron.describe()} {render(cmd.command)}"
    if isinstance(cmd, Unschedule):
        return f"unschedule {cmd.schedule_id}"
    return cmd.verb
