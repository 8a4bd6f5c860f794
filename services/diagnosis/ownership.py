"""Who owns the GPU memory a failed start ran short of: the unit's own processes or a stale holder.

A process of the unit itself — MainPID, a descendant of it (scheduler, `VLLM::EngineCore`, workers), a pid
that wrote to this invocation's journal, anything in the unit's cgroup — is **never** a stale holder. A
holder is only named when ownership can be established: `process_info` (ps: ppid, cgroup) shows a pid
outside the unit, or systemd itself says `Found left-over process N ... in control group while starting
unit` (a leftover of an earlier invocation). Without that evidence `Ownership.established` is False and
nobody is told to end a process.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from services.diagnosis.invocations import Invocation
from services.diagnosis.side import ProcessInfo, SideEvidence, parse_time

_TORCH_HOLDER = re.compile(r"Process (\d+) has ([\d.]+ [GM]iB) memory in use")


@dataclass(frozen=True, slots=True)
class Holder:
    """A process outside the unit that holds GPU memory."""

    pid: int
    who: str


@dataclass(frozen=True, slots=True)
class Ownership:
    """What the evidence says about the GPU memory's owners."""

    holders: tuple[Holder, ...]
    established: bool  # process tree/cgroup (or systemd's left-over line) was available
    candidates: int  # pids seen holding memory (nvidia-smi, torch's OOM message) that are not the unit's own


def own_pids(inv: Invocation, side: SideEvidence, unit: str) -> set[int]:
    """MainPID, the pids that wrote this invocation's lines, their descendants and the unit's cgroup."""
    main_pid = side.systemctl_show.get("MainPID")
    leftover = {ev.pid for ev in inv.leftovers if ev.pid is not None}
    own = set(inv.pids) - leftover
    if main_pid and main_pid.isdigit() and main_pid != "0":
        own.add(int(main_pid))
    for _ in range(4):  # children, grandchildren... of the unit's processes are the unit's own
        own |= {
            p.pid
            for p in side.process_info
            if p.pid not in leftover
            and ((p.ppid is not None and p.ppid in own) or (_in_cgroup(p.cgroup, unit) and not _older(p, inv)))
        }
    return own


def _in_cgroup(cgroup: str | None, unit: str) -> bool:
    return bool(cgroup) and (cgroup or "").rstrip("/").endswith(f"/{unit}")


def _older(p: ProcessInfo, inv: Invocation) -> bool:
    """Started well before this invocation (a left-over of an earlier run still in the cgroup)."""
    started = parse_time(p.started)
    return started is not None and inv.start_us > 0 and started.timestamp() * 1e6 < inv.start_us - 5e6


def ownership(inv: Invocation, side: SideEvidence, unit: str, earlier: Sequence[Invocation] = ()) -> Ownership:
    """The stale holders of GPU memory at this invocation's failure, when ownership can be established.

    `earlier`: the unit's invocations before `inv`; a pid that wrote to one of them (and not to `inv`) is a
    process of an earlier run, which the journal itself proves."""
    own = own_pids(inv, side, unit)
    procs = {p.pid: p for p in side.process_info}
    past = {pid for i in earlier if i is not inv and i.start_us < inv.start_us for pid in i.pids} - own
    holders: list[Holder] = []
    seen: set[int] = set()
    candidates = 0
    for app in side.nvidia_smi_apps:
        p = procs.get(app.pid)
        if app.pid in own or app.pid in seen or (p is not None and p.exited):
            continue  # one holder per process (nvidia-smi lists it once per GPU); a zombie's memory is released
        candidates += 1
        if p is None and app.pid in past:
            holders.append(Holder(app.pid, f"pid {app.pid} ({app.process_name} of an earlier run of the unit"
                                  + (f", {app.used_memory_mib} MiB)" if app.used_memory_mib is not None else ")")))
            seen.add(app.pid)
            continue
        if p is None:
            continue  # no ps facts (or gone by then): ownership of this pid is not established
        who = f"pid {app.pid} ({p.cmdline or app.process_name}"
        who += f", user {p.user}" if p.user else ""
        who += f", cgroup {p.cgroup}" if p.cgroup else ""
        who += f", {app.used_memory_mib} MiB" if app.used_memory_mib is not None else ""
        holders.append(Holder(app.pid, who + ")"))
        seen.add(app.pid)
    for entry in inv.sig("foreign_gpu_process"):
        for pid_s, mem in _TORCH_HOLDER.findall(entry.message):
            pid = int(pid_s)
            if pid in own or pid in seen:
                continue
            candidates += 1
            p = procs.get(pid)
            if p is not None:
                holders.append(Holder(pid, f"pid {pid} ({p.cmdline or '?'}, user {p.user or '?'}, {mem} on the GPU)"))
                seen.add(pid)
    for ev in inv.leftovers:
        if ev.pid is not None and ev.pid not in seen and ev.pid not in own:
            holders.append(Holder(ev.pid, f"pid {ev.pid} ({ev.comm}, left over from an earlier run of the unit)"))
            seen.add(ev.pid)
    established = bool(side.process_info) or bool(inv.leftovers) or bool(past & {a.pid for a in side.nvidia_smi_apps})
    return Ownership(tuple(holders), established, candidates)
