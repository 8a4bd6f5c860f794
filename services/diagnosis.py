"""Diagnosis of a unit's journal: why did it stop or keep restarting (offline and for the live bot).

Owns the evidence model and the glue: `SideEvidence` (what the bot gathers over SSH at the moment of an
incident, or `pitcrew diagnose --extra`), the grouping of journal entries into invocations (by
`_SYSTEMD_INVOCATION_ID`/`INVOCATION_ID`, or between `Started` and the exit when ids are missing),
`detect_restart_loop` (a pure function over classified systemd events, reused by the live incident
code), and `diagnose()`, which runs the ordered signature rules of `services.diagnosis_rules` and
returns a `Diagnosis` whose `to_json()` is the `--json` shape of issue 6.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain, islice
from types import MappingProxyType
from typing import Any

from services.diagnosis_rules import Finding, evaluate, group_invocations, infer_unit
from services.errors import UserInputError
from services.journal_format import JournalEntry, entry_from_obj
from services.redact import redact
from services.systemd_log import SystemdEvent

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
_EMPTY: Mapping[str, str] = MappingProxyType({})


# --- side evidence ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Action:
    """One of pitcrew's own recorded actions (audit log)."""

    at: datetime
    who: str
    action: str  # deploy | start | stop | restart | rollback | kill | benchmark
    detail: str = ""


@dataclass(frozen=True, slots=True)
class GpuApp:
    """A process holding GPU memory (`nvidia-smi --query-compute-apps=pid,process_name,used_memory`)."""

    pid: int
    process_name: str
    used_memory_mib: int | None


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """`ps` facts about a pid."""

    pid: int
    ppid: int | None = None
    user: str | None = None
    cgroup: str | None = None
    cmdline: str | None = None
    started: str | None = None


@dataclass(frozen=True, slots=True)
class Listener:
    """A listening socket (`ss -ltnp`)."""

    local: str
    pid: int | None = None
    process: str | None = None
    user: str | None = None


def _int_or_none(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(str(value).strip().split()[0])
    except (ValueError, IndexError):
        return None


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _objs(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = data.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class SideEvidence:
    """Evidence from outside the unit's journal; every part is optional."""

    systemctl_show: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    nvidia_smi_apps: tuple[GpuApp, ...] = ()
    nvidia_smi_gpu: tuple[str, ...] = ()
    kernel_journal: tuple[JournalEntry, ...] = ()
    actions: tuple[Action, ...] = ()
    unit_file: str | None = None
    process_info: tuple[ProcessInfo, ...] = ()
    ss_listen: tuple[Listener, ...] = ()

    @classmethod
    def from_json(cls, data: Any) -> SideEvidence:
        """Build from the `--extra` JSON object; unknown keys and malformed items are ignored."""
        if not isinstance(data, Mapping):
            raise UserInputError("side evidence must be one JSON object")
        show_raw = data.get("systemctl_show")
        show = {str(k): str(v) for k, v in show_raw.items()} if isinstance(show_raw, Mapping) else {}
        apps = []
        for o in _objs(data, "nvidia_smi_apps"):
            pid = _int_or_none(o.get("pid"))
            if pid is not None:
                apps.append(GpuApp(pid, str(o.get("process_name") or ""), _int_or_none(o.get("used_memory"))))
        gpu_raw = data.get("nvidia_smi_gpu")
        gpu = (
            [str(x) for x in gpu_raw if isinstance(x, str | int)]
            if isinstance(gpu_raw, list)
            else str(gpu_raw).splitlines()
            if isinstance(gpu_raw, str)
            else []
        )
        kernel = []
        for i, o in enumerate(_objs(data, "kernel_journal")):
            obj = dict(o)
            obj.setdefault("__CURSOR", f"kernel-{i}")
            obj.setdefault("_TRANSPORT", "kernel")
            entry = entry_from_obj(obj)
            if entry is not None:
                kernel.append(entry)
        actions = []
        for o in _objs(data, "actions"):
            at = _parse_time(o.get("at"))
            if at is not None and o.get("action"):
                actions.append(
                    Action(at, str(o.get("who") or "pitcrew"), str(o["action"]), str(o.get("detail") or ""))
                )
        procs = []
        for o in _objs(data, "process_info"):
            pid = _int_or_none(o.get("pid"))
            if pid is not None:
                procs.append(
                    ProcessInfo(
                        pid,
                        _int_or_none(o.get("ppid")),
                        _opt(o.get("user")),
                        _opt(o.get("cgroup")),
                        _opt(o.get("cmdline")),
                        _opt(o.get("started")),
                    )
                )
        listeners = [
            Listener(
                str(o.get("local") or ""),
                _int_or_none(o.get("pid")),
                _opt(o.get("process")),
                _opt(o.get("user")),
            )
            for o in _objs(data, "ss_listen")
        ]
        unit_file = data.get("unit_file")
        return cls(
            MappingProxyType(show),
            tuple(apps),
            tuple(gpu),
            tuple(kernel),
            tuple(sorted(actions, key=lambda a: a.at)),
            unit_file if isinstance(unit_file, str) else None,
            tuple(procs),
            tuple(listeners),
        )


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


# --- result types -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RanBefore:
    """What the unit achieved before it died, from its `Decode batch` lines."""

    accept_len: float | None
    gen_throughput_tok_s: float | None
    gen_throughput_min: float | None = None
    gen_throughput_max: float | None = None
    decode_lines: int = 0

    def describe(self) -> str:
        """`it ran at 270-293 tok/s, accept len 5.50` style text."""
        parts = []
        lo, hi = self.gen_throughput_min, self.gen_throughput_max
        if lo is not None and hi is not None and round(lo) != round(hi):
            parts.append(f"{lo:.0f}-{hi:.0f} tok/s")
        elif self.gen_throughput_tok_s is not None:
            parts.append(f"{self.gen_throughput_tok_s:.0f} tok/s")
        if self.accept_len is not None:
            parts.append(f"accept len {self.accept_len:.2f}")
        return "it ran at " + ", ".join(parts) if parts else "it was serving"


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
    nrestarts = _int_or_none(side.systemctl_show.get("NRestarts")) or 0
    finding: Finding = evaluate(unit_name, invocations, kernel, side, loop.looping)
    evidence = tuple(_quote(line) for line in dict.fromkeys(finding.evidence))[:5]
    return Diagnosis(
        cause=finding.cause,
        confidence=finding.confidence,
        restart_loop=loop.looping
        and finding.cause not in {"healthy", "operator_action", "stop_timeout_sigkill"},
        restarts=max(loop.restarts, nrestarts),
        summary=redact(finding.summary),
        evidence=evidence,
        ran_before=finding.ran_before,
        recommendation=redact(finding.recommendation),
        config_change=redact(finding.config_change) if finding.config_change else None,
        stale_pids=finding.stale_pids,
    )


def _quote(line: str, limit: int = 600) -> str:
    text = redact(line if len(line) <= limit * 4 else line[: limit * 4])
    return text if len(text) <= limit else text[:limit] + "…"


def format_time(us: int) -> str:
    """`14:02:11 UTC` for a journal timestamp."""
    return datetime.fromtimestamp(us / 1e6, UTC).strftime("%H:%M:%S UTC")
