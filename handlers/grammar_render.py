"""Canonical text of each command: what `handlers.grammar.parse` reads back as the same command.

Owns the one spelling pitcrew stores and shows (schedules' ``command_text``, the audit log's
canonical form, button commands): SGLang's canonical flag names with ``=``, ``on <host>``,
``c=1,4``. One function per command; each command's declaration names its own.
"""

from __future__ import annotations

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

__all__ = [
    "render_ack", "render_again", "render_bench", "render_cancel", "render_compare", "render_confirm",
    "render_deny", "render_diff", "render_help", "render_history", "render_kill_stale", "render_logs",
    "render_mute", "render_queue", "render_rollback", "render_schedule", "render_schedules", "render_show",
    "render_status", "render_sweep", "render_try", "render_tune", "render_unschedule",
]


def _opt(prefix: str, value: object | None) -> str:
    return "" if value is None else f" {prefix}{value}"


def _levels_text(levels: tuple[int, ...] | None) -> str:
    return "" if levels is None else " c=" + ",".join(str(c) for c in levels)


def render_try(cmd: Try) -> str:
    body = " ".join(f"{f}={v}" for f, v in cmd.changes)
    dry = " --dry-run" if cmd.dry_run else ""
    return f"try {body}{_levels_text(cmd.concurrency)}{_opt('on ', cmd.host)}{dry}"


def render_sweep(cmd: Sweep) -> str:
    return f"sweep {cmd.flag}={','.join(cmd.values)}{_levels_text(cmd.concurrency)}{_opt('on ', cmd.host)}"


def render_tune(cmd: Tune) -> str:
    if cmd.resume is not None:
        return f"tune resume {cmd.resume}{_opt('on ', cmd.host)}"
    knobs = " ".join(f"{flag}={','.join(values)}" for flag, values in cmd.knobs)
    limit = f" with ttft p95 under {cmd.ttft_p95_ms:g}ms" if cmd.ttft_p95_ms is not None else ""
    budget = f" in {cmd.budget} restarts" if cmd.budget is not None else ""
    return f"tune {knobs} for throughput at {cmd.concurrency}{limit}{budget}{_opt('on ', cmd.host)}"


def render_bench(cmd: Bench) -> str:
    return f"bench{_levels_text(cmd.concurrency)}{_opt('on ', cmd.host)}"


def render_status(cmd: Status) -> str:
    return f"status{_opt('on ', cmd.host)}"


def render_diff(cmd: Diff) -> str:
    return f"diff{_opt('on ', cmd.host)}"


def render_queue(cmd: Queue) -> str:
    return "queue"


def render_cancel(cmd: Cancel) -> str:
    return f"cancel {cmd.job_id}"


def render_show(cmd: Show) -> str:
    return f"show {cmd.job_id}"


def render_rollback(cmd: Rollback) -> str:
    return f"rollback{_opt('on ', cmd.host)}{_opt('to ', cmd.to_revision)}"


def render_compare(cmd: Compare) -> str:
    return f"compare {cmd.a} {cmd.b}"


def render_history(cmd: History) -> str:
    return f"history{_opt('on ', cmd.host)}{_opt('', cmd.n)}"


def render_logs(cmd: Logs) -> str:
    return f"logs{_opt('on ', cmd.host)}{_opt('incident ', cmd.incident_id)}{_opt('', cmd.n)}"


def render_kill_stale(cmd: KillStale) -> str:
    return f"kill-stale{_opt('on ', cmd.host)} {cmd.pid}"


def render_mute(cmd: Mute) -> str:
    return f"mute {cmd.incident_id} for {cmd.minutes}m"


def render_ack(cmd: Ack) -> str:
    return f"ack {cmd.incident_id}"


def render_again(cmd: Again) -> str:
    if cmd.value is not None:
        return f"again with {cmd.value}"
    return "again" + "".join(f" {f}={v}" for f, v in cmd.changes)


def render_confirm(cmd: Confirm) -> str:
    return f"yes{_opt('', cmd.token)}"


def render_deny(cmd: Deny) -> str:
    return f"no{_opt('', cmd.token)}"


def render_help(cmd: Help) -> str:
    return f"help{_opt('', cmd.topic)}"


def render_schedule(cmd: Schedule) -> str:
    return f"{cmd.cron.describe()} {cmd.command_text}"


def render_schedules(cmd: Schedules) -> str:
    return "schedules"


def render_unschedule(cmd: Unschedule) -> str:
    return f"unschedule {cmd.schedule_id}"
