"""The per-invocation evidence the diagnosis rules read, and the grouping of entries into invocations.

`Invocation` accumulates what one run of the unit left in the journal (its lines, systemd's events about
it, the signals of `services.diagnosis.signatures` with the phase each occurred in, readiness, `Decode
batch`/throughput figures, whether an engine process died, whether a stop was requested and by which
recorded action). An invocation is an incident when it ended badly without a stop request **or** lost an
engine process before any stop (vLLM V1 exits 0 after `EngineCore encountered a fatal error`; an SGLang
scheduler can die while HTTP stays up).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from services.diagnosis.side import Action, RanBefore, format_time
from services.diagnosis.signatures import PHASES, phase_mark, signals_of
from services.engines import Capacity, Engine, engine_of_line
from services.engines.sglang import parse_capacity, parse_decode
from services.journal import JournalEntry, SystemdEvent, classify

STOP_ACTIONS = frozenset({"stop", "restart", "deploy", "rollback", "kill", "benchmark"})
MEMORY_SIGS = frozenset({"kv_not_enough", "cuda_oom", "gpu_memory_taken", "foreign_gpu_process"})
DEATH_SIGS = frozenset({"engine_death", "segfault", "native_abort", "health_failed"})
# a start that logged one of these and then neither ended nor got ready is stuck: an incident without an exit
STALL_SIGS = ("port_in_use", "kv_not_enough", "cuda_oom", "model_load", "nccl", "bad_argument")
# Xids whose resolution is a GPU reset/drain (NVIDIA's Xid catalog, docs.nvidia.com/deploy/xid-errors/
# analyzing-xid-catalog.html: 48 DBE, 63/64 row remapping, 74 NVLink, 79 fallen off the bus, 92/94/95 ECC,
# 119/120 GSP, 140 unrecovered ECC, 154 recovery action changed to reset; 46 GPU stopped processing)
STRONG_XIDS = frozenset({46, 48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140, 154})
XID_RX = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)(?: [^)]*)?\): (\d+), (.*)")
KERNEL_OOM_RX = re.compile(
    r"(?:Out of memory|Memory cgroup out of memory): Killed process (\d+) \(([^)]*)\)"
)


@dataclass(frozen=True, slots=True)
class Signal:
    """A journal line with the signals it carries and the phase of the invocation when it was written."""

    entry: JournalEntry
    names: tuple[str, ...]
    phase: str


@dataclass(eq=False)
class Invocation:
    """Evidence of one run of the unit (mutable while the journal is read)."""

    key: str
    line_count: int = 0
    tail: deque[JournalEntry] = field(default_factory=lambda: deque(maxlen=16))  # last lines, for `unknown`
    events: list[SystemdEvent] = field(default_factory=list)
    start_us: int = 0
    end_us: int = 0
    pids: set[int] = field(default_factory=set)
    sig_lines: list[Signal] = field(default_factory=list)  # the first 300 signal lines...
    sig_recent: deque[Signal] = field(default_factory=lambda: deque(maxlen=100))  # ...and the last 100
    phase: str = "loading"
    engine: Engine | None = None  # the engine whose lines these are, once one claims a line (`engine_of_line`)
    device: str | None = None  # "cpu" once one of its start lines says it runs there (`Engine.device_of`)
    died: JournalEntry | None = None  # the first line saying an engine process died
    crashed: bool = False  # the engine died before anyone asked the unit to stop (decided in `finish`)
    decode_entries: deque[JournalEntry] = field(default_factory=lambda: deque(maxlen=32))
    ready_us: int | None = None
    capacity: Capacity | None = None
    exit: SystemdEvent | None = None
    result: str | None = None
    stopping: SystemdEvent | None = None
    stop_timeout: SystemdEvent | None = None
    oom_kill: bool = False
    start_limit: bool = False
    failed_to_start: bool = False
    deactivated: bool = False
    restart_counter: int | None = None
    suppressed: list[SystemdEvent] = field(default_factory=list)
    leftovers: list[SystemdEvent] = field(default_factory=list)
    stop_requested_us: int | None = None
    stop_action: Action | None = None
    mark_lines: dict[str, JournalEntry] = field(default_factory=dict)  # the latest line that marked each phase

    @property
    def ended(self) -> bool:
        return self.exit is not None or self.result is not None or self.deactivated or self.failed_to_start

    @property
    def stalled(self) -> bool:
        """Still starting at the end of the journal after a start-up failure line (a thread that died binding its
        port, an OOM the engine waits on): nothing exits, nothing serves."""
        return (not self.ended and self.ready_us is None and self.stop_requested_us is None
                and bool(self.signals(*STALL_SIGS)))

    @property
    def failed(self) -> bool:
        """Ended badly, lost an engine process, or stalled in its start, without anyone asking it to stop first."""
        if self.crashed or self.stalled:
            return True
        if self.stop_requested_us is not None:
            return False
        bad_exit = self.exit is not None and not self.exit.clean_exit
        bad_result = self.result is not None and self.result != "success"
        return bad_exit or bad_result or self.oom_kill or self.start_limit or self.failed_to_start

    def _touch(self, t: int) -> None:
        if not self.start_us or t < self.start_us:
            self.start_us = t
        self.end_us = max(self.end_us, t)

    def add_line(self, entry: JournalEntry) -> None:
        t = entry.realtime_us
        if t > self.end_us:
            self.end_us = t
        if not self.start_us or t < self.start_us:
            self.start_us = t
        self.line_count += 1
        self.tail.append(entry)
        if entry.pid is not None:
            self.pids.add(entry.pid)
        msg = entry.message
        if "Decode batch" in msg or "Avg generation throughput" in msg:
            self.decode_entries.append(entry)
            self._enter("ready", t)
            return
        if "Prefill batch" in msg or 'HTTP/1.1" 200 OK' in msg:  # the other high-volume benign lines
            return
        if self.ready_us is None:
            if self.engine is None:
                self.engine = engine_of_line(msg)
            if self.device is None and self.engine is not None:
                self.device = self.engine.device_of(msg)
            mark = phase_mark(msg, engine=self.engine)
            if mark is not None:
                self._enter(mark, t)
                self.mark_lines[mark] = entry
            if self.capacity is None and "max_total_num_tokens=" in msg:
                self.capacity = parse_capacity(msg)
        sigs = signals_of(msg)
        if sigs:
            (self.sig_lines if len(self.sig_lines) < 300 else self.sig_recent).append(Signal(entry, sigs, self.phase))
            if "graceful_stop" in sigs:
                self._enter("stopping", t)
            if self.died is None and DEATH_SIGS.intersection(sigs):
                self.died = entry

    def _enter(self, phase: str, t: int) -> None:
        """Move to `phase` if it lies ahead (phases only move forward)."""
        if PHASES.index(phase) > PHASES.index(self.phase):
            self.phase = phase
            if phase == "ready" and self.ready_us is None:
                self.ready_us = t

    def add_event(self, ev: SystemdEvent) -> None:
        self._touch(ev.realtime_us)
        self.events.append(ev)
        kind = ev.kind
        if kind == "main_exited":
            self.exit = ev
        elif kind == "failed_result":
            self.result = ev.result
        elif kind == "deactivated":
            self.deactivated = True
        elif kind == "stopping" and self.stopping is None:
            self.stopping = ev
            self._enter("stopping", ev.realtime_us)
        elif kind == "stop_timeout":
            self.stop_timeout = ev
        elif kind == "oom_kill":
            self.oom_kill = True
        elif kind == "start_limit_hit":
            self.start_limit = True
        elif kind == "failed_to_start":
            self.failed_to_start = True
        elif kind == "scheduled_restart":
            self.restart_counter = ev.restart_counter
        elif kind == "suppressed":
            self.suppressed.append(ev)
        elif kind == "leftover_process":
            self.leftovers.append(ev)

    def finish(self, actions: tuple[Action, ...]) -> None:
        """Decide whether a stop was requested: systemd's `Stopping` job, or a recorded kill/stop."""
        end = self.exit.realtime_us if self.exit else self.end_us
        if self.stopping is not None and (self.exit is None or self.stopping.realtime_us <= end):
            self.stop_requested_us = self.stopping.realtime_us
        for act in actions:
            t = int(act.at.timestamp() * 1e6)
            if act.action not in STOP_ACTIONS:
                continue
            if self.stop_requested_us is not None and -60e6 <= self.stop_requested_us - t <= 60e6:
                self.stop_action = act
            elif (
                self.stop_requested_us is None
                and act.action in {"kill", "stop", "restart"}
                and self.exit is not None
                and 0 <= end - t <= 120e6
                and t >= self.start_us  # an action before this invocation started did not end it
            ):
                self.stop_requested_us, self.stop_action = t, act
        died = self.died.realtime_us if self.died is not None else None
        self.crashed = died is not None and (self.stop_requested_us is None or died < self.stop_requested_us)

    def signals(self, *names: str) -> list[Signal]:
        """The signal lines carrying any of `names`, in time order."""
        return [s for s in (*self.sig_lines, *self.sig_recent) if any(n in s.names for n in names)]

    def sig(self, *names: str) -> list[JournalEntry]:
        """Lines carrying any of the signatures `names`, exception lines (`XxxError: ...`) first."""
        hits = self.signals(*names)
        hits.sort(key=lambda h: "exception_line" not in h.names)
        return [h.entry for h in hits]

    def ran_before(self) -> RanBefore | None:
        stats = [d for d in (parse_decode(e.message) for e in self.decode_entries) if d is not None]
        busy = [d for d in stats if d.running_req > 0 and d.gen_throughput]
        if not busy:
            return None
        tput = [d.gen_throughput for d in busy if d.gen_throughput is not None]
        acc = [d.accept_len for d in busy if d.accept_len is not None]
        return RanBefore(
            round(statistics.median(acc), 2) if acc else None,
            round(statistics.median(tput), 1),
            min(tput),
            max(tput),
            len(busy),
        )


# --- grouping -----------------------------------------------------------------------------------


def infer_unit(entries: Sequence[JournalEntry]) -> str | None:
    """The unit most entries belong to (manager messages' `UNIT`, services' `_SYSTEMD_UNIT`)."""
    counts = Counter(e.unit for e in entries if e.unit and e.unit != "init.scope" and e.transport != "kernel")
    return counts.most_common(1)[0][0] if counts else None


def group_invocations(
    entries: Iterable[JournalEntry], unit: str
) -> tuple[list[Invocation], list[JournalEntry]]:
    """Split a unit's entries into invocations (in time order) and kernel entries."""
    invocations: list[Invocation] = []
    by_id: dict[str, Invocation] = {}
    kernel: list[JournalEntry] = []
    current: Invocation | None = None
    for entry in entries:
        if entry.transport == "kernel":
            kernel.append(entry)
            continue
        pid = entry.pid
        event = (
            classify(entry, unit)
            if pid == 1 or pid is None or entry.identifier == "systemd" or entry.message.startswith("Supp")
            else None
        )
        if event is not None and event.kind == "suppressed":
            inv = current or _new(invocations, f"segment-{len(invocations)}")
            inv.add_event(event)
            current = inv
            continue
        key = entry.invocation_id
        if key is not None:
            found = by_id.get(key)
            if found is None:
                adopt = current is not None and current.key.startswith("segment-") and not current.line_count
                if (
                    adopt
                    and current is not None
                    and not current.ended
                    and event is not None
                    and event.kind == "started"
                ):
                    found = current
                    found.key = key
                else:
                    found = _new(invocations, key)
                by_id[key] = found
            inv = found
        elif current is None or _opens_segment(event, current):
            inv = _new(invocations, f"segment-{len(invocations)}")
        else:
            inv = current
        if event is not None:
            inv.add_event(event)
        elif entry.pid != 1:
            inv.add_line(entry)
        current = inv
    invocations.sort(key=lambda i: i.start_us)
    return invocations, kernel


def _opens_segment(event: SystemdEvent | None, current: Invocation) -> bool:
    """Without invocation ids: a `Started` after lines or an exit, or a line after an exit, starts a run."""
    if event is not None:
        return event.kind == "started" and (bool(current.line_count) or current.ended)
    return current.ended and current.key.startswith("segment-")


def _new(invocations: list[Invocation], key: str) -> Invocation:
    inv = Invocation(key)
    invocations.append(inv)
    return inv


@dataclass(frozen=True)
class Finding:
    """What the rules concluded (diagnosis adds loop state, restarts and redaction)."""

    cause: str
    confidence: float
    summary: str
    evidence: tuple[str, ...]
    recommendation: str
    ran_before: RanBefore | None = None
    config_change: str | None = None
    stale_pids: tuple[int, ...] = ()
    phase: str | None = None  # the phase the failing invocation was in when it ended


def short_time(us: int) -> str:
    return format_time(us)


def exit_lines(inv: Invocation) -> list[str]:
    return [ev.message for ev in inv.events if ev.kind in {"main_exited", "failed_result", "stop_timeout"}][
        :2
    ]


