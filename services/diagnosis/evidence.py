"""Evidence selection: the few lines a person needs to check a diagnosis, with their times.

At most `MAX_LINES` lines, chosen in this order of importance and then printed in time order: the lines
that decided the rule, the root exception (not only the wrapper that re-raises it), the first error line
of the incident, the kernel lines when they matter, systemd's exit/result lines (or the stop job's), the
restart counter line, and the implicated flags of the unit file. Never a wall of traceback: frame lines
are not evidence.
"""

from __future__ import annotations

import re

from services.diagnosis.decide import Context, Match, root_exception
from services.diagnosis.invocations import Invocation
from services.diagnosis.signatures import strip_engine_prefix
from services.journal import JournalEntry, SystemdEvent
from services.redact import redact

MAX_LINES = 8
_BARE_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)$")
ERROR_SIGNALS = ("kv_not_enough", "cuda_oom", "gpu_memory_taken", "graph_capture_failed", "port_in_use",
                 "bad_argument", "model_load", "nccl", "gpu_lost", "segfault", "native_abort", "engine_death",
                 "exception_line")
_FLAG_RX = re.compile(
    r"--(speculative-num-steps|mem-fraction-static|context-length|speculative-eagle-topk|max-model-len"
    r"|speculative-num-draft-tokens|port|cuda-graph-max-bs|max-running-requests|gpu-memory-utilization"
    r"|max-num-seqs|tensor-parallel-size|tp)[= ]+(\S+)"
)
FLAGS_FOR = {
    "kv_cache_oom": ("speculative-num-steps", "speculative-eagle-topk", "speculative-num-draft-tokens",
                     "mem-fraction-static", "context-length", "max-model-len", "gpu-memory-utilization",
                     "max-num-seqs", "max-running-requests"),
    "cuda_graph_capture_oom": ("cuda-graph-max-bs", "mem-fraction-static", "gpu-memory-utilization"),
    "cuda_oom_runtime": ("mem-fraction-static", "gpu-memory-utilization", "max-running-requests",
                         "max-num-seqs"),
    "port_in_use": ("port",),
}


def unit_flags(unit_file: str | None, names: tuple[str, ...]) -> str | None:
    """`--flag value ...` of the unit file restricted to `names`, or None."""
    found = {k: v for k, v in _FLAG_RX.findall(unit_file or "") if k in names}
    return " ".join(f"--{k} {v}" for k, v in found.items()) or None


def _stamp(us: int) -> str:
    if not us:
        return "--:--:--.---"
    secs = us // 1_000_000
    return f"{secs // 3600 % 24:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{us // 1000 % 1000:03d}"


def quote(line: str, limit: int = 600) -> str:
    """A line as evidence: redacted, cut to `limit` characters."""
    text = redact(line if len(line) <= limit * 4 else line[: limit * 4])
    text = text.replace("\r", " ").replace("\x1b", "")
    return text if len(text) <= limit else text[:limit] + "…"


Line = tuple[int, str]  # (realtime µs, message)


def _line(e: JournalEntry | SystemdEvent) -> Line:
    return (e.realtime_us, e.message)


def _systemd_lines(inv: Invocation, mode: str) -> list[Line]:
    """systemd's exit/result lines (and the stop job's), the first of each kind."""
    kinds = {"main_exited", "failed_result", "stop_timeout", "oom_kill", "start_limit_hit"}
    if mode == "stop":
        kinds |= {"stopping", "killing"}
    first: dict[str, SystemdEvent] = {}
    for ev in inv.events:
        if ev.kind in kinds:
            first.setdefault(ev.kind, ev)
    return [_line(ev) for ev in first.values()]


def _root_lines(inv: Invocation, errors: list[Line]) -> list[Line]:
    """The root exception (with the `assert` source line of a bare `AssertionError`) and the first error line."""
    out: list[Line] = []
    root = root_exception(inv)
    if root is not None:
        out.append(_line(root.entry))
        if _BARE_EXCEPTION.match(strip_engine_prefix(root.entry.message)):
            asserts = [s for s in inv.signals("assert_source") if s.entry.realtime_us <= root.entry.realtime_us]
            out += [_line(s.entry) for s in asserts[-1:]]
    return out + errors[:1]


def _context_lines(ctx: Context, inv: Invocation, label: str) -> list[Line]:
    """Lines that help a person follow the story, quoted when there is room: what died as the engine says it, the
    phase a memory failure happened in, a left-over holder, what a hung stop was doing, an orderly shutdown."""
    out: list[Line] = []
    if ctx.mode == "failure":
        out += [_line(s.entry) for s in inv.signals("engine_death")[:2]]
    if label in {"cuda_graph_capture_oom", "kv_cache_oom"} and ctx.mode == "failure":
        mark = inv.mark_lines.get("capture" if label == "cuda_graph_capture_oom" else "kv_sizing")
        out += [_line(mark)] if mark is not None else []
    if label == "gpu_memory_held_by_stale_process":
        out += [_line(ev) for ev in inv.leftovers[:1]]
    if label == "stop_timeout_sigkill" and inv.stop_requested_us is not None:
        before = [e for e in inv.tail if e.pid != 1 and e.realtime_us <= inv.stop_requested_us]
        out += [_line(e) for e in before[-1:]]
    if label == "unknown":  # what died, then the last words before the end
        out += [_line(s.entry) for s in inv.signals("engine_death", "died_silently")[:3]]
        out += [_line(e) for e in list(inv.tail)[-2:] if e.pid != 1]
    if ctx.mode == "stop":
        out += [_line(s.entry) for s in inv.signals("shutdown_line")[:2]]
    return out + [_line(ev) for ev in inv.suppressed[:1]]


def select(ctx: Context, label: str, match: Match) -> tuple[str, ...]:
    """The evidence lines, `HH:MM:SS.mmm message`, in time order; the unit's flags last. The lines that decided
    the rule, the root exception, systemd's exit/result (or stop) lines and the restart counter come first; the
    context lines fill the rest up to MAX_LINES."""
    essential: list[Line] = [_line(e) for e in match.lines[:3]]
    context: list[Line] = []
    inv = ctx.focus
    if inv is not None and label != "healthy" and ctx.mode == "failure":
        essential += _root_lines(inv, [_line(s.entry) for s in inv.signals(*ERROR_SIGNALS)[:1]])
    restarts = [ev for i in ctx.invocations for ev in i.events if ev.kind == "scheduled_restart"]
    if restarts and label != "healthy":
        essential.append(_line(restarts[-1]))
    if inv is not None and label != "healthy":
        essential += _systemd_lines(inv, ctx.mode)[:5]
        context = _context_lines(ctx, inv, label)
    unique = list(dict.fromkeys(line for line in essential + context if line[1].strip()))[:MAX_LINES]
    unique.sort()
    lines = [f"{_stamp(t)} {quote(msg)}" for t, msg in unique]
    flags = unit_flags(ctx.side.unit_file, FLAGS_FOR.get(label, ()))
    if flags and len(lines) < MAX_LINES:
        lines.append(f"unit file: {flags}")
    return tuple(lines)
