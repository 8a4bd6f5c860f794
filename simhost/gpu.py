"""The GPU ledger behind the sim's `nvidia-smi`: who holds how much memory on which GPU.

Each holder is a file `DIR/gpu/holders/<pid>.json` (`{"pid", "start", "name", "mib": {gpu: MiB},
"util": {gpu: %}}`), written atomically by the process that holds the memory (or, for a stale
holder, by whoever spawned it). Memory counts only while that pid is alive and is the same process
(start time from `/proc/PID/stat` recorded): a process that dies, however it dies, releases its
memory — as a CUDA context does. The host's shape (GPU count, memory per GPU, name) is in
`DIR/gpu/gpus.json`. Stdlib only: `nvidia-smi` and the fake server import it.

A process per `nvidia-smi` call (~900 per `make test`, the bot's GPU probes): no pathlib or dataclasses here (their
imports, with inspect, enum and re, were two thirds of a call's 30 ms of CPU); paths are strings or path-likes.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

GPU_NAME = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
DEFAULT_MEMORY_MIB = 97887


class Holder:
    """A live holder: its pid and name, and the MiB and utilization % it has on each GPU."""

    __slots__ = ("mib", "name", "pid", "util")

    def __init__(self, pid: int, name: str, mib: dict[int, int], util: dict[int, int]) -> None:
        self.pid, self.name, self.mib, self.util = pid, name, mib, util

    def __repr__(self) -> str:
        return f"Holder(pid={self.pid}, name={self.name!r}, mib={self.mib}, util={self.util})"


def gpu_dir(root: str | Path) -> str:
    return os.path.join(root, "gpu")


def write_shape(root: str | Path, count: int, memory_mib: int, name: str = GPU_NAME) -> None:
    path = gpu_dir(root)
    os.makedirs(os.path.join(path, "holders"), exist_ok=True)
    _atomic_write(os.path.join(path, "gpus.json"), {"count": count, "memory_mib": memory_mib, "name": name})


def read_shape(root: str | Path) -> dict[str, object]:
    try:
        with open(os.path.join(gpu_dir(root), "gpus.json")) as fh:
            data: dict[str, object] = json.loads(fh.read())
        return data
    except (OSError, ValueError):
        return {"count": 4, "memory_mib": DEFAULT_MEMORY_MIB, "name": GPU_NAME}


def proc_start_time(pid: int, proc: str = "/proc") -> str | None:
    """Field 22 of /proc/PID/stat (None when the process is gone or a zombie). `proc`: another PID namespace's
    procfs (a real-systemd host's, `/proc/<its pid 1>/root/proc`, seen from outside)."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    tail = stat[stat.rfind(")") + 2:].split()
    if not tail or tail[0] in ("Z", "X"):
        return None
    return tail[19]


def proc_comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return "?"


def hold(root: str | Path, pid: int, name: str, mib: dict[int, int], util: dict[int, int] | None = None,
         invocation: str = "", proc: str = "/proc") -> None:
    """Record (or update) what `pid` holds (written by the holder or its parent; `pid` as `proc` numbers it)."""
    start = proc_start_time(pid, proc)
    if start is None:
        return
    _atomic_write(os.path.join(gpu_dir(root), "holders", f"{pid}.json"),
                  {"pid": pid, "start": start, "name": name, "mib": {str(k): v for k, v in mib.items()},
                   "util": {str(k): v for k, v in (util or {}).items()}, "invocation": invocation})


def _records(root: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """Every holder file that reads as JSON (its path, its record), by file name."""
    folder = os.path.join(gpu_dir(root), "holders")
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return []
    found = []
    for fname in names:
        path = os.path.join(folder, fname)
        try:
            with open(path) as fh:
                found.append((path, json.loads(fh.read())))
        except (OSError, ValueError):
            continue
    return found


def records_of_invocation(root: str | Path, invocation: str) -> list[dict[str, object]]:
    """Raw holder records of one unit invocation, dead or alive (for the stale-holder fault)."""
    found: list[dict[str, object]] = []
    for path, data in _records(root):
        if invocation and data.get("invocation") == invocation:
            data["_path"] = path
            found.append(data)
    return found


def release(root: str | Path, pid: int) -> None:
    try:
        os.unlink(os.path.join(gpu_dir(root), "holders", f"{pid}.json"))
    except OSError:
        pass


def holders(root: str | Path) -> list[Holder]:
    """Live holders only (a dead process's file is ignored; the supervisor removes it)."""
    found: list[Holder] = []
    for _path, data in _records(root):
        pid = int(data["pid"])
        if proc_start_time(pid) != data.get("start"):
            continue
        found.append(Holder(pid=pid, name=str(data.get("name", "python3")),
                            mib={int(k): int(v) for k, v in data.get("mib", {}).items()},
                            util={int(k): int(v) for k, v in data.get("util", {}).items()}))
    return found


def used_mib(root: str | Path, exclude_pid: int | None = None) -> dict[int, int]:
    shape = read_shape(root)
    used = {i: 0 for i in range(int(str(shape["count"])))}
    for holder in holders(root):
        if holder.pid == exclude_pid:
            continue
        for gpu, mib in holder.mib.items():
            if gpu in used:
                used[gpu] += mib
    return used


def _atomic_write(path: str, data: object) -> None:
    folder, name = os.path.split(path)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        fh.write(json.dumps(data))
    os.replace(tmp, path)
