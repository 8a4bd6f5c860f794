"""`MemoryMax=` for the sim's own service manager: a memory cgroup of the machine for the unit's processes.

systemd puts a unit in its own cgroup and writes `MemoryMax=` to it; when the unit's processes use more, the
kernel's OOM killer kills one (SIGKILL), systemd logs `A process of this unit has been killed by the OOM
killer.` and the result is `oom-kill`. The supervisor does the same with a real cgroup beside its own process:
`memory.max` on cgroup v2, `memory.limit_in_bytes` on a v1 memory hierarchy; the OOM kills are counted by the
kernel (`memory.events` / `memory.oom_control`'s `oom_kill`). Where neither can be created (no permission, no
memory controller) the limit is not applied and `available()` says why.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

_V1 = Path("/sys/fs/cgroup/memory")
_V2 = Path("/sys/fs/cgroup")


def _own(controller: str) -> str | None:
    """This process's cgroup path in the hierarchy of `controller` ("" for the v2 unified one)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(",") or (controller == "" and ctrls == ""):
            return path
    return None


def _base() -> tuple[Path, str] | None:
    """(the directory new cgroups go under, "v1"|"v2") or None."""
    own = _own("memory")
    if own is not None and (_V1 / "memory.limit_in_bytes").exists():
        return _V1 / own.lstrip("/"), "v1"
    own2 = _own("")
    if own2 is not None and (_V2 / "cgroup.controllers").exists():
        parent = _V2 / own2.lstrip("/")
        if "memory" in (parent / "cgroup.subtree_control").read_text(errors="replace").split():
            return parent, "v2"
    return None


def parse_bytes(value: str) -> int | None:
    """systemd's `MemoryMax=` value in bytes (K/M/G/T are 1024-based); -1 for `infinity`; None when invalid."""
    v = value.strip()
    if v == "infinity":
        return -1
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    mult = units.get(v[-1:].upper(), 1) if v else 1
    digits = v[:-1] if v[-1:].upper() in units else v
    try:
        number = float(digits)
    except ValueError:
        return None
    return int(number * mult) if number >= 0 else None


class MemoryCgroup:
    """One unit's memory cgroup: `limit(bytes)`, `join_fn()` for the child, `oom_kills()`, `remove()`."""

    def __init__(self, unit: str) -> None:
        self.path: Path | None = None
        self.version = ""
        self.error = ""
        base = _base()
        if base is None:
            self.error = "no writable memory cgroup hierarchy"
            return
        parent, self.version = base
        path = parent / f"pitcrew-sim-{uuid.uuid4().hex[:8]}-{unit}"
        try:
            path.mkdir()
        except OSError as exc:
            self.error = f"cannot create {path}: {exc.strerror}"
            return
        self.path = path

    def limit(self, nbytes: int) -> None:
        assert self.path is not None
        if self.version == "v1":
            value = str(nbytes) if nbytes >= 0 else "-1"
            with contextlib.suppress(OSError):  # the swap limit must follow the memory limit (v1)
                (self.path / "memory.memsw.limit_in_bytes").write_text("-1")
            (self.path / "memory.limit_in_bytes").write_text(value)
            with contextlib.suppress(OSError):
                (self.path / "memory.memsw.limit_in_bytes").write_text(value)
        else:
            (self.path / "memory.max").write_text(str(nbytes) if nbytes >= 0 else "max")
            with contextlib.suppress(OSError):
                (self.path / "memory.swap.max").write_text("0")

    def join_path(self) -> str:
        assert self.path is not None
        return str(self.path / "cgroup.procs")

    def oom_kills(self) -> int:
        if self.path is None:
            return 0
        name = "memory.oom_control" if self.version == "v1" else "memory.events"
        try:
            text = (self.path / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def remove(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.rmdir(self.path)
            self.path = None


def join(procs_file: str) -> None:
    """In the child before exec: move this process into the cgroup (systemd starts the unit inside it)."""
    with open(procs_file, "w") as f:
        f.write(str(os.getpid()))
