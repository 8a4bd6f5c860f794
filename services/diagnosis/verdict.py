"""Diagnosis of a unit's journal: why did it stop or keep restarting (offline and for the live bot).

Owns the evidence model and the glue: `SideEvidence` (what the bot gathers over SSH at the moment of an
incident, or `pitcrew diagnose --extra`), the grouping of journal entries into invocations (by
`_SYSTEMD_INVOCATION_ID`/`INVOCATION_ID`, or between `Started` and the exit when ids are missing),
`detect_restart_loop` (a pure function over classified systemd events, reused by the live incident
code), and `diagnose()`, which runs the ordered signature rules of `services.diagnosis.rules` and
returns a `Diagnosis` whose `to_json()` is the `--json` shape of issue 6.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any

from services.diagnosis.invocations import Finding, Invocation, group_invocations, infer_unit
from services.diagnosis.rules import evaluate
from services.diagnosis.side import RanBefore, SideEvidence, int_or_none
from services.journal import JournalEntry, SystemdEvent
from services.redact import redact

CAUSES: tuple[str, ...] = (
    "kv_cache_oom",
    "cuda_oom_runtime",
    "cuda_graph_capture_oom",
    "stop_timeout_sigkill",
    "operator_action",
    "gpu_memory_held_by_stale_process",
    "port_in_use",
    "bad_argument",
    "model_load_failure",
    "nccl_failure",
    "gpu_hardware_xid",
    "segfault",
    "engine_exception",
    "host_oom_kill",
    "healthy",
    "unknown",
)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The answer: one cause of the fixed set, how sure, and the evidence."""

    cause: str
    confidence: float
    restart_loop: bool
    restarts: int
    summary: str
    evidence: tuple[str, ...]
    ran_before: RanBefore | None
    recommendation: str
    config_change: str | None = None
    stale_pids: tuple[int, ...] = ()
    phase: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The `pitcrew diagnose --json` object (a JSON-ready dict)."""
        ran = None
        if self.ran_before is not None:
            ran = {
                "accept_len": self.ran_before.accept_len,
                "gen_throughput_tok_s": self.ran_before.gen_throughput_tok_s,
            }
        return {
            "cause": self.cause,
            "confidence": round(self.confidence, 2),
            "restart_loop": self.restart_loop,
            "restarts": self.restarts,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "ran_before": ran,
            "recommendation": self.recommendation,
            "config_change": self.config_change,
            "stale_pids": list(self.stale_pids),
            "phase": self.phase,
        }


# --- restart loops ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoopStatus:
    """Result of `detect_restart_loop`."""

    looping: bool
    failures: int
    restarts: int
    first_failure_us: int | None
    last_failure_us: int | None


_FAILURE_KINDS = frozenset({"failed_result", "failed_to_start", "start_limit_hit", "oom_kill"})


def detect_restart_loop(
    events: Sequence[SystemdEvent],
    *,
    threshold: int = 2,
    window_s: float = 600,
    expected_invocations: Collection[str] = (),
) -> LoopStatus:
    """Declare a loop at the `threshold`-th failed start within `window_s` (or on a start-limit hit).

    Failures are systemd's own messages (`Main process exited` with a failure status, `Failed with
    result`, `Start request repeated too quickly`, OOM kills); the messages of one failure collapse into
    one episode (same invocation, or within 10 s when ids are missing). Failures of invocations in
    `expected_invocations` (stops and restarts pitcrew itself caused) do not count.
    """
    episodes: list[int] = []
    last_key: str | None = None
    last_t = -(10**18)
    restarts = 0
    start_limit = False
    for ev in sorted(events, key=lambda e: e.realtime_us):
        if ev.kind == "scheduled_restart" and ev.restart_counter is not None:
            restarts = max(restarts, ev.restart_counter)
        if ev.invocation_id is not None and ev.invocation_id in expected_invocations:
            continue
        failed = ev.kind in _FAILURE_KINDS or (ev.kind == "main_exited" and not ev.clean_exit)
        if ev.kind == "failed_result" and ev.result == "success":
            failed = False
        if not failed:
            continue
        start_limit = start_limit or ev.kind == "start_limit_hit"
        key = ev.invocation_id
        same = (key is not None and key == last_key) or (key is None and ev.realtime_us - last_t < 10_000_000)
        if not same:
            episodes.append(ev.realtime_us)
        last_key, last_t = key, ev.realtime_us
    window_us = int(window_s * 1_000_000)
    looping = start_limit
    j = 0
    for i, t in enumerate(episodes):
        while t - episodes[j] > window_us:
            j += 1
        if i - j + 1 >= threshold:
            looping = True
    if episodes and restarts >= threshold:
        looping = True
    return LoopStatus(
        looping,
        len(episodes),
        restarts,
        episodes[0] if episodes else None,
        episodes[-1] if episodes else None,
    )


def diagnose(
    entries: Iterable[JournalEntry],
    side: SideEvidence | None = None,
    *,
    unit: str | None = None,
    loop_threshold: int = 2,
    loop_window_s: float = 600,
) -> Diagnosis:
    """Diagnose a unit from its journal entries (any iterable, read once) and the side evidence.

    Memory stays bounded for any journal length: per invocation only the evidence the rules read is kept
    (signature lines, the last lines, the last `Decode batch` lines). Without `unit`, the unit is inferred
    from the first 5,000 entries.
    """
    side = side if side is not None else SideEvidence()
    stream: Iterable[JournalEntry] = entries
    unit_name = unit
    if unit_name is None:
        it = iter(entries)
        head = list(islice(it, 5000))
        unit_name = infer_unit(head) or "unknown.service"
        stream = chain(head, it)
    invocations, kernel = group_invocations(stream, unit_name)
    kernel.extend(side.kernel_journal)
    events = [ev for inv in invocations for ev in inv.events]
    for inv in invocations:
        inv.finish(side.actions)
    expected = {inv.key for inv in invocations if inv.stop_requested_us is not None}
    loop = detect_restart_loop(
        events, threshold=loop_threshold, window_s=loop_window_s, expected_invocations=expected
    )
    nrestarts = int_or_none(side.systemctl_show.get("NRestarts")) or 0
    finding: Finding = evaluate(unit_name, invocations, kernel, side, loop.looping)
    summary = finding.summary
    if side.errors:  # the causes the probes decide (a stale GPU holder, the OOM killer, a taken port) went unjudged
        summary += (" The host's side evidence (systemctl, nvidia-smi, ps, the kernel's journal) could not be read in "
                    f"full: {side.errors[0][:200].rstrip('.')}.")
    return Diagnosis(
        cause=finding.cause,
        confidence=finding.confidence,
        restart_loop=automatic_loop(invocations) and finding.cause not in NOT_A_LOOP,
        restarts=max(loop.restarts, nrestarts),
        summary=redact(summary),
        evidence=finding.evidence,
        ran_before=finding.ran_before,
        recommendation=redact(finding.recommendation),
        config_change=redact(finding.config_change) if finding.config_change else None,
        stale_pids=finding.stale_pids,
        phase=finding.phase,
    )


NOT_A_LOOP = frozenset({"healthy", "operator_action", "stop_timeout_sigkill"})


# the signals that name a failure; two failures are "the same" when they carry the same ones
_FAILURE_SIGNALS = frozenset({"kv_not_enough", "cuda_oom", "gpu_memory_taken", "graph_capture_failed", "port_in_use",
                              "bad_argument", "model_load", "nccl", "gpu_lost", "segfault", "native_abort"})


def _failure_key(inv: Invocation) -> frozenset[str]:
    return frozenset(n for s in inv.signals(*_FAILURE_SIGNALS) for n in s.names if n in _FAILURE_SIGNALS)


def automatic_loop(invocations: Sequence[Invocation], threshold: int = 2) -> bool:
    """systemd restarted the unit automatically at least `threshold` times after the same failure in a row (or
    hit its start limit), with no deliberate stop in between: the `loop` of docs/DIAGNOSIS.md. A failure
    whose lines name nothing (journald dropped them) counts as the same as its neighbours."""
    run, key = 0, frozenset[str]()
    for inv in invocations:
        if not inv.failed:
            run, key = 0, frozenset()
            continue
        if inv.start_limit:
            return True
        this = _failure_key(inv)
        if this and key and this != key:
            run = 0
        key = this or key
        if any(ev.kind == "scheduled_restart" for ev in inv.events):
            run += 1
            if run >= threshold:
                return True
    return False
