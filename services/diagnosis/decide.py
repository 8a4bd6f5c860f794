"""The decision table: one ordered list of rules, each naming its label, its test and its tie-break.

`decide()` walks `RULES` top to bottom and returns the first label whose test the evidence supports (a
`Match`: the confidence and the lines that decided it). The order *is* the tie-break of docs/DIAGNOSIS.md
("Labels"); the `tie_break` text of each row says why it sits where it does. Tests read only the typed
signals of `services.diagnosis.signatures` (with their phase), systemd's events, the kernel lines of the
incident window and the side evidence, all gathered in a `Context`.

The invocation a failure answer is about (`Context.focus`) is the latest incident — an invocation that ended
badly without a stop request, or lost an engine process before any stop — unless a deliberate stop came
after it; then the stop rows answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from services.diagnosis.invocations import KERNEL_OOM_RX, STRONG_XIDS, XID_RX, Invocation, Signal
from services.diagnosis.ownership import Ownership, ownership
from services.diagnosis.side import SideEvidence
from services.diagnosis.signatures import strip_engine_prefix
from services.journal import JournalEntry

BEFORE_READY = frozenset({"loading", "kv_sizing", "capture", "warmup"})
MEMORY_SIGNALS = ("kv_not_enough", "cuda_oom", "gpu_memory_taken", "foreign_gpu_process", "graph_capture_failed")
_OOM_PID_RX = re.compile(r"oom-kill:.*?[,:]pid=(\d+)")
_XID_HEAD = re.compile(r"^pid=[^,]*, name=[^,]*, ")
_KERNEL_SEGV = re.compile(r"\[(\d+)\]: segfault at ")
_VALIDATION_RX = re.compile(r"^(?:[\w.]*\.)?(?:ValueError|AssertionError|TypeError|NotImplementedError|ValidationError"
                            r"|ArgumentTypeError|ArgumentError): ")
_OPTION_RX = re.compile(r"--[a-z][\w-]+|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")  # `--max-model-len`, `max_num_seqs`
UNSURE = 0.5  # below this confidence the answer is `unknown` with the most telling lines


@dataclass
class Context:
    """Everything the rules read."""

    unit: str
    invocations: list[Invocation]
    kernel: list[JournalEntry]
    side: SideEvidence
    incidents: list[Invocation] = field(default_factory=list)
    stopped: Invocation | None = None
    focus: Invocation | None = None
    mode: str = "none"  # failure | stop | none

    def __post_init__(self) -> None:
        self.incidents = [i for i in self.invocations if i.failed]
        stops = [i for i in self.invocations if i.stop_requested_us is not None and not i.crashed]
        self.stopped = stops[-1] if stops else None
        last_incident = self.incidents[-1] if self.incidents else None
        if last_incident is not None and (self.stopped is None or last_incident.end_us >= self.stopped.end_us):
            self.focus, self.mode = last_incident, "failure"
        elif self.stopped is not None:
            self.focus, self.mode = self.stopped, "stop"
        window_from = (self.incidents[0] if self.incidents else self.invocations[0]).start_us \
            if self.invocations else 0
        self.kernel = [k for k in self.kernel if not k.realtime_us or k.realtime_us >= window_from - 60_000_000]

    def signals(self, *names: str) -> list[Signal]:
        return self.focus.signals(*names) if self.focus is not None and self.mode == "failure" else []


@dataclass(frozen=True)
class Match:
    """A rule's verdict: how sure, the lines that decided it, and what the wording needs."""

    confidence: float
    lines: tuple[JournalEntry, ...] = ()
    facts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Rule:
    label: str
    test: Callable[[Context], Match | None]
    tie_break: str


def _entries(signals: list[Signal], n: int = 2) -> tuple[JournalEntry, ...]:
    return tuple(s.entry for s in signals[:n])


def _xid(ctx: Context) -> Match | None:
    xids = [(k, m) for k in ctx.kernel if (m := XID_RX.search(k.message))]
    lost = [s for inv in ctx.incidents for s in inv.signals("gpu_lost")]
    lost_k = [k for k in ctx.kernel if "fallen off the bus" in k.message]
    if not (xids or lost or lost_k):
        return None
    strong = any(int(m.group(2)) in STRONG_XIDS for _, m in xids) or bool(lost or lost_k)
    first = xids[0][1] if xids else None
    facts = {"xid": first.group(2) if first else None, "pci": first.group(1) if first else None,
             "text": _XID_HEAD.sub("", first.group(3)).strip()[:160] if first else None}
    lines = tuple(k for k, _ in xids[:2]) + tuple(lost_k[:1]) + _entries(lost, 1)
    return Match(0.95 if strong else 0.8, lines, facts)


def _host_oom(ctx: Context) -> Match | None:
    if ctx.mode != "failure" or ctx.focus is None:
        return None
    inv = ctx.focus
    cgroup = f"/{ctx.unit},"
    pids = {p for i in ctx.incidents for p in i.pids}
    pids |= {int(p) for k in ctx.kernel if cgroup in k.message + "," for p in _OOM_PID_RX.findall(k.message)}
    kernel = [k for k in ctx.kernel if (m := KERNEL_OOM_RX.search(k.message)) and int(m.group(1)) in pids]
    if not (inv.oom_kill or inv.result == "oom-kill" or kernel):
        return None
    # killed while sizing its KV cache, before ready (a context the unit's MemoryMax= cannot hold): the engine's own
    # sizing line says what it was allocating
    sizing = inv.mark_lines.get("kv_sizing") if inv.ready_us is None else None
    return Match(0.92, tuple(kernel[:2]) + ((sizing,) if sizing is not None else ()))


def _stop_timeout(ctx: Context) -> Match | None:
    inv = ctx.stopped
    if ctx.mode != "stop" or inv is None:
        return None
    killed = any(ev.kind == "killing" and ev.signal == "KILL" for ev in inv.events)
    if inv.stop_timeout is None and inv.result != "timeout" and not killed:
        return None
    return Match(0.95 if inv.stop_action else 0.85, tuple(s.entry for s in inv.signals("graceful_stop")[:1]))


def _operator(ctx: Context) -> Match | None:
    inv = ctx.stopped
    if ctx.mode != "stop" or inv is None:
        return None
    return Match(0.92 if inv.stop_action else 0.8, tuple(s.entry for s in inv.signals("graceful_stop")[:1]))


def _stale_holder(ctx: Context) -> Match | None:
    inv = ctx.focus
    memory = [s for s in ctx.signals(*MEMORY_SIGNALS) if s.phase in BEFORE_READY]
    if inv is None or not memory:
        return None
    own: Ownership = ownership(inv, ctx.side, ctx.unit, ctx.invocations)
    if not own.holders:
        return None
    conf = 0.92 if ctx.side.nvidia_smi_apps or inv.leftovers else 0.8
    return Match(conf, _entries(memory, 2), {"ownership": own})


def _port(ctx: Context) -> Match | None:
    hits = ctx.signals("port_in_use")
    return Match(0.92, _entries(hits, 2)) if hits else None


def _bad_argument(ctx: Context) -> Match | None:
    inv = ctx.focus
    if inv is None or ctx.mode != "failure":
        return None
    bad = ctx.signals("bad_argument")
    status = inv.exit.exit_status if inv.exit is not None and inv.exit.exit_code == "exited" else None
    usage = bool(ctx.signals("usage_line")) and status == 2
    if bad or status == 203 or usage:
        return Match(0.92 if bad else 0.75, _entries(bad, 2))
    return _invalid_option(ctx, inv)


def _invalid_option(ctx: Context, inv: Invocation) -> Match | None:
    """ServerArgs/EngineArgs/config validation: the root exception is raised before the engine started any model
    work (no `engine_init` line before it) and names an option, or comes from the argument/config modules; and no
    hub/file, NCCL, port or memory signal explains the failure instead."""
    if ctx.signals("model_load", "nccl", "port_in_use", *MEMORY_SIGNALS):
        return None
    root = root_exception(inv)
    if root is None or root.phase != "loading":
        return None
    t = root.entry.realtime_us
    if any(s.entry.realtime_us <= t for s in inv.signals("engine_init")):
        return None
    text = strip_engine_prefix(root.entry.message)
    details = [s for s in inv.signals("config_validation")
               if "Value error, " in s.entry.message and t <= s.entry.realtime_us <= t + 1_000_000]
    said = [text.split(":", 1)[-1]] + [strip_engine_prefix(s.entry.message).split(" [type=", 1)[0] for s in details]
    if not (_VALIDATION_RX.match(text) and any(_OPTION_RX.search(x) for x in said)):
        return None
    return Match(0.8, (root.entry, *_entries(details, 1)))


def _model_load(ctx: Context) -> Match | None:
    hits = ctx.signals("model_load")
    return Match(0.9, _entries(hits, 2)) if hits else None


def _nccl(ctx: Context) -> Match | None:
    hits = ctx.signals("nccl")
    if not hits and not ctx.signals("cuda_error"):  # a watchdog relaying a CUDA error is not a collective failure
        hits = ctx.signals("dist_backend")
    return Match(0.85, _entries(hits, 2)) if hits else None


def _oom_in(ctx: Context, phases: frozenset[str]) -> list[Signal]:
    return [s for s in ctx.signals("cuda_oom") if s.phase in phases]


def _kv_cache(ctx: Context) -> Match | None:
    kv = ctx.signals("kv_not_enough")
    if kv:
        return Match(0.92, _entries(kv, 1))
    oom = _oom_in(ctx, frozenset({"loading", "kv_sizing", "warmup"}))
    if oom:
        return Match(0.75, _entries(oom, 1), {"phase": oom[0].phase})
    taken = [s for s in ctx.signals("gpu_memory_taken") if s.phase in BEFORE_READY]
    return Match(0.7, _entries(taken, 1)) if taken else None


def _capture(ctx: Context) -> Match | None:
    failed = [s for s in ctx.signals("graph_capture_failed") if "cuda_oom" in s.names]
    oom = failed or _oom_in(ctx, frozenset({"capture"}))
    if not oom:
        return None
    t = oom[0].entry.realtime_us
    frames = [s for s in ctx.signals("capture_frame") if t - 10_000_000 <= s.entry.realtime_us <= t]
    return Match(0.9, _entries(oom, 1) + _entries(frames[-1:], 1))


def _runtime_oom(ctx: Context) -> Match | None:
    oom = _oom_in(ctx, frozenset({"ready", "stopping"}))
    return Match(0.88, _entries(oom, 1)) if oom else None


def _segfault(ctx: Context) -> Match | None:
    inv = ctx.focus
    if inv is None or ctx.mode != "failure":
        return None
    seg = ctx.signals("segfault")
    dumped = inv.exit is not None and (
        inv.exit.exit_code == "dumped" or (inv.exit.exit_code == "killed" and inv.exit.exit_status == 11))
    kernel = [k for k in ctx.kernel if (m := _KERNEL_SEGV.search(k.message)) and int(m.group(1)) in inv.pids]
    if not (seg or dumped or inv.result == "core-dump" or kernel):
        return None
    return Match(0.9 if seg or kernel else 0.78, _entries(seg, 1) + tuple(kernel[:1]))


def root_exception(inv: Invocation) -> Signal | None:
    """The exception that caused the failure: the last real (not wrapper, not client) exception line
    written before the engine died or the unit exited."""
    end = inv.died.realtime_us + 5_000_000 if inv.died is not None else inv.end_us
    # journald dropped lines after this point: an exception before the gap is not known to be the cause
    gap = max((ev.realtime_us for ev in inv.suppressed if ev.realtime_us <= end), default=0)
    real = [
        s for s in inv.signals("exception_line", "graph_capture_failed")
        if "wrapper" not in s.names and "client_error" not in s.names and gap <= s.entry.realtime_us <= end
    ]
    return real[-1] if real else None


def _engine_exception(ctx: Context) -> Match | None:
    inv = ctx.focus
    if inv is None or ctx.mode != "failure":
        return None
    root = root_exception(inv)
    if root is not None:
        return Match(0.8, (root.entry,))
    cuda = ctx.signals("cuda_error")  # a CUDA error relayed outside a Python traceback (the NCCL watchdog, C++)
    return Match(0.75, _entries(cuda, 1)) if cuda else None


def _unknown(ctx: Context) -> Match | None:
    inv = ctx.focus
    if not ctx.invocations:
        return Match(0.2)
    if inv is None or ctx.mode != "failure":
        return None
    return Match(0.3, tuple(s.entry for s in inv.signals("died_silently", "engine_death")[:1]))


def _healthy(ctx: Context) -> Match | None:
    last = ctx.invocations[-1] if ctx.invocations else None
    serving = last is not None and (last.ready_us is not None or bool(last.decode_entries))
    return Match(0.9 if serving else 0.6, (), {"serving": serving})


RULES: tuple[Rule, ...] = (
    Rule("gpu_hardware_xid", _xid, "first: a GPU that reported an Xid needs draining whatever the engine "
         "said, also when the unit recovered or exited 0 (the NCCL/CUDA errors that follow are symptoms)"),
    Rule("host_oom_kill", _host_oom, "before every engine error: the dead worker and broken pipes that follow "
         "a kernel OOM kill are consequences"),
    Rule("stop_timeout_sigkill", _stop_timeout, "only when the stop came before any failure; before "
         "operator_action because the hang on shutdown is what needs fixing"),
    Rule("operator_action", _operator, "only when the stop came before any failure (restarting a crashed "
         "unit does not make it an operator incident)"),
    Rule("gpu_memory_held_by_stale_process", _stale_holder, "before the memory labels, but only with "
         "ownership evidence and only for a failure before ready"),
    Rule("port_in_use", _port, "before argument/model errors: the bind fails before any model work"),
    Rule("bad_argument", _bad_argument, "before model loading: the parser runs first"),
    Rule("model_load_failure", _model_load, "hub/file errors explain the exceptions that wrap them"),
    Rule("nccl_failure", _nccl, "before memory: a collective failure is the root; loses to Xid and port"),
    Rule("kv_cache_oom", _kv_cache, "memory sizing before ready, outside graph capture"),
    Rule("cuda_graph_capture_oom", _capture, "an OOM in the capture phase; a non-OOM capture failure "
         "is engine_exception"),
    Rule("cuda_oom_runtime", _runtime_oom, "an OOM after ready (a holder from before the start cannot "
         "explain it)"),
    Rule("segfault", _segfault, "a native crash, also with HTTP still up"),
    Rule("engine_exception", _engine_exception, "a real exception (not a wrapper) none of the above explains"),
    Rule("unknown", _unknown, "an incident without a line that names a cause: an honest unknown"),
    Rule("healthy", _healthy, "nothing above applies"),
)


def decide(ctx: Context) -> tuple[str, Match]:
    """The first rule whose test matches; `unknown` when its confidence is below `UNSURE`."""
    for rule in RULES:
        match = rule.test(ctx)
        if match is None:
            continue
        if match.confidence < UNSURE and rule.label not in {"unknown", "healthy"}:
            return "unknown", Match(match.confidence, match.lines, {"unsure_of": rule.label})
        return rule.label, match
    raise AssertionError("the healthy row always matches")  # pragma: no cover
