"""The GPU ledger behind the sim's `nvidia-smi`: who holds how much memory on which GPU.

Each holder is a file `DIR/gpu/holders/<pid>.json` (`{"pid", "start", "name", "mib": {gpu: MiB},
"util": {gpu: %}}`), written atomically by the process that holds the memory (or, for a stale
holder, by whoever spawned it). Memory counts only while that pid is alive and is the same process
(start time from `/proc/PID/stat` recorded): a process that dies, however it dies, releases its
memory — as a CUDA context does. The host's shape (GPU count, memory per GPU, name) is in
`DIR/gpu/gpus.json`. Stdlib only: `nvidia-smi` and the fake server import it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

GPU_NAME = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
DEFAULT_MEMORY_MIB = 97887


@dataclass(frozen=True)
class Holder:
    pid: int
    name: str
    mib: dict[int, int]
    util: dict[int, int]


def gpu_dir(root: Path) -> Path:
    return root / "gpu"


def write_shape(root: Path, count: int, memory_mib: int, name: str = GPU_NAME) -> None:
    path = gpu_dir(root)
    (path / "holders").mkdir(parents=True, exist_ok=True)
    _atomic_write(path / "gpus.json", {"count": count, "memory_mib": memory_mib, "name": name})


def read_shape(root: Path) -> dict[str, object]:
    try:
        data: dict[str, object] = json.loads((gpu_dir(root) / "gpus.json").read_text())
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


def hold(root: Path, pid: int, name: str, mib: dict[int, int], util: dict[int, int] | None = None,
         invocation: str = "", proc: str = "/proc") -> None:
    """Record (or update) what `pid` holds (written by the holder or its parent; `pid` as `proc` numbers it)."""
    start = proc_start_time(pid, proc)
    if start is None:
        return
    _atomic_write(gpu_dir(root) / "holders" / f"{pid}.json",
                  {"pid": pid, "start": start, "name": name, "mib": {str(k): v for k, v in mib.items()},
                   "util": {str(k): v for k, v in (util or {}).items()}, "invocation": invocation})


def records_of_invocation(root: Path, invocation: str) -> list[dict[str, object]]:
    """Raw holder records of one unit invocation, dead or alive (for the stale-holder fault)."""
    found: list[dict[str, object]] = []
    folder = gpu_dir(root) / "holders"
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if invocation and data.get("invocation") == invocation:
            data["_path"] = str(path)
            found.append(data)
    return found


def release(root: Path, pid: int) -> None:
    try:
        (gpu_dir(root) / "holders" / f"{pid}.json").unlink()
    except OSError:
        pass


def holders(root: Path) -> list[Holder]:
    """Live holders only (a dead process's file is ignored; the supervisor removes it)."""
    found: list[Holder] = []
    folder = gpu_dir(root) / "holders"
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return found
    for fname in names:
        if not fname.endswith(".json"):
            continue
        path = folder / fname
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        pid = int(data["pid"])
        if proc_start_time(pid) != data.get("start"):
            continue
        found.append(Holder(pid=pid, name=str(data.get("name", "python3")),
                            mib={int(k): int(v) for k, v in data.get("mib", {}).items()},
                            util={int(k): int(v) for k, v in data.get("util", {}).items()}))
    return found


def used_mib(root: Path, exclude_pid: int | None = None) -> dict[int, int]:
    shape = read_shape(root)
    used = {i: 0 for i in range(int(str(shape["count"])))}
    for holder in holders(root):
        if holder.pid == exclude_pid:
            continue
        for gpu, mib in holder.mib.items():
            if gpu in used:
                used[gpu] += mib
    return used


def _atomic_write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
