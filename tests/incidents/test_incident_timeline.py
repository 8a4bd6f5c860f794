"""The incident timeline image posted after the resolution in the alert's thread."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from incidents_kit import RecordingOutbox
from test_incidents_lifecycle import failed_start, feed, monitor

from handlers.charts import incident_timeline_figure
from handlers.incident_view import IncidentNotifier
from services.events import EventBus
from services.incidents.types import IncidentResolved
from services.store.db import Database


async def test_resolution_in_the_thread_carries_the_incident_timeline(db: Database) -> None:
    bus = EventBus()
    m = monitor(db, bus)
    outbox = RecordingOutbox()
    notifier = IncidentNotifier(outbox, "C1", timeline=m.store.events)
    notifier.subscribe(bus)
    await feed(m, failed_start("t1", 1) + failed_start("t2", 2) + failed_start("t3", 3))
    (info,) = await m.open_incidents()
    await m.acknowledge(info.id, "bob")
    resolved = await m.store.resolve(info.id, "fixed by rollback to revision 4")
    assert resolved is not None
    await notifier.on_resolved(IncidentResolved(resolved, 42.0, "fixed by rollback to revision 4"))
    resolution, timeline = [s for s in outbox.thread(info.key) if s.key.startswith(f"{info.key}:")][-2:]
    assert resolution.key == f"{info.key}:resolved" and resolution.reply.text.startswith("Resolved after")
    assert timeline.key == f"{info.key}:timeline"  # posted after the resolution, which never waits for it
    (png,) = timeline.reply.attachments
    assert png.filename == f"incident-{info.id}-timeline.png" and png.content.startswith(b"\x89PNG")

    events = await m.store.events(info.id)
    kinds = [k for _, k, _ in events]
    assert kinds[0] == "opened" and "acknowledged" in kinds and kinds[-1] == "resolved"
    fig = incident_timeline_figure("incident", events)
    assert fig is not None
    (ax,) = fig.axes
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert {"opened", "restart", "acknowledged", "resolved"} <= set(labels)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["restart", "auto rollback", "muted", "acknowledged",
                                                            "resolved"]
    # the resolution is the last point on the time axis, and the open span ends there
    (resolved_line,) = [ln for ln in ax.get_lines() if ln.get_label() == "resolved"]
    assert resolved_line.get_xdata()[0] == max(ln.get_xdata()[0] for ln in ax.get_lines())


def test_timeline_places_events_in_seconds_since_opening() -> None:
    t0 = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
    events = [(t0, "opened", {}), (t0 + timedelta(seconds=5), "restart", {}),
              (t0 + timedelta(seconds=9), "auto_rollback", {}), (t0 + timedelta(seconds=70), "resolved", {})]
    fig = incident_timeline_figure("x", events)
    assert fig is not None
    (ax,) = fig.axes
    pts = {ln.get_label(): (ln.get_xdata()[0], ln.get_ydata()[0]) for ln in ax.get_lines()}
    assert pts["opened"] == (0.0, 0) and pts["restart"] == (5.0, 0) and pts["auto rollback"] == (9.0, 1)
    assert pts["resolved"] == (70.0, 4)
    assert any(p.get_label() == "open for 70 s" for p in ax.patches)
    assert incident_timeline_figure("x", []) is None
