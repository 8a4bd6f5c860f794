"""What diagnosis says to a person: the summary and recommendation of each label.

Only this host's own facts are quoted (its unit file's flags, its recorded actions, its own `Decode
batch`/throughput figures, the pids and Xid it logged); no figures from elsewhere. A process is only named
for ending when its ownership was established (`services.diagnosis.ownership`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from services.diagnosis.decide import Context, Match, root_exception
from services.diagnosis.evidence import FLAGS_FOR, unit_flags
from services.diagnosis.invocations import Invocation, short_time
from services.diagnosis.ownership import Ownership, own_pids, ownership
from services.diagnosis.side import RanBefore, SideEvidence
from services.engines import DEFAULT_ENGINE, Engine, detect_engine, find_engine
from services.errors import PitcrewError
from services.units import read_exec_start


@dataclass(frozen=True)
class Words:
    summary: str
    recommendation: str
    config_change: str | None = None
    ran_before: RanBefore | None = None
    stale_pids: tuple[int, ...] = ()


def config_change(ctx: Context) -> tuple[str | None, bool]:
    """(text naming the suspected configuration change, whether a recorded deploy/rollback backs it)."""
    side: SideEvidence = ctx.side
    first = ctx.incidents[0].start_us if ctx.incidents else None
    deploys = [
        a for a in side.actions
        if a.action in {"deploy", "rollback"} and (first is None or a.at.timestamp() * 1e6 <= first + 5e6)
    ]
    parts = []
    if deploys:
        a = deploys[-1]
        parts.append((f"{a.detail}, " if a.detail else "") + f"{a.action} by {a.who} at "
                     f"{short_time(int(a.at.timestamp() * 1e6))}")
    flags = unit_flags(side.unit_file, ("speculative-num-steps", "speculative-eagle-topk"))
    if flags and "--speculative-num-steps" in flags:
        parts.append(f"the unit runs {flags}")
    return ("; ".join(parts) if parts else None), bool(deploys)


def engine_of(ctx: Context) -> Engine:
    """The engine of the unit file's ExecStart= (`services.engines.detect_engine`); without a readable one, the engine
    that claimed the journal's lines (vLLM's are recognisable), else the default engine (SGLang)."""
    if ctx.side.unit_file:
        try:
            found = find_engine(detect_engine(read_exec_start(ctx.side.unit_file).argv))
        except PitcrewError:  # no single ExecStart= in the text we were given
            found = None
        if found is not None:
            return found
    return next((inv.engine for inv in ctx.invocations if inv.engine is not None), DEFAULT_ENGINE)


def _times(ctx: Context) -> str:
    n = len(ctx.incidents)
    return f"{n} failed starts in a row" if n > 1 else "one failure so far"


def _last_good(ctx: Context) -> RanBefore | None:
    """This host's own figures: what the latest invocation that served achieved."""
    for inv in reversed(ctx.invocations):
        ran = inv.ran_before()
        if ran is not None:
            return ran
    return None


def _focus(ctx: Context) -> Invocation:
    assert ctx.focus is not None
    return ctx.focus


def _xid(ctx: Context, m: Match) -> Words:
    what = f"Xid {m.facts['xid']} on PCI {m.facts['pci']}" if m.facts.get("xid") else "a lost/ECC-failed GPU"
    if m.facts.get("text"):
        what += f": {m.facts['text']}"
    state = "the unit recovered, but " if ctx.mode != "failure" else ""
    return Words(f"The GPU reported a hardware fault ({what}); {state}the GPU needs draining and a reset.",
                 "Drain the host: stop the unit, reset the GPU (nvidia-smi -r) or reboot; check power/PCIe/"
                 "thermals, and RMA the card if the Xid repeats.")


def _host_oom(ctx: Context, m: Match) -> Words:
    return Words(f"The Linux OOM killer ended {ctx.unit} (host RAM or the unit's memory limit ran out): "
                 f"{_times(ctx)}.",
                 "Give the unit more host memory (MemoryMax=, fewer CPU-side caches, smaller --cpu-offload-gb) "
                 "or move other memory users off the host, then start it again.")


def _who_stopped(inv: Invocation) -> str:
    act = inv.stop_action
    if act is None:
        return f"a stop request at {short_time(inv.stop_requested_us or inv.end_us)} (no recorded pitcrew action)"
    asked = "" if act.who == "pitcrew" else f" asked by {act.who}"
    detail = f" ({act.detail})" if act.detail else ""
    return f"pitcrew's own {act.action}{asked} at {short_time(int(act.at.timestamp() * 1e6))}{detail}"


def _stop_timeout(ctx: Context, m: Match) -> Words:
    inv = ctx.stopped or _focus(ctx)
    ran = inv.ran_before()
    waited = ""
    if inv.stop_timeout is not None and inv.stopping is not None:
        waited = f" after {(inv.stop_timeout.realtime_us - inv.stopping.realtime_us) / 1e6:.0f} s"
    before = f" Before that {ran.describe()}." if ran else ""
    return Words(f"Not a crash: {ctx.unit} was stopped by {_who_stopped(inv)}; it did not exit within the stop "
                 f"timeout and systemd sent SIGKILL{waited}.{before}",
                 "No fault in the configuration. Let the stop drain first (stop the load, or raise TimeoutStopSec "
                 "above the longest request) and never overlap one round's teardown with the next start.",
                 ran_before=ran)


def _operator(ctx: Context, m: Match) -> Words:
    inv = ctx.stopped or _focus(ctx)
    ran = inv.ran_before()
    before = f" Before that {ran.describe()}." if ran else ""
    return Words(f"{ctx.unit} was stopped deliberately by {_who_stopped(inv)} and shut down.{before}",
                 "Nothing to fix: start the unit again if it should be serving.", ran_before=ran)


def _stale(ctx: Context, m: Match) -> Words:
    own: Ownership = m.facts["ownership"]
    pids = tuple(dict.fromkeys(h.pid for h in own.holders))
    who = "; ".join(h.who for h in own.holders[:3])
    return Words(f"Another process holds the GPU memory {ctx.unit} needs: {who}. The new instance runs out of "
                 f"memory at start ({_times(ctx)}); the configuration is not the cause.",
                 f"Check the owner of {', '.join(map(str, pids))} and stop it, confirm with nvidia-smi that the "
                 f"memory is free, then start {ctx.unit} again.", stale_pids=pids)


def _ownership_note(ctx: Context) -> str:
    inv = ctx.focus
    if inv is None or not (ctx.side.nvidia_smi_apps or inv.sig("foreign_gpu_process", "gpu_memory_taken")):
        return ""
    own = ownership(inv, ctx.side, ctx.unit, ctx.invocations)
    if own.established or (not own.candidates and not inv.sig("gpu_memory_taken")):
        return ""
    return (" Whether another process holds the GPU memory could not be established (no process-tree/"
            "cgroup evidence), so no process is named for ending.")


def _port(ctx: Context, m: Match) -> Words:
    inv = _focus(ctx)
    own = own_pids(inv, ctx.side, ctx.unit)
    listeners = [ln for ln in ctx.side.ss_listen if ln.pid is not None and ln.pid not in own]
    who = "; ".join(f"{ln.local} held by pid {ln.pid} ({ln.process or '?'}, user {ln.user or '?'})"
                    for ln in listeners[:2])
    pids = tuple(dict.fromkeys(ln.pid for ln in listeners if ln.pid is not None))
    if pids:
        advice = (f"Check the owner of {', '.join(map(str, pids))} and stop it, or give the server another "
                  "--port / distributed port, then start again.")
    else:
        advice = ("Find what listens on the address (ss -ltnp on the host), or give the server another --port / "
                  "distributed port, then start again.")
    return Words(f"{ctx.unit} cannot bind an address: another process already listens on it"
                 + (f" ({who})" if who else "") + f"; {_times(ctx)}.", advice, stale_pids=pids)


def _simple(summary: str, advice: str) -> Callable[[Context, Match], Words]:
    def words(ctx: Context, m: Match) -> Words:
        change, deployed = config_change(ctx)
        since = f" since the change: {change}" if change and deployed else (f"; {change}" if change else "")
        text = summary.format(unit=ctx.unit, times=_times(ctx), since=since)
        return Words(text + _ownership_note(ctx), advice, config_change=change)
    return words


# a memory label's words when the failed start ran on the CPU (`Invocation.device`): its memory is the host's, and the
# GPU memory fraction sizes nothing there
ON_CPU = {
    "kv_cache_oom": ("The configuration of {unit} leaves too little memory for the KV cache at start ({times}){since}"
                     "; it runs on the CPU, where the KV cache is host memory of a set size.",
                     "Roll back to the previous unit revision, or give the KV cache room: {spec}, a shorter {len} "
                     "or a larger {kv_space}."),
}


def _memory(summary: str, advice: str, label: str) -> Callable[[Context, Match], Words]:
    """Memory labels: the advice names this engine's flags (`{mem}`, `{len}`, ... of `Engine.advice_flags`); a start
    on the CPU gets `ON_CPU`'s words where its label has them."""

    def words(ctx: Context, m: Match) -> Words:
        flags = dict(engine_of(ctx).advice_flags)
        text = summary, advice
        if ctx.focus is not None and ctx.focus.device == "cpu" and label in ON_CPU:
            text = ON_CPU[label]
            flags.setdefault("kv_space", "the KV cache's memory")
        w = _simple(text[0], text[1].format(**flags))(ctx, m)
        unit_set = unit_flags(ctx.side.unit_file, FLAGS_FOR[label])
        ran = _last_good(ctx) if label == "cuda_oom_runtime" else None
        extra = f" The unit runs {unit_set}." if unit_set else ""
        extra += f" Before the failure {ran.describe()}." if ran else ""
        return Words(w.summary + extra, w.recommendation, w.config_change, ran)
    return words


def _engine_exception(ctx: Context, m: Match) -> Words:
    root = root_exception(_focus(ctx))
    name = root.entry.message if root else "an exception"
    name = name.rsplit("] ", 1)[-1].split(":", 1)[0].strip()
    ran = _last_good(ctx)
    return Words(f"The serving engine of {ctx.unit} died of {name}: {_times(ctx)}"
                 + (f" (before that {ran.describe()})" if ran else "") + ".",
                 "Read the root exception; roll back the last change if the failure started with it, otherwise "
                 "report it upstream with the traceback.", ran_before=ran)


def _unknown(ctx: Context, m: Match) -> Words:
    inv = ctx.focus
    if inv is not None and inv.suppressed and not inv.sig_lines:
        dropped = sum(ev.dropped or 0 for ev in inv.suppressed)
        return Words(f"{ctx.unit} failed but journald rate-limited its log ({dropped} messages dropped): the "
                     "lines that would say why are gone.",
                     "Raise journald's RateLimitBurst/RateLimitIntervalSec (or the unit's LogRateLimit*), restart "
                     "once and read the failure again.")
    if inv is None:
        return Words(f"No entries of {ctx.unit} in the window.",
                     f"Export the unit's journal with `journalctl -u {ctx.unit} -o json` and try again.")
    unsure = m.facts.get("unsure_of")
    hint = f" (it might be {unsure}, but the evidence is too weak)" if unsure else ""
    return Words(f"{ctx.unit} failed ({_times(ctx)}, last at {short_time(inv.end_us)}) but no line names a "
                 f"cause{hint}; the most telling lines are quoted.",
                 f"Read the full log: journalctl -u {ctx.unit} -o short-precise --since '-15 min'; check "
                 "nvidia-smi and dmesg (journalctl -k).")


def _healthy(ctx: Context, m: Match) -> Words:
    last = ctx.invocations[-1] if ctx.invocations else None
    ran = last.ran_before() if last else None
    state = "serving" if m.facts.get("serving") else "starting (not yet ready)"
    after = ""
    if ctx.stopped is not None and ctx.stopped is not last:
        after = f" after a deliberate stop by {_who_stopped(ctx.stopped)}"
    return Words(f"No failure of {ctx.unit} in the window; it is {state}{after}"
                 + (f": {ran.describe()}." if ran else "."), "Nothing to do.", ran_before=ran)


WORDS: dict[str, Callable[[Context, Match], Words]] = {
    "gpu_hardware_xid": _xid,
    "host_oom_kill": _host_oom,
    "stop_timeout_sigkill": _stop_timeout,
    "operator_action": _operator,
    "gpu_memory_held_by_stale_process": _stale,
    "port_in_use": _port,
    "bad_argument": _simple("The command line of {unit} is rejected before any model work ({times}){since}.",
                            "Fix the ExecStart flags (a typo or a flag this engine version does not know) or "
                            "roll back to the previous unit revision."),
    "model_load_failure": _simple("{unit} cannot resolve or read its model (hub access, offline mode, missing "
                                  "or corrupt files): {times}.",
                                  "Check the model path/revision on the host (config.json, *.safetensors, "
                                  "tokenizer), hub access (HF_TOKEN for gated repos, HF_HUB_OFFLINE with a "
                                  "complete local snapshot), re-download corrupt shards."),
    "nccl_failure": _simple("NCCL communication between the GPUs of {unit} failed: {times}.",
                            "Check the GPUs' interconnect and NCCL settings (NCCL_DEBUG=INFO, /dev/shm size, "
                            "NCCL_P2P_DISABLE/NCCL_IB_DISABLE), and that no GPU is missing."),
    "kv_cache_oom": _memory("The configuration of {unit} leaves too little GPU memory for the KV cache at start "
                            "({times}){since}.",
                            "Roll back to the previous unit revision, or give the KV cache room: {spec}, a "
                            "shorter {len} or a higher {mem}.", "kv_cache_oom"),
    "cuda_graph_capture_oom": _memory("{unit} ran out of GPU memory while capturing CUDA graphs at start "
                                      "({times}){since}.",
                                      "Capture fewer/smaller CUDA graphs ({graphs}) or leave graph memory (a "
                                      "lower {mem}), or roll back the last change.", "cuda_graph_capture_oom"),
    "cuda_oom_runtime": _memory("{unit} ran out of GPU memory while serving, after it was ready ({times}).",
                                "Leave more headroom for activations: lower {mem}, {seqs} or {chunk}.",
                                "cuda_oom_runtime"),
    "segfault": _simple("{unit} crashed natively (no Python exception): {times}.",
                        "Collect the core dump (coredumpctl info), check driver/CUDA/torch versions against the "
                        "engine's, and roll back the last change if the crash started with it."),
    "engine_exception": _engine_exception,
    "unknown": _unknown,
    "healthy": _healthy,
}


def words_for(label: str, ctx: Context, match: Match) -> Words:
    return WORDS[label](ctx, match)
