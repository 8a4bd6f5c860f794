"""Incident messages: the alert, its updates and thread follow-ups, the resolution, contact-loss alerts.

`IncidentNotifier(outbox, channel).subscribe(bus)` turns the incident monitor's events into chat
messages through the `Outbox`. The alert lives under the key ``incident:<id>``: the first send posts
it, every later send edits it (restart count, mute/ack state, resolution). Follow-ups go to its
thread under keys ``incident:<id>:...`` that are unique per event, so a replay never posts twice.
While an incident is muted the alert is still edited (no notification) but no thread reply is
posted. Host contact alerts live under ``contact:<host>``, reboots under ``reboot:<host>:<boot id>`` and
journal gaps under ``gap:<host>:<unit>:<reason>:<until>`` (one message each, also after a replay).

The `render_*` functions are pure and also serve the router (``logs incident <id>``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from handlers.charts import incident_timeline_png
from handlers.contract import Attachment, Button, Outbox, Reply, Tone
from services.events import EventBus
from services.incidents import (
    RESOLVED,
    AutoRollbackRequested,
    IncidentAcknowledged,
    IncidentInfo,
    IncidentMuted,
    IncidentOpened,
    IncidentResolved,
    IncidentUnmuted,
    IncidentUpdated,
)
from services.journal import HostContactLost, HostContactRestored, HostRebooted, JournalGap

CAUSE_TITLES = {
    "kv_cache_oom": "too little memory for the KV cache at start",
    "cuda_oom_runtime": "CUDA out of memory while serving",
    "cuda_graph_capture_oom": "out of memory while capturing CUDA graphs",
    "stop_timeout_sigkill": "killed after the stop timeout (not a crash)",
    "operator_action": "stopped or restarted deliberately",
    "gpu_memory_held_by_stale_process": "GPU memory held by a stale process",
    "port_in_use": "the server port is already in use",
    "bad_argument": "a command-line argument is rejected",
    "model_load_failure": "the model could not be loaded",
    "nccl_failure": "NCCL failure",
    "gpu_hardware_xid": "GPU hardware error (Xid)",
    "segfault": "native crash (segfault/abort)",
    "engine_exception": "exception in the serving engine",
    "host_oom_kill": "killed by the Linux OOM killer",
    "unknown": "cause not determined",
}


def _hhmm(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%H:%M UTC") if at else "?"


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def incident_buttons(info: IncidentInfo) -> tuple[Button, ...]:
    if info.state == RESOLVED:
        return (Button("Show logs", f"logs incident {info.id}"),)
    return (Button("Roll back", f"rollback {info.host}", "danger"),
            Button("Mute 1 h", f"mute {info.id} 60"),
            Button("Show logs", f"logs incident {info.id}"),
            Button("Acknowledge", f"ack {info.id}", "primary"))


def render_alert(info: IncidentInfo, *, now: datetime | None = None) -> Reply:
    """The incident's main message (posted once, then edited in place)."""
    now = now or datetime.now(UTC)
    title = CAUSE_TITLES.get(info.cause, info.cause)
    tone: Tone
    if info.state == RESOLVED:
        head = f":white_check_mark: *Resolved: restart loop on {info.host}* (`{info.unit}`): *{info.cause}*"
        tone = "success"
    else:
        head = f":rotating_light: *Restart loop on {info.host}* (`{info.unit}`): *{info.cause}* — {title}"
        tone = "error"
    lines = [head, info.summary]
    lines.append(f"Restarts: *{info.restarts}* · since {_hhmm(info.opened_at)} · "
                 f"confidence {info.confidence:.0%} · incident #{info.id}")
    if info.ran_before:
        lines.append(f"Before it died, {info.ran_before}.")
    if info.config_change:
        lines.append(f"Suspected change: {info.config_change}")
    if info.stale_pids:
        lines.append("Stale GPU holder pid(s): " + ", ".join(str(p) for p in info.stale_pids))
    if info.recommendation and info.state != RESOLVED:
        lines.append(f"Recommended: {info.recommendation}")
    if info.auto_rollback and info.state != RESOLVED:
        lines.append("Rolling back automatically (policy `auto_rollback`).")
    if info.acknowledged_by:
        lines.append(f"Acknowledged by {info.acknowledged_by}.")
    if info.muted(now):
        lines.append(f"Muted until {_hhmm(info.muted_until)}.")
    if info.state == RESOLVED:
        dur = (info.resolved_at or now) - info.opened_at
        lines.append(f"Resolved at {_hhmm(info.resolved_at)} after {_duration(dur.total_seconds())}: "
                     f"{info.resolution}.")
    code = "\n".join(info.evidence[:5]) or None
    return Reply(text="\n".join(x for x in lines if x), code=code, buttons=incident_buttons(info),
                 tone=tone)


def render_restart(info: IncidentInfo, restarts: int, line: str) -> Reply:
    return Reply(text=f"Restarted again on {info.host}: {restarts} restarts so far.", code=line or None,
                 tone="warning")


def render_resolution(info: IncidentInfo, duration_s: float, fixed_by: str) -> Reply:
    return Reply(text=f"Resolved after {_duration(duration_s)} ({info.restarts} restarts): {fixed_by}. "
                      f"`{info.unit}` on {info.host} has run without a restart since.", tone="success")


def render_logs(info_or_host: IncidentInfo | str, lines: Sequence[str]) -> Reply:
    """The answer to ``logs incident <id>`` (or logs of a host)."""
    what = (f"incident #{info_or_host.id} ({info_or_host.host}, `{info_or_host.unit}`)"
            if isinstance(info_or_host, IncidentInfo) else info_or_host)
    if not lines:
        return Reply(text=f"No journal lines of {what} are available.", tone="warning")
    return Reply(text=f"Last {len(lines)} journal lines of {what}:", code="\n".join(lines)[-3500:])


Timeline = Callable[[int], Awaitable[list[tuple[datetime, str, dict[str, Any]]]]]


class IncidentNotifier:
    """Sends incident and host-contact messages through the outbox."""

    def __init__(self, outbox: Outbox, channel: str, *, timeline: Timeline | None = None) -> None:
        self.outbox = outbox
        self.channel = channel
        self.timeline = timeline  # an incident's events, for the timeline image posted with its resolution

    def subscribe(self, bus: EventBus) -> None:
        bus.subscribe(IncidentOpened, self.on_opened)
        bus.subscribe(IncidentUpdated, self.on_updated)
        bus.subscribe(IncidentResolved, self.on_resolved)
        bus.subscribe(IncidentMuted, self.on_muted)
        bus.subscribe(IncidentUnmuted, self.on_unmuted)
        bus.subscribe(IncidentAcknowledged, self.on_acknowledged)
        bus.subscribe(AutoRollbackRequested, self.on_auto_rollback)
        bus.subscribe(HostContactLost, self.on_contact_lost)
        bus.subscribe(HostContactRestored, self.on_contact_restored)
        bus.subscribe(HostRebooted, self.on_rebooted)
        bus.subscribe(JournalGap, self.on_journal_gap)

    async def _main(self, info: IncidentInfo) -> None:
        await self.outbox.send(info.key, render_alert(info), channel=self.channel)

    async def _thread(self, info: IncidentInfo, suffix: str, reply: Reply) -> None:
        await self.outbox.send(f"{info.key}:{suffix}", reply, channel=self.channel, thread_of=info.key)

    async def on_opened(self, ev: IncidentOpened) -> None:
        await self._main(ev.incident)

    async def on_updated(self, ev: IncidentUpdated) -> None:
        await self._main(ev.incident)
        if not ev.incident.muted(datetime.now(UTC)):
            await self._thread(ev.incident, f"restart:{ev.seq}", render_restart(ev.incident, ev.restarts, ev.line))

    async def on_resolved(self, ev: IncidentResolved) -> None:
        await self._main(ev.incident)
        await self._thread(ev.incident, "resolved", render_resolution(ev.incident, ev.duration_s, ev.fixed_by))
        if self.timeline is not None:  # after the resolution, which must not wait for the drawing
            info = ev.incident
            title = f"incident #{info.id}: {CAUSE_TITLES.get(info.cause, info.cause)} on {info.host}"
            png = await incident_timeline_png(title, await self.timeline(info.id))
            if png:
                await self._thread(info, "timeline", Reply(
                    text=f"Timeline of incident #{info.id}, from the first failed start to the resolution.",
                    tone="info", attachments=(Attachment(f"incident-{info.id}-timeline.png", png,
                                                         "incident timeline", "image/png"),)))

    async def on_muted(self, ev: IncidentMuted) -> None:
        await self._main(ev.incident)
        await self._thread(ev.incident, f"muted:{int(ev.until.timestamp())}",
                           Reply(text=f"Muted by {ev.actor} until {_hhmm(ev.until)}.", tone="info"))

    async def on_unmuted(self, ev: IncidentUnmuted) -> None:
        await self._main(ev.incident)

    async def on_acknowledged(self, ev: IncidentAcknowledged) -> None:
        await self._main(ev.incident)
        await self._thread(ev.incident, "ack", Reply(text=f"Acknowledged by {ev.actor}.", tone="info"))

    async def on_auto_rollback(self, ev: AutoRollbackRequested) -> None:
        key = f"incident:{ev.incident_id}"
        await self.outbox.send(f"{key}:auto-rollback", Reply(
            text=f"The loop began soon after pitcrew's deploy at {_hhmm(ev.deploy_at)} ({ev.deploy_detail}); "
                 f"rolling back {ev.host} automatically (policy `auto_rollback`).", tone="warning"),
            channel=self.channel, thread_of=key)

    async def on_contact_lost(self, ev: HostContactLost) -> None:
        await self.outbox.send(f"contact:{ev.host}", Reply(
            text=f":warning: Lost contact with {ev.host} since {_hhmm(ev.since)}: {ev.error}", tone="error"),
            channel=self.channel)

    async def on_contact_restored(self, ev: HostContactRestored) -> None:
        dur = (ev.restored_at - ev.since).total_seconds()
        await self.outbox.send(f"contact:{ev.host}", Reply(
            text=f"Contact with {ev.host} restored at {_hhmm(ev.restored_at)} (lost since {_hhmm(ev.since)}, "
                 f"{_duration(dur)}).", tone="success"), channel=self.channel)

    async def on_rebooted(self, ev: HostRebooted) -> None:
        await self.outbox.send(f"reboot:{ev.host}:{ev.boot}", render_reboot(ev), channel=self.channel)

    async def on_journal_gap(self, ev: JournalGap) -> None:
        key = f"gap:{ev.host}:{ev.unit}:{ev.reason}:{int(ev.until.timestamp() * 1e6)}"
        await self.outbox.send(key, render_gap(ev), channel=self.channel)


def render_reboot(ev: HostRebooted) -> Reply:
    """The chat message of a host reboot seen in the unit's journal."""
    before = f" (last entry of the previous boot at {_hhmm(ev.last_before)})" if ev.last_before else ""
    return Reply(text=f":arrows_counterclockwise: {ev.host} rebooted: `{ev.unit}`'s journal continues in a new "
                      f"boot from {_hhmm(ev.first_after)}{before}.", tone="warning")


def render_gap(ev: JournalGap) -> Reply:
    """The chat message naming an interval of the unit's journal that could not be read."""
    span = f"{_hhmm(ev.since)[:-4]}–{_hhmm(ev.until)}" if ev.since else f"before {_hhmm(ev.until)}"
    if ev.reason == "rate-limited":
        return Reply(text=f":warning: journald suppressed {ev.dropped} messages of `{ev.unit}` on {ev.host} "
                          f"(rate limit), {span}: a diagnosis of that window is partial.", tone="warning")
    amount = f"{_duration(ev.seconds)} of " if ev.seconds is not None else "part of "
    return Reply(text=f":warning: Could not read {amount}the journal of `{ev.unit}` on {ev.host}: {span} "
                      "(deleted from the host before pitcrew read it). A diagnosis of that window is partial.",
                 tone="warning")
