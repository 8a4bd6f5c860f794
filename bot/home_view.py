"""The App Home tab's Block Kit: the fleet at a glance, one section per host.

`render_home(statuses, now)` returns a ``home`` view (for ``views.publish``): a header, then per host
its engine and configuration label, unit state and restarts, running/queued jobs, open incidents with
their cause, and the last result with its noise band ("steps 4 · 277 tok/s (±2 %) at C=1"), and a
context line "updated HH:MM UTC". It stays within Slack's limits for Home views (at most 100 blocks,
section text at most 3,000 characters, header text at most 150): past `MAX_HOSTS_SHOWN` hosts the rest
are named in one line. Everything shown passes through `services.redact.redact`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bot.render import MAX_CONTEXT_TEXT, MAX_HEADER_TEXT, MAX_SECTION_TEXT, escape_mrkdwn
from services.redact import redact
from services.status import HostStatus, LastResult

MAX_VIEW_BLOCKS = 100  # Slack: "Max of 100 blocks" in a Home tab view
MAX_HOSTS_SHOWN = 45  # 2 blocks a host + header, intro, overflow line and the "updated" context
TITLE = "pitcrew — the fleet at a glance"
CAUSE_WORDS = 60  # characters of an incident's cause shown


def render_home(statuses: Sequence[HostStatus], now: datetime | None = None) -> dict[str, Any]:
    """The Home view for ``statuses`` (one per host, in the order given)."""
    now = now or datetime.now(UTC)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": TITLE[:MAX_HEADER_TEXT], "emoji": True}}]
    if not statuses:
        blocks.append(_section("No hosts are configured."))
    for s in statuses[:MAX_HOSTS_SHOWN]:
        blocks.append({"type": "divider"})
        blocks.append(_section(host_text(s)))
    rest = statuses[MAX_HOSTS_SHOWN:]
    if rest:
        blocks.extend(_overflow([s.host for s in rest], room=MAX_VIEW_BLOCKS - len(blocks) - 1))
    blocks.append(_context(f"updated {now.astimezone(UTC):%H:%M} UTC"))
    assert len(blocks) <= MAX_VIEW_BLOCKS
    return {"type": "home", "blocks": blocks}


def host_text(s: HostStatus) -> str:
    """The mrkdwn of one host's section."""
    head = f"*{escape_mrkdwn(s.host)}*"
    if s.state is not None:
        head += f" · {escape_mrkdwn(s.state.engine or 'engine ?')} · {escape_mrkdwn(s.state.config)}"
        running = s.state.active_state == "active" and s.state.sub_state == "running"
        icon = ":large_green_circle:" if running else ":red_circle:" if s.state.active_state == "failed" \
            else ":large_yellow_circle:"
        restarts = f"{s.state.restarts} restart" + ("" if s.state.restarts == 1 else "s")
        state = f"{icon} {s.state.active_state}/{s.state.sub_state} · {restarts}"
    else:
        state = f":black_circle: unreachable ({escape_mrkdwn(s.unreachable or '?')})"
    jobs = []
    if s.running_job:
        jobs.append(f"job {s.running_job} running")
    if s.queued_jobs:
        jobs.append(f"{s.queued_jobs} queued")
    if jobs:
        state += " · " + ", ".join(jobs)
    if s.incidents:
        incident = ":rotating_light: " + ", ".join(
            f"incident #{i.id}: {escape_mrkdwn(i.cause[:CAUSE_WORDS])}" for i in s.incidents[:5])
        if len(s.incidents) > 5:
            incident += f" and {len(s.incidents) - 5} more"
    else:
        incident = "no open incident"
    last = "last result: " + (result_text(s.last_result) if s.last_result else "none yet")
    return redact("\n".join((head, state, incident, last)))[:MAX_SECTION_TEXT]


def result_text(r: LastResult) -> str:
    """ "steps 4 · 277 tok/s (±2 %) at C=1 · run 12"; the band is half the 95 % interval, in % of the median."""
    parts = [escape_mrkdwn(r.label)]
    if not r.ok:
        parts.append("failed")
    if r.decode_tok_s is not None:
        figure = f"{r.decode_tok_s:.0f} tok/s"
        if r.decode_ci is not None and r.decode_tok_s > 0:
            band = (r.decode_ci[1] - r.decode_ci[0]) / 2 / r.decode_tok_s * 100
            figure += f" (±{band:.0f} %)" if band >= 1 else f" (±{band:.1f} %)"
        parts.append(f"{figure} at C={r.concurrency}")
    parts.append(f"run {r.run_id}")
    return " · ".join(parts)


def _overflow(hosts: list[str], *, room: int) -> list[dict[str, Any]]:
    """The hosts past `MAX_HOSTS_SHOWN`, named in context lines (as many as fit in ``room`` blocks)."""
    lines = [f"{len(hosts)} more hosts (`/pitcrew status` shows them all):"]
    for i, host in enumerate(hosts):
        name = escape_mrkdwn(host)[:200]
        if len(lines[-1]) + len(name) + 2 > MAX_CONTEXT_TEXT - 40:
            if len(lines) == room:
                lines[-1] += f" and {len(hosts) - i} more"
                break
            lines.append(name)
        else:
            lines[-1] += f" {name}" if lines[-1].endswith(":") else f", {name}"
    return [_context(line) for line in lines]


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:MAX_SECTION_TEXT]}}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": redact(text)[:MAX_CONTEXT_TEXT]}]}
