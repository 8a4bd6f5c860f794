"""Incident lifecycle without a host: loop detection over recorded entries, one incident across a bot
restart, idempotent replays, mutes that expire and are audited, acknowledgements, and the chat view."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from incidents_kit import RecordingOutbox

from handlers.incident_view import IncidentNotifier, render_alert, render_logs
from services.errors import Conflict, NotFound, UserInputError
from services.events import EventBus
from services.hosts.contract import CommandResult, Host
from services.incidents.monitor import IncidentMonitor
from services.incidents.types import IncidentOpened, IncidentPolicy, IncidentUpdated
from services.journal import JournalGap
from services.journal.entries import JournalEntry, entry_from_obj
from services.store.audit import AuditActor, AuditLog, AuditQuery
from services.store.db import Database

UNIT = "sglang.service"
HOST = "gpu-2"
_seq = [0]


def entry(message: str, *, inv: str, manager: bool = False, t: float = 0.0, **extra: Any) -> JournalEntry:
    _seq[0] += 1
    now_us = int((datetime.now(UTC).timestamp() + t) * 1e6) + _seq[0]
    obj: dict[str, Any] = {"__CURSOR": f"s=x;i={_seq[0]:x}", "__REALTIME_TIMESTAMP": str(now_us),
                           "MESSAGE": message, **extra}
    if manager:
        obj.update({"_PID": "1", "SYSLOG_IDENTIFIER": "systemd", "UNIT": UNIT, "INVOCATION_ID": inv,
                    "_SYSTEMD_UNIT": "init.scope"})
    else:
        obj.update({"_PID": "4242", "SYSLOG_IDENTIFIER": "python3", "_SYSTEMD_UNIT": UNIT,
                    "_SYSTEMD_INVOCATION_ID": inv})
    e = entry_from_obj(obj)
    assert e is not None
    return e


def failed_start(inv: str, n: int, *, t: float = 0.0) -> list[JournalEntry]:
    """One failed start of invocation `inv`, logged `t` seconds from now."""
    return [
        entry("Started SGLang server (Qwen3.5-122B-A10B).", inv=inv, manager=True, JOB_TYPE="start", t=t),
        entry("[2026-11-29 14:02:11] Load weight end. elapsed=118.20 s, avail mem=9.10 GB", inv=inv, t=t),
        entry("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
              "Current value: self.server_args.mem_fraction_static=0.88", inv=inv, t=t),
        entry("Received sigquit from a child process. It usually means the child failed.", inv=inv, t=t),
        entry(f"{UNIT}: Main process exited, code=exited, status=1/FAILURE", inv=inv, manager=True, t=t),
        entry(f"{UNIT}: Failed with result 'exit-code'.", inv=inv, manager=True, t=t),
        entry(f"{UNIT}: Scheduled restart job, restart counter is at {n}.", inv=inv, manager=True, t=t),
    ]


def no_host(name: str) -> Host:
    raise NotFound(f"no host named {name!r}")


def monitor(db: Database, bus: EventBus, *, host: object = None, **policy: Any) -> IncidentMonitor:
    """A monitor of HOST's unit; without `host` the host cannot be reached (every lookup is NotFound)."""
    lookup = no_host if host is None else (lambda name: host)
    return IncidentMonitor(db, bus, lookup, policy=IncidentPolicy(**{"window_s": 600, **policy}))  # type: ignore[arg-type]


async def feed(m: IncidentMonitor, entries: list[JournalEntry]) -> None:
    for e in entries:
        await m.on_entry(HOST, UNIT, e)


def collect(bus: EventBus) -> list[object]:
    got: list[object] = []

    async def keep(ev: object) -> None:
        got.append(ev)

    bus.subscribe(IncidentOpened, keep)
    bus.subscribe(IncidentUpdated, keep)
    return got


async def test_second_failed_start_opens_one_incident_and_a_restarted_bot_keeps_it(db: Database) -> None:
    bus = EventBus()
    got = collect(bus)
    outbox = RecordingOutbox()
    IncidentNotifier(outbox, "C1").subscribe(bus)
    m1 = monitor(db, bus)
    await feed(m1, failed_start("inv-1", 1))
    assert got == [], "one failure is not a loop"
    await feed(m1, failed_start("inv-2", 2))
    (opened,) = got
    assert isinstance(opened, IncidentOpened)
    info = opened.incident
    assert info.restarts >= 2 and info.host == HOST and info.evidence
    # a replay of the same entries (a crash before the cursor flush) changes nothing
    await feed(m1, failed_start("inv-2", 2))
    assert len(got) == 1

    m2 = monitor(db, bus)  # the bot restarted: nothing in memory
    await feed(m2, failed_start("inv-3", 3))
    assert isinstance(got[-1], IncidentUpdated) and got[-1].incident.id == info.id
    await feed(m2, failed_start("inv-3", 3))
    assert len(got) == 2
    assert outbox.main_keys() == [f"incident:{info.id}"]
    assert [s.key for s in outbox.thread(f"incident:{info.id}")] == [f"incident:{info.id}:restart:3"]
    assert (await m2.open_incidents(HOST))[0].id == info.id
    lines = await m2.recent_lines(info.id, 5)
    assert len(lines) == 5 and "Scheduled restart job" in lines[-1]
    assert "Not enough memory" in render_logs(info, lines).code  # type: ignore[operator]


async def test_stop_jobs_and_own_actions_are_not_failures(db: Database) -> None:
    bus = EventBus()
    got = collect(bus)
    audit = AuditLog(db)
    m = IncidentMonitor(db, bus, no_host, audit=audit, policy=IncidentPolicy(own_action_window_s=30))
    for n, inv in enumerate(("a", "b", "c"), 1):
        await feed(m, [entry("Stopping SGLang server (Qwen3.5-122B-A10B)...", inv=inv, manager=True,
                             JOB_TYPE="restart"),
                       entry(f"{UNIT}: State 'stop-sigterm' timed out. Killing.", inv=inv, manager=True),
                       entry(f"{UNIT}: Main process exited, code=killed, status=9/KILL", inv=inv, manager=True),
                       entry(f"{UNIT}: Failed with result 'timeout'.", inv=inv, manager=True)])
        assert n and got == []
    await audit.record(None, actor=AuditActor("pitcrew", "pitcrew"), action="kill", host=HOST,
                       detail={"pid": 4242})
    await feed(m, failed_start("k1", 1) + failed_start("k2", 2))
    assert got == [], "failures right after pitcrew's own kill are expected"


async def test_failures_during_an_announced_restart_stay_ours_when_their_lines_arrive_after_it_ended(
        db: Database) -> None:
    # the follower reads a line seconds after it was written under load (or after a reconnect): what happened while
    # pitcrew's own restart was announced is pitcrew's, even when it is read after `clear_expected`; found as a second
    # incident of the seed loop on real systemd (session 9): the old configuration's last failure, read after the
    # rollback, judged against the rolled-back unit file
    bus = EventBus()
    got = collect(bus)
    m = monitor(db, bus)
    m.expect(HOST, "rollback", until=60)
    during = failed_start("r1", 1, t=-0.5) + failed_start("r2", 2, t=-0.5)  # logged while the notice held
    m.clear_expected(HOST)  # ... and read after it ended
    await feed(m, during)
    assert got == [], "failures that happened while the restart was announced are expected"
    await feed(m, failed_start("s1", 3, t=1.0) + failed_start("s2", 4, t=1.0))  # after it: the server's own
    assert len([e for e in got if isinstance(e, IncidentOpened)]) == 1


async def test_mute_expires_audited_and_acknowledge(db: Database) -> None:
    bus = EventBus()
    got = collect(bus)
    outbox = RecordingOutbox()
    IncidentNotifier(outbox, "C1").subscribe(bus)
    m = monitor(db, bus)
    await feed(m, failed_start("m1", 1) + failed_start("m2", 2))
    info = got[0].incident  # type: ignore[attr-defined]
    with pytest.raises(UserInputError):
        await m.mute(info.id, 0, "alice")
    muted = await m.mute(info.id, 60, AuditActor("U1", "alice"))
    assert muted.muted_until is not None and muted.muted(datetime.now(UTC))
    assert "Muted until" in render_alert(muted).text
    before = len(outbox.thread(info.key))
    await feed(m, failed_start("m3", 3))
    assert len(outbox.thread(info.key)) == before, "no thread reply while muted"
    assert "Restarts: *3*" in [s for s in outbox.sent if s.key == info.key][-1].reply.text
    # the mute runs out
    assert await m.store.unmute_expired(datetime.now(UTC) + timedelta(minutes=61))
    assert (await m.get(info.id)).muted_until is None
    acked = await m.acknowledge(info.id, "bob")
    assert acked.acknowledged_by == "bob" and acked.state == "acknowledged"
    assert "Acknowledged by bob" in render_alert(acked).text
    actions = [r.action for r in await AuditLog(db).query(AuditQuery(host=HOST))]
    assert actions == ["incident_open", "incident_mute", "incident_unmute", "incident_ack"]
    resolved = await m.store.resolve(info.id, "fixed by rollback to revision 4")
    assert resolved is not None and "rollback to revision 4" in render_alert(resolved).text
    with pytest.raises(Conflict):
        await m.mute(info.id, 60, "alice")
    with pytest.raises(NotFound):
        await m.get(999)


async def test_alert_message_has_cause_evidence_restarts_and_buttons(db: Database) -> None:
    bus = EventBus()
    got = collect(bus)
    m = monitor(db, bus)
    await feed(m, failed_start("r1", 1) + failed_start("r2", 2))
    info = got[0].incident  # type: ignore[attr-defined]
    reply = render_alert(info)
    assert info.cause in reply.text and "Restarts: *2*" in reply.text and reply.tone == "error"
    assert reply.code is not None and 1 <= len(reply.code.splitlines()) <= 5
    assert [b.label for b in reply.buttons] == ["Roll back", "Mute 1 h", "Show logs", "Acknowledge"]
    assert [b.command for b in reply.buttons] == [
        f"rollback {HOST}", f"mute {info.id} 60", f"logs incident {info.id}", f"ack {info.id}"]


async def test_a_journal_gap_before_the_loop_makes_the_diagnosis_partial(db: Database) -> None:
    """Issue 14: entries vacuumed while pitcrew was not reading: the alert says its diagnosis is partial."""
    bus = EventBus()
    got = collect(bus)
    m = monitor(db, bus)
    now = datetime.now(UTC)
    await bus.publish(JournalGap(HOST, UNIT, now - timedelta(minutes=12), now - timedelta(minutes=2), "vacuumed"))
    await feed(m, failed_start("g1", 1) + failed_start("g2", 2))
    opened = [e for e in got if isinstance(e, IncidentOpened)]
    assert len(opened) == 1
    assert "Partial: the journal could not be read" in opened[0].incident.summary
    assert "(vacuumed)" in opened[0].incident.summary


async def test_an_old_gap_does_not_mark_a_new_loop_partial(db: Database) -> None:
    bus = EventBus()
    got = collect(bus)
    m = monitor(db, bus)
    long_ago = datetime.now(UTC) - timedelta(days=2)
    await bus.publish(JournalGap(HOST, UNIT, long_ago - timedelta(minutes=10), long_ago, "rate-limited", 500))
    await feed(m, failed_start("h1", 1) + failed_start("h2", 2))
    opened = [e for e in got if isinstance(e, IncidentOpened)]
    assert len(opened) == 1 and "Partial" not in opened[0].incident.summary


class ActiveUnitHost:
    """A host whose unit reads `active` (between two crashes of a loop it does too); `on_show` runs while it answers."""

    def __init__(self) -> None:
        self.on_show: Callable[[], Awaitable[None]] | None = None

    async def run(self, argv: list[str], *, timeout: float | None = None, **_: Any) -> CommandResult:
        if argv[:2] == ["systemctl", "show"]:
            if self.on_show is not None:
                await self.on_show()
            return CommandResult(tuple(argv), 0, "ActiveState=active\nSubState=running\n", "", 0.0)
        return CommandResult(tuple(argv), 127, "", "not here", 0.0)


async def _stable_loop(db: Database, bus: EventBus) -> tuple[IncidentMonitor, ActiveUnitHost, int]:
    host = ActiveUnitHost()
    m = monitor(db, bus, host=host, stable_window_s=0.2)
    got = collect(bus)
    await feed(m, failed_start("q1", 1) + failed_start("q2", 2))
    (opened,) = [e for e in got if isinstance(e, IncidentOpened)]
    await asyncio.sleep(0.3)  # past the stable window: the unit has run that long without a failure
    return m, host, opened.incident.id


async def test_an_incident_is_not_resolved_while_a_job_of_its_host_is_queued_or_running(db: Database) -> None:
    """An automatic rollback queued behind a slow host, the loop's restarts further apart than the stable window: the
    unit reads `active` between two crashes, but the incident waits for the job, then names what it did."""
    bus = EventBus()
    m, _, incident = await _stable_loop(db, bus)
    busy = {HOST}

    async def host_busy(host: str) -> bool:
        return host in busy

    m.host_busy = host_busy
    await m.tick({HOST})
    assert (await m.get(incident)).state == "open", "resolved while pitcrew's job was still to act on the unit"
    busy.clear()
    await m.tick({HOST})
    done = await m.get(incident)
    assert done.state == "resolved" and done.resolution == "the unit recovered without a recorded change"


async def test_a_failure_counted_while_the_units_state_is_read_keeps_the_incident_open(db: Database) -> None:
    """The tick judged the incident stable from its last event, then read the unit's state over SSH; a restart counted
    meanwhile (the unit `active` again by the time it answered) means it was not stable: it stays open."""
    bus = EventBus()
    m, host, incident = await _stable_loop(db, bus)

    async def crash_meanwhile() -> None:
        host.on_show = None
        await feed(m, failed_start("q3", 3))

    host.on_show = crash_meanwhile
    await m.tick({HOST})
    info = await m.get(incident)
    assert info.state == "open" and info.restarts == 3, (info.state, info.resolution)
    await asyncio.sleep(0.3)
    await m.tick({HOST})  # stable since that restart: resolved now
    assert (await m.get(incident)).state == "resolved"


async def test_a_tick_while_the_loop_is_being_declared_does_not_resolve_it(db: Database) -> None:
    """The tick runs beside the failure's handling: the incident is in the database (open) while its opening is still
    being told and its automatic rollback asked for (the job is submitted by that event's subscriber). A tick then,
    its unit `active` between two crashes and the stable window short, must leave it open: under load the window
    between the incident's row and the rollback's job was 3.8 s, and the demo's incident was resolved in it as
    "recovered without a recorded change"."""
    bus = EventBus()
    m = monitor(db, bus, host=ActiveUnitHost(), stable_window_s=0.05)
    states: list[str] = []

    async def tick_meanwhile(ev: IncidentOpened) -> None:
        await asyncio.sleep(0.1)  # past the stable window since the incident's row was written
        await m.tick({HOST})
        states.append((await m.get(ev.incident.id)).state)

    bus.subscribe(IncidentOpened, tick_meanwhile)
    await feed(m, failed_start("d1", 1) + failed_start("d2", 2))
    assert states == ["open"]
    await m.tick({HOST})  # the failure handled, the unit still active and stable: resolved now
    assert [i.state for i in await m.store.active(host=HOST)] == []
