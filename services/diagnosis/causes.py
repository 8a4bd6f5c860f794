"""The rules for failing invocations (ended badly without a stop request), in their order, and their helpers
(the suspected configuration change, the kernel lines of the failure's time window, stale GPU holders).

Order (most specific and most foundational first): journald dropped the evidence → `unknown`; a GPU
that fell off the bus or reported an uncorrectable ECC Xid → `gpu_hardware_xid`; the Linux OOM killer →
`host_oom_kill`; a memory failure while another visible process holds GPU memory →
`gpu_memory_held_by_stale_process` (wins over the next three); not enough memory for the KV cache at
start → `kv_cache_oom`; CUDA graph capture out of memory → `cuda_graph_capture_oom`; CUDA OOM after the
server was ready → `cuda_oom_runtime`; port taken → `port_in_use`; rejected command line →
`bad_argument`; weights/tokenizer → `model_load_failure`; NCCL → `nccl_failure`; other Xids →
`gpu_hardware_xid`; native crash → `segfault`; a Python exception → `engine_exception`; else `unknown`.
"""

from __future__ import annotations

import re

from services.diagnosis.invocations import (
    KERNEL_OOM_RX,
    MEMORY_SIGS,
    STRONG_XIDS,
    XID_RX,
    Finding,
    Invocation,
    exit_lines,
    short_time,
)
from services.diagnosis.side import SideEvidence
from services.journal import JournalEntry

_OOM_PID_RX = re.compile(r"oom-kill:.*?[,:]pid=(\d+)")
_FLAG_RX = re.compile(
    r"--(speculative-num-steps|mem-fraction-static|context-length|speculative-eagle-topk|"
    r"speculative-num-draft-tokens|port|cuda-graph-max-bs|max-running-requests)[= ]+(\S+)"
)



def _config_change(invs: list[Invocation], side: SideEvidence) -> tuple[str | None, bool]:
    """(text naming the suspected configuration change, whether a recorded deploy/rollback backs it)."""
    first = invs[0].start_us if invs else None
    deploys = [
        a
        for a in side.actions
        if a.action in {"deploy", "rollback"} and (first is None or a.at.timestamp() * 1e6 <= first + 5e6)
    ]
    flags = dict(_FLAG_RX.findall(side.unit_file or ""))
    parts = []
    if deploys:
        a = deploys[-1]
        parts.append(
            (f"{a.detail}, " if a.detail else "") + f"{a.action} by {a.who} at "
            f"{short_time(int(a.at.timestamp() * 1e6))}"
        )
    steps = flags.get("speculative-num-steps")
    if steps is not None:
        text = f"the unit runs --speculative-num-steps {steps}"
        if flags.get("speculative-eagle-topk") == "1" and steps.isdigit():
            text += f" = {int(steps) + 1} draft tokens per request with --speculative-eagle-topk 1"
        parts.append(text)
    return ("; ".join(parts) if parts else None), bool(deploys)


def _kernel_window(kernel: list[JournalEntry], inv: Invocation) -> list[JournalEntry]:
    lo, hi = inv.start_us - 600_000_000, inv.end_us + 60_000_000
    return [k for k in kernel if lo <= k.realtime_us <= hi or not k.realtime_us]


def _stale_holders(inv: Invocation, side: SideEvidence, unit: str) -> list[tuple[int, str]]:
    main_pid = side.systemctl_show.get("MainPID")
    own = set(inv.pids) | ({int(main_pid)} if main_pid and main_pid.isdigit() and main_pid != "0" else set())
    procs = {p.pid: p for p in side.process_info}
    for _ in range(3):  # children and grandchildren of the unit's main process are the unit's own
        own |= {
            p.pid
            for p in side.process_info
            if (p.ppid is not None and p.ppid in own) or (p.cgroup and f"/{unit}" in p.cgroup)
        }
    holders = []
    for app in side.nvidia_smi_apps:
        if app.pid in own:
            continue
        p = procs.get(app.pid)
        if procs and p is None:
            continue  # gone by the time `ps` ran: a dying instance's process, not a lingering holder
        who = f"pid {app.pid} ({p.cmdline if p and p.cmdline else app.process_name}"
        who += f", user {p.user}" if p and p.user else ""
        who += f", {app.used_memory_mib} MiB" if app.used_memory_mib is not None else ""
        holders.append((app.pid, who + ")"))
    for e in inv.sig("foreign_gpu_process"):
        for pid_s, mem in re.findall(r"Process (\d+) has ([\d.]+ [GM]iB) memory in use", e.message):
            pid = int(pid_s)
            if pid not in own and pid not in {h[0] for h in holders}:
                holders.append((pid, f"pid {pid} ({mem} on the GPU)"))
    for ev in inv.leftovers:
        if ev.pid is not None and ev.pid not in {h[0] for h in holders}:
            holders.append((ev.pid, f"pid {ev.pid} ({ev.comm}, left over from an earlier run)"))
    return holders


def _lines(entries: list[JournalEntry], n: int = 2) -> list[str]:
    return [e.message for e in entries[:n]]


def _loop_text(failing: list[Invocation], looping: bool) -> str:
    n = len(failing)
    if n > 1:
        return f"{n} failed starts in a row"
    return "a restart loop" if looping else "one failure so far"


def failing_rules(
    unit: str, failing: list[Invocation], kernel: list[JournalEntry], side: SideEvidence, looping: bool
) -> Finding:
    """Diagnose the failing invocations; `failing[-1]` is the most recent."""
    inv = failing[-1]
    exits = exit_lines(inv)
    change, deployed = _config_change(failing, side)
    since = f" since the change: {change}" if change and deployed else (f"; {change}" if change else "")
    times = _loop_text(failing, looping)
    kwin = _kernel_window(kernel, inv)

    if inv.suppressed and not inv.sig_lines:
        dropped = sum(ev.dropped or 0 for ev in inv.suppressed)
        return Finding(
            "unknown",
            0.3,
            f"{unit} failed but journald rate-limited its log ({dropped} messages dropped): the lines "
            "that would say why are gone.",
            tuple([inv.suppressed[0].message, *exits, *_lines(list(inv.tail)[-2:])]),
            "Raise journald's RateLimitBurst/RateLimitIntervalSec (or the unit's LogRateLimit*), "
            "restart once and read the failure again.",
        )

    xids = [(k, XID_RX.search(k.message)) for k in kwin]
    strong = [(k, m) for k, m in xids if m and int(m.group(2)) in STRONG_XIDS]
    lost = inv.sig("gpu_lost") + [k for k in kwin if "fallen off the bus" in k.message]
    if strong or lost:
        ev = [k.message for k, _ in strong[:2]] + _lines(lost, 2) + exits[:1]
        what = (
            (f"Xid {strong[0][1].group(2)} on PCI {strong[0][1].group(1)}" if strong[0][1] else "Xid")
            if strong
            else "a lost GPU"
        )
        return Finding(
            "gpu_hardware_xid",
            0.9,
            f"The GPU failed ({what}); {unit} cannot start on this host until the GPU is reset: {times}.",
            tuple(ev),
            "Drain the host: reset the GPU (nvidia-smi -r) or reboot; check power/PCIe/thermals, "
            "and RMA the card if the Xid repeats.",
        )

    # the kernel's OOM lines count when they name one of the unit's pids or the unit's memory cgroup
    victims = {int(p) for k in kwin if f"/{unit}," in k.message + "," for p in _OOM_PID_RX.findall(k.message)}
    kernel_oom = [
        k
        for k in kwin
        if (m := KERNEL_OOM_RX.search(k.message))
        and (int(m.group(1)) in inv.pids or int(m.group(1)) in victims)
    ]
    if inv.oom_kill or inv.result == "oom-kill" or kernel_oom:
        ev = _lines(kernel_oom, 2) + [
            e.message for e in inv.events if e.kind in {"oom_kill", "failed_result"}
        ]
        return Finding(
            "host_oom_kill",
            0.9,
            f"The Linux OOM killer ended {unit} (host RAM or the unit's memory limit ran out): {times}.",
            tuple(ev),
            "Give the unit more host memory (MemoryMax=, fewer CPU-side caches, smaller "
            "--cpu-offload-gb) or move other memory users off the host, then start it again.",
            config_change=change,
        )

    memory = inv.sig(*MEMORY_SIGS, "graph_capture_failed")
    holders = _stale_holders(inv, side, unit) if memory else []
    if memory and holders:
        pids = tuple(dict.fromkeys(p for p, _ in holders))
        who = "; ".join(w for _, w in holders[:3])
        conf = 0.9 if side.nvidia_smi_apps else 0.75
        return Finding(
            "gpu_memory_held_by_stale_process",
            conf,
            f"Another process holds the GPU memory {unit} needs: {who}. The new instance runs out of "
            f"memory at start ({times}); the configuration is not the cause.",
            tuple(_lines(memory, 2) + exits[:1] + [e.message for e in inv.leftovers[:1]]),
            f"Stop the stale holder ({', '.join(map(str, pids))}) — check its owner first — confirm with "
            f"nvidia-smi that the memory is free, then start {unit} again.",
            config_change=change,
            stale_pids=pids,
        )

    kv = inv.sig("kv_not_enough")
    if kv:
        every = all(i.sig("kv_not_enough") for i in failing if i.line_count)
        conf = 0.92 if every and len(failing) > 1 else 0.82
        return Finding(
            "kv_cache_oom",
            conf,
            f"Every start of {unit} fails the same way: the configuration leaves too little GPU memory "
            f"for the KV cache ({times}){since}.",
            tuple(_lines(kv, 1) + exits[:1] + _lines(inv.sig("exception_line", "engine_exception"), 1)),
            "Roll back to the previous unit revision. This configuration cannot fit its KV cache: use "
            "fewer speculative steps (the measured plateau is 4-5), a shorter --context-length or a "
            "higher --mem-fraction-static.",
            config_change=change,
        )

    capture = inv.sig("graph_capture_failed")
    oom = inv.sig("cuda_oom")
    if capture and (oom or any("out of memory" in e.message for e in capture)):
        return Finding(
            "cuda_graph_capture_oom",
            0.9,
            f"{unit} ran out of GPU memory while capturing CUDA graphs at start ({times}){since}.",
            tuple(_lines(capture, 1) + _lines([e for e in oom if e not in capture], 1) + exits[:1]),
            "Lower --cuda-graph-max-bs (or --mem-fraction-static to leave graph memory), or roll back "
            "the last change.",
            config_change=change,
        )

    if oom:
        after_ready = [e for e in oom if inv.ready_us is not None and e.realtime_us >= inv.ready_us]
        if after_ready:
            ran = inv.ran_before()
            before = f" Before that {ran.describe()}." if ran else ""
            return Finding(
                "cuda_oom_runtime",
                0.85,
                f"{unit} ran out of GPU memory while serving, after it was ready ({times}).{before}",
                tuple(_lines(after_ready, 1) + _lines(inv.sig("engine_exception"), 1) + exits[:1]),
                "Leave more headroom for activations: lower --mem-fraction-static, "
                "--max-running-requests or --chunked-prefill-size.",
                ran_before=ran,
                config_change=change,
            )
        in_capture = bool(inv.sig("graph_capture_begin")) and not inv.sig("graph_capture_end")
        if in_capture:
            return Finding(
                "cuda_graph_capture_oom",
                0.75,
                f"{unit} ran out of GPU memory during CUDA graph capture at start ({times}){since}.",
                tuple(_lines(oom, 1) + _lines(inv.sig("graph_capture_begin"), 1) + exits[:1]),
                "Lower --cuda-graph-max-bs or --mem-fraction-static, or roll back the last change.",
                config_change=change,
            )
        return Finding(
            "kv_cache_oom",
            0.65,
            f"{unit} runs out of GPU memory at start, before serving ({times}){since}: the configuration "
            "leaves too little memory.",
            tuple(_lines(oom, 1) + exits[:1]),
            "Roll back to the previous unit revision, or reduce speculative steps / --context-length.",
            config_change=change,
        )

    port = inv.sig("port_in_use")
    if port:
        listeners = [ln for ln in side.ss_listen if ln.pid is not None and ln.pid not in inv.pids]
        who = "; ".join(
            f"{ln.local} held by pid {ln.pid} ({ln.process or '?'}, user {ln.user or '?'})"
            for ln in listeners[:2]
        )
        return Finding(
            "port_in_use",
            0.9,
            f"{unit} cannot bind its HTTP port: another process already listens on it"
            + (f" ({who})" if who else "")
            + f"; {times}.",
            tuple(_lines(port, 1) + _lines(inv.sig("init_failed"), 1) + exits[:1]),
            "Stop the process holding the port (or give the server another --port), then start again.",
            stale_pids=tuple(ln.pid for ln in listeners if ln.pid is not None),
        )

    bad = inv.sig("bad_argument")
    exec_fail = inv.exit is not None and inv.exit.exit_code == "exited" and inv.exit.exit_status == 203
    if bad or exec_fail or (inv.sig("usage_line") and inv.exit is not None and inv.exit.exit_status == 2):
        return Finding(
            "bad_argument",
            0.9 if bad else 0.7,
            f"The command line of {unit} is rejected before any model work ({times}){since}.",
            tuple(_lines(bad, 2) + exits[:1]),
            "Fix the ExecStart flags (typo or a flag this SGLang version does not know) or roll back "
            "to the previous unit revision.",
            config_change=change,
        )

    load = inv.sig("model_load")
    if load:
        return Finding(
            "model_load_failure",
            0.85,
            f"{unit} cannot load its model (weights, config or tokenizer missing, unreadable or "
            f"corrupt): {times}.",
            tuple(_lines(load, 2) + exits[:1]),
            "Check the model path and files on the host (config.json, *.safetensors, tokenizer), "
            "re-download corrupt shards, fix permissions.",
            config_change=change,
        )

    nccl = inv.sig("nccl")
    if nccl:
        return Finding(
            "nccl_failure",
            0.8,
            f"NCCL communication between the GPUs of {unit} failed: {times}.",
            tuple(_lines(nccl, 2) + exits[:1]),
            "Check the GPUs' interconnect and NCCL settings (NCCL_DEBUG=INFO, /dev/shm size, "
            "NCCL_P2P_DISABLE/NCCL_IB_DISABLE), and that no GPU is missing.",
            config_change=change,
        )

    weak = [(k, m) for k, m in xids if m]
    if weak:
        k, m = weak[0]
        return Finding(
            "gpu_hardware_xid",
            0.6,
            f"The kernel reported Xid {m.group(2)} on PCI {m.group(1)} when {unit} failed: {times}.",
            tuple([k.message, *exits[:1]]),
            "Xid 13/31/43 are often application faults: restart once; if it repeats across "
            "applications, reset the GPU.",
        )

    seg = inv.sig("segfault")
    dumped = inv.exit is not None and inv.exit.exit_code == "dumped"
    if seg or dumped or inv.result == "core-dump":
        return Finding(
            "segfault",
            0.85 if seg and dumped else 0.75,
            f"{unit} crashed natively (signal {inv.exit.signal if inv.exit else '?'}, no Python "
            f"exception): {times}.",
            tuple(_lines(seg, 2) + exits[:1]),
            "Collect the core dump (coredumpctl info), check driver/CUDA/torch versions against "
            "SGLang's, and roll back the last change if the crash started with it.",
            config_change=change,
        )

    exc = inv.sig("exception_line")
    engine = inv.sig("engine_exception")
    if exc or engine:
        ev = _lines(exc[-1:], 1) + _lines(engine, 1) + exits[:1]
        name = exc[-1].message.split(":", 1)[0].strip() if exc else "an exception"
        ran = inv.ran_before()
        return Finding(
            "engine_exception",
            0.7,
            f"The serving engine of {unit} raised {name}: {times}"
            + (f" (before that {ran.describe()})" if ran else "")
            + ".",
            tuple(ev),
            "Read the traceback; roll back the last change if the failure started with it, "
            "otherwise report it upstream with the traceback.",
            ran_before=ran,
            config_change=change,
        )

    tail = [e.message for e in list(inv.tail)[-3:]]
    return Finding(
        "unknown",
        0.3,
        f"{unit} failed ({times}) but its log shows no known signature; last lines and systemd's "
        f"verdict quoted (last failure at {short_time(inv.end_us)}).",
        tuple(tail + exits),
        f"Read the full log: journalctl -u {unit} -o short-precise --since "
        "'-15 min'; check nvidia-smi and dmesg.",
        config_change=change,
    )
