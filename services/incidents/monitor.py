"""Live restart-loop detection over followed journals, and the incident lifecycle around it.

`IncidentMonitor.on_entry(host, unit, entry)` is the journal follower's callback. Every entry goes
into a per-(host, unit) ring of recent lines; systemd's own messages are classified
(`services.journal.systemd.classify`). A failed start (a failing main-process exit, ``Failed with
result``, ``Start request repeated too quickly``, an OOM kill, a scheduled auto-restart) is counted
once per invocation, unless pitcrew caused it:

- the invocation was being stopped by a stop/restart job (systemd logged ``Stopping ...`` for it:
  deploys, rollbacks and stops all go through one; a crash never does);
- an expected-restart notice covers it (`expect(host, kind, until=...)`, from the experiment pipeline);
- pitcrew's audit log has a ``stop``/``restart``/``kill`` on that host within `own_action_window_s`.

Expected failures are kept as evidence but never alert. A loop is declared by
`services.diagnosis.verdict.detect_restart_loop` (default: the 2nd failed start within 600 s). Then the side
evidence is gathered over SSH (`services.diagnosis.gather`), the unit's last lines are read again from the host
(journald orders a crash's last output by when it read it, which can be after systemd's failure lines, and the
follower waits while a loop is declared: `with_unread`), the audit actions of the window are added,
`services.diagnosis.verdict.diagnose` names the cause, and `IncidentStore.record_failure` opens or updates
ONE incident per (host, unit, cause, config hash); events are published on the bus. Later failures
update it (`IncidentUpdated`). `run()` ticks: expired mutes are cleared, and an incident whose unit
has run `stable_window_s` without a failure and is active again is resolved with what fixed it — not while a
failure of its unit is being handled (an automatic rollback is asked for then, and its job submitted), nor while
pitcrew has a job on its host (`host_busy`), nor when a failure was counted while its state was read.
With policy ``auto_rollback`` and a loop that began within `auto_rollback_within_s` of pitcrew's own
deploy, `AutoRollbackRequested` is published once (the experiment service performs the rollback).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from services.diagnosis import (
    SideEvidence,
    config_hash,
    detect_restart_loop,
    diagnose,
    gather_side_evidence,
    without_own_gpu_apps,
)
from services.errors import HostError, NotFound
from services.events import EventBus
from services.hosts import Host
from services.incidents.store import NOT_A_CRASH, IncidentStore
from services.incidents.tracking import (
    Notice,
    Track,
    describe_action,
    duration_s,
    format_line,
    gaps_text,
    is_failure,
    revision_of,
)
from services.incidents.types import (
    AutoRollbackRequested,
    IncidentAcknowledged,
    IncidentInfo,
    IncidentMuted,
    IncidentOpened,
    IncidentPolicy,
    IncidentResolved,
    IncidentUnmuted,
    IncidentUpdated,
)
from services.journal import JournalEntry, JournalGap, SystemdEvent, classify, parse_entry
from services.redact import redact
from services.store import AuditActor, AuditLog, AuditQuery, AuditRecord, Database, utcnow

log = logging.getLogger("pitcrew.incidents")

OWN_ACTIONS = ("stop", "restart", "kill")
# the unit's last lines read from the host when a loop is declared (a failed SGLang start logs ~60-80)
UNREAD_LINES = 300
HostLookup = Callable[[str], Host]


class IncidentMonitor:
    """Consumes journal entries per host, declares loops, and runs the incident lifecycle."""

    def __init__(self, db: Database, bus: EventBus, hosts: HostLookup, *, audit: AuditLog | None = None,
                 policy: IncidentPolicy | None = None) -> None:
        self.db = db
        self.bus = bus
        self.policy = policy or IncidentPolicy()
        self.audit = audit or AuditLog(db)
        self.store = IncidentStore(db, self.audit)
        self._hosts = hosts
        self._tracks: dict[tuple[str, str], Track] = {}
        self._notices: dict[str, list[Notice]] = {}
        self._resolving: set[int] = set()
        # whether pitcrew has a job queued or running on a host (set by the composition root, which builds the job
        # runner after this): an incident of such a host is not resolved until the job is done. Under the job the
        # unit's state is the job's doing (a unit between two crashes of its loop is `active` too), and what fixed it
        # is the job's to say: an automatic rollback still queued behind a slow host, its loop's restarts further
        # apart than the stable window, was once resolved as "recovered without a recorded change".
        self.host_busy: Callable[[str], Awaitable[bool]] | None = None
        bus.subscribe(JournalGap, self.on_gap)

    # -- feeding ----------------------------------------------------------------------------------

    def on_entry_for(self, host: str, unit: str) -> Callable[[JournalEntry], Awaitable[None]]:
        """The `on_entry` callback for a `JournalFollower` of (host, unit)."""
        async def on_entry(entry: JournalEntry) -> None:
            await self.on_entry(host, unit, entry)
        return on_entry

    async def on_gap(self, gap: JournalGap) -> None:
        """A stretch of the unit's journal that could not be read: a diagnosis over it is marked partial."""
        gaps = self._track(gap.host, gap.unit).gaps
        gaps.append(gap)
        del gaps[:-20]

    def _track(self, host: str, unit: str) -> Track:
        key = (host, unit)
        track = self._tracks.get(key)
        if track is None:
            track = self._tracks[key] = Track(deque(maxlen=self.policy.lines_kept))
        return track

    async def on_entry(self, host: str, unit: str, entry: JournalEntry) -> None:
        track = self._track(host, unit)
        track.lines.append(entry)
        ev = classify(entry, unit)
        if ev is None:
            return
        track.events.append(ev)
        if ev.restart_counter is not None:
            track.counter = ev.restart_counter
        if ev.kind == "stopping" and ev.invocation_id:
            track.stopping.add(ev.invocation_id)
        if not is_failure(ev):
            return
        inv = ev.invocation_id or f"t{ev.realtime_us // 10_000_000}"
        if inv in track.handled:
            return
        track.handled.add(inv)
        async with track.lock:
            await self._on_failure(host, unit, track, ev, inv)

    def expect(self, host: str, kind: str, *, until: datetime | float) -> None:
        """Announce that failures of `host`'s unit until `until` (a time, or seconds from now) are ours."""
        when = until if isinstance(until, datetime) else datetime.now(UTC) + timedelta(seconds=until)
        now = datetime.now(UTC)
        notices = [n for n in self._notices.get(host, []) if n.until > now]
        notices.append(Notice(kind, when))
        self._notices[host] = notices

    def clear_expected(self, host: str) -> None:
        """pitcrew's own action on `host` is over: failures from now on are the server's own. A failure that happened
        before now stays pitcrew's when its line is read later (the follower reads seconds late under load, or after
        a reconnect): the notices end now rather than vanish (`expect` drops them once they have ended)."""
        now = datetime.now(UTC)
        self._notices[host] = [replace(n, until=min(n.until, now)) for n in self._notices.get(host, [])]

    async def _expected_reason(self, host: str, inv: str, track: Track, ev: SystemdEvent) -> str | None:
        if inv in track.stopping:
            return "a stop or restart job"
        at = datetime.fromtimestamp(ev.realtime_us / 1e6, UTC) if ev.realtime_us else datetime.now(UTC)
        for n in self._notices.get(host, []):
            if n.until >= at:
                return f"an announced {n.kind}"
        since = at - timedelta(seconds=self.policy.own_action_window_s)
        recs = await self.audit.query(AuditQuery(host=host, since=since, actions=OWN_ACTIONS, limit=5))
        if recs:
            return f"pitcrew's own {recs[-1].action}"
        return None

    # -- loops --------------------------------------------------------------------------------------

    async def _on_failure(self, host: str, unit: str, track: Track, ev: SystemdEvent, inv: str) -> None:
        reason = await self._expected_reason(host, inv, track, ev)
        if reason is not None:
            track.expected.add(inv)
            log.info("%s %s: failure of invocation %s expected (%s)", host, unit, inv, reason)
            return
        horizon = ev.realtime_us - int(self.policy.window_s * 1e6)
        events = [e for e in track.events if e.realtime_us >= horizon]
        loop = detect_restart_loop(events, threshold=self.policy.threshold, window_s=self.policy.window_s,
                                   expected_invocations=set(track.expected.items()))
        active = [i for i in await self.store.active(host=host) if i.unit == unit]
        if active and await self._update(host, unit, track, ev, inv, active):
            return
        if not loop.looping:
            return
        await self._declare(host, unit, track, ev, inv, loop.failures, loop.first_failure_us)

    async def _update(self, host: str, unit: str, track: Track, ev: SystemdEvent, inv: str,
                      active: list[IncidentInfo]) -> bool:
        """Count a failure against the active incident of the same configuration (no new diagnosis:
        the cause of a loop does not flap between restarts); False when the configuration changed."""
        unit_file = await self._unit_file(host, unit)
        chash = config_hash(unit_file)
        match = next((i for i in reversed(active) if i.config_hash == chash or not chash), None)
        if match is None:
            return False
        rec = await self.store.add_restart(match.id, invocation=inv, line=ev.message,
                                           restarts=track.counter)
        if rec.outcome == "updated":
            await self.bus.publish(IncidentUpdated(rec.incident, rec.incident.restarts, redact(ev.message),
                                                   rec.incident.restarts))
        return True

    async def _unit_file(self, host: str, unit: str) -> str | None:
        try:
            res = await self._hosts(host).run(["systemctl", "cat", unit], timeout=self.policy.evidence_timeout_s)
        except (HostError, NotFound):
            return None
        return res.stdout if res.ok else None

    async def _declare(self, host: str, unit: str, track: Track, ev: SystemdEvent, inv: str,
                       failures: int, first_failure_us: int | None) -> None:
        try:
            host_obj: Host | None = self._hosts(host)
        except NotFound:
            host_obj = None
        evidence: dict[str, Any] = {}
        lines = list(track.lines)
        if host_obj is not None:
            evidence = await gather_side_evidence(host_obj, unit, timeout_s=self.policy.evidence_timeout_s)
            if set(evidence) != {"errors"}:  # the host answers: its journal holds what the follower has not read
                lines = with_unread(lines, await self._fetch_lines(host, unit, UNREAD_LINES,
                                                                   limit_s=self.policy.evidence_timeout_s))
        first = (datetime.fromtimestamp(first_failure_us / 1e6, UTC) if first_failure_us
                 else datetime.now(UTC))
        since = first - timedelta(seconds=max(self.policy.window_s, self.policy.auto_rollback_within_s) + 3600)
        recs = await self.audit.query(AuditQuery(host=host, since=since, limit=200))
        actions = [{"at": r.at.isoformat(), "who": r.actor_name or r.actor_id, "action": r.action,
                    "detail": describe_action(r)} for r in recs]
        side = SideEvidence.from_json({**without_own_gpu_apps(evidence), "actions": actions})
        diag = diagnose(lines, side, unit=unit, loop_threshold=self.policy.threshold,
                        loop_window_s=self.policy.window_s)
        partial = gaps_text(track.gaps, since)
        if partial:
            diag = replace(diag, summary=diag.summary + partial)
        if diag.cause in NOT_A_CRASH:
            log.info("%s %s: restarts seen, but the diagnosis is %s: no incident", host, unit, diag.cause)
            return
        show = evidence.get("systemctl_show") or {}
        nrestarts = int(show.get("NRestarts", "0")) if str(show.get("NRestarts", "0")).isdigit() else 0
        restarts = max(diag.restarts, failures, nrestarts)
        rec = await self.store.record_failure(host=host, unit=unit, diag=diag,
                                              config_hash=config_hash(evidence.get("unit_file")),
                                              invocation=inv, line=ev.message, restarts=restarts)
        for old in rec.superseded:
            await self.bus.publish(IncidentResolved(old, duration_s(old), old.resolution))
        if rec.outcome == "opened":
            log.warning("%s %s: restart loop, incident #%d (%s)", host, unit, rec.incident.id, diag.cause)
            await self.bus.publish(IncidentOpened(rec.incident))
            await self._maybe_auto_rollback(rec.incident, recs, first)
        elif rec.outcome == "updated":
            await self.bus.publish(IncidentUpdated(rec.incident, rec.incident.restarts, redact(ev.message),
                                                   rec.incident.restarts))

    async def _maybe_auto_rollback(self, info: IncidentInfo, recs: list[AuditRecord], first: datetime) -> None:
        if not self.policy.auto_rollback:
            return
        window = timedelta(seconds=self.policy.auto_rollback_within_s)
        deploys = [r for r in recs if r.action == "deploy" and first - window <= r.at <= first + timedelta(seconds=5)]
        if not deploys:
            return
        deploy = deploys[-1]
        detail = describe_action(deploy)
        info = await self.store.mark_auto_rollback(info.id, {"deploy_audit_id": deploy.id, "deploy": detail})
        await self.bus.publish(AutoRollbackRequested(info.host, info.unit, info.id, deploy.at, detail))

    # -- lifecycle ----------------------------------------------------------------------------------

    async def run(self, owned: Callable[[], set[str]] | None = None) -> None:
        """Tick forever: expire mutes, resolve stable incidents (of `owned()` hosts, default: followed)."""
        while True:
            try:
                await self.tick(owned() if owned is not None else None)
            except Exception:
                log.exception("incident tick failed")
            await asyncio.sleep(self.policy.tick_s)

    async def tick(self, hosts: set[str] | None = None) -> None:
        for info in await self.store.unmute_expired():
            await self.bus.publish(IncidentUnmuted(info))
        followed = hosts if hosts is not None else {h for h, _ in self._tracks}
        now = utcnow()
        for info in await self.store.active(hosts=sorted(followed)):
            if (now - info.last_event_at).total_seconds() < self.policy.stable_window_s:
                continue
            if info.id in self._resolving:
                continue
            track = self._tracks.get((info.host, info.unit))
            if track is not None and track.lock.locked():
                continue  # a failure of its unit is being handled: counted, declared, its automatic rollback asked for
            if self.host_busy is not None and await self.host_busy(info.host):
                continue
            self._resolving.add(info.id)
            try:
                await self._try_resolve(info)
            finally:
                self._resolving.discard(info.id)

    async def _try_resolve(self, info: IncidentInfo) -> None:
        try:
            host = self._hosts(info.host)
            res = await host.run(["systemctl", "show", info.unit, "-p", "ActiveState,SubState"], timeout=5)
        except (HostError, NotFound) as e:
            log.debug("cannot check %s for resolution: %s", info.host, e)
            return
        props = dict(line.partition("=")[::2] for line in res.stdout.splitlines() if "=" in line)
        if props.get("ActiveState") != "active":
            return
        fixed_by = await self._fixed_by(info)
        done = await self.store.resolve(info.id, fixed_by, quiet_since=info.last_event_at)
        if done is not None:
            await self.bus.publish(IncidentResolved(done, duration_s(done), fixed_by))

    async def _fixed_by(self, info: IncidentInfo) -> str:
        recs = await self.audit.query(AuditQuery(host=info.host, since=info.opened_at - timedelta(seconds=1),
                                                 actions=("rollback", "deploy", "kill", "restart", "start"),
                                                 newest_first=True, limit=20))
        for r in recs:
            rev = revision_of(r)
            if r.action == "rollback":
                how = "automatic rollback" if info.auto_rollback and r.actor_id == "pitcrew" else "rollback"
                who = "" if r.actor_id == "pitcrew" else f" by {r.actor_name or r.actor_id}"
                return f"fixed by {how} to revision {rev}{who}" if rev else f"fixed by {how}{who}"
            if r.action == "deploy":
                what = describe_action(r)
                return f"fixed by deploy of revision {rev}" if rev else f"fixed by a deploy ({what})"
            if r.action == "kill":
                return f"fixed after pitcrew's kill ({describe_action(r)})"
        return "the unit recovered without a recorded change"

    # -- router-facing ------------------------------------------------------------------------------

    async def mute(self, incident_id: int, minutes: float, actor: AuditActor | str) -> IncidentInfo:
        info = await self.store.mute(incident_id, minutes, actor)
        who = actor.name or actor.id if isinstance(actor, AuditActor) else actor
        assert info.muted_until is not None
        await self.bus.publish(IncidentMuted(info, who, info.muted_until))
        return info

    async def acknowledge(self, incident_id: int, actor: AuditActor | str) -> IncidentInfo:
        info = await self.store.acknowledge(incident_id, actor)
        await self.bus.publish(IncidentAcknowledged(info, info.acknowledged_by or ""))
        return info

    async def get(self, incident_id: int) -> IncidentInfo:
        return await self.store.get(incident_id)

    async def open_incidents(self, host: str | None = None) -> list[IncidentInfo]:
        return await self.store.active(host=host)

    async def recent_lines(self, target: int | str, n: int = 40, *, unit: str | None = None) -> list[str]:
        """The last `n` journal lines of an incident's unit (an id) or of a host, redacted."""
        if isinstance(target, int):
            info = await self.store.get(target)
            host, unit_name = info.host, info.unit
        else:
            host = target
            unit_name = unit or next((u for h, u in self._tracks if h == host), None) or ""
        track = self._tracks.get((host, unit_name))
        entries: list[JournalEntry] = list(track.lines)[-n:] if track is not None and track.lines else []
        if not entries and unit_name:
            entries = await self._fetch_lines(host, unit_name, n)
        return [format_line(e) for e in entries]

    async def _fetch_lines(self, host: str, unit: str, n: int, *, limit_s: float = 10.0) -> list[JournalEntry]:
        try:
            res = await self._hosts(host).run(["journalctl", "-u", unit, "-o", "json", "-n", str(n),
                                               "--no-pager"], timeout=limit_s)
        except (HostError, NotFound):
            return []
        return [e for e in (parse_entry(line) for line in res.stdout.splitlines()) if e is not None]

    def tracked(self) -> Mapping[tuple[str, str], int]:
        """(host, unit) → lines kept (for status)."""
        return {k: len(t.lines) for k, t in self._tracks.items()}


def with_unread(seen: list[JournalEntry], fresh: list[JournalEntry]) -> list[JournalEntry]:
    """The follower's lines with the host's newest ones (`fresh`, journal order) in their place: what the follower
    has read that `fresh` does not reach back to, then `fresh`, then anything of the follower's `fresh` lacks."""
    if not fresh:
        return seen
    have = {e.cursor for e in fresh}
    start = fresh[0].realtime_us
    older = [e for e in seen if e.cursor not in have and e.realtime_us < start]
    rest = [e for e in seen if e.cursor not in have and e.realtime_us >= start]
    return older + fresh + rest
