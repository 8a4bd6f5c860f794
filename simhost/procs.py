"""Process helpers of the simulated host: process-group members, comm names, quiet kills.

Stdlib only. A unit's processes are its process group (the supervisor starts the main process in a
new session), standing in for the unit's cgroup; a process that left the group (a stale holder)
is outside the unit, as a process that escaped the cgroup would be.
"""

from __future__ import annotations

import os
import signal


def comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return "?"


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and bool(fields) and fields[0] not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """Live pids whose process group is `pgid` (main process first)."""
    if pgid <= 0:
        return []
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _stat(int(name))
        if fields and fields[0] not in ("Z", "X") and fields[2] == str(pgid):
            found.append(int(name))
    found.sort(key=lambda p: (p != pgid, p))
    return found


def kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def kill_group(pgid: int, sig: int) -> None:
    if pgid <= 0:
        return
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


def cpu_seconds(pid: int) -> float:
    fields = _stat(pid)
    if not fields:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(x) for x in fields[11:15]) / ticks


def set_comm(name: str, die_with_parent: bool = True) -> None:
    """prctl(PR_SET_NAME) and, optionally, PR_SET_PDEATHSIG=SIGKILL (no orphans if the sim dies)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)
        if die_with_parent:
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass
