"""A systemd 252 booted as PID 1 of private namespaces on a throwaway overlay of `/` (the real service manager).

`SystemdNamespace.boot()` starts `boot.sh` under ``unshare --pid --mount --uts --ipc --cgroup --kill-child``
(PID, mount, hostname, IPC and cgroup namespaces; the network namespace is shared, so the host's loopback is
the simulated host's). Safety, in this order:

- the overlay's writable layer is a tmpfs mounted on our own state directory inside the new mount namespace,
  so no write inside ever reaches the real root (``systemd-tmpfiles --remove`` empties the overlay's private
  ``/tmp``, never the machine's);
- the setup script removes, in the overlay only, every ``*.wants`` directory, the default target and the
  generators, so nothing of the image (PostgreSQL, timers, getty, udev) is started: systemd boots a target of
  ours that pulls in journald, D-Bus, sshd and the engine unit alone; ``container=`` tells it that it runs in
  a container (no kernel modules, no clock, no kmsg);
- every cgroup it creates lives below ``pitcrew-sim-<token>`` in each hierarchy (the cgroup namespace's root),
  removed at teardown;
- the launcher asks the kernel to SIGKILL it when the process that started it dies (``PR_SET_PDEATHSIG``), and
  ``unshare --kill-child`` then kills PID 1, which ends every process of the namespace; teardown kills exactly
  that pid and waits until PID 1 and every cgroup are gone.

`unavailable()` says why a machine cannot do this (not root, no systemd 252, no namespaces, no overlayfs,
no sshd/sudo/dbus), so callers fall back to the Python supervisor and say so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SYSTEMD_BIN = "/lib/systemd/systemd"
BOOT_SCRIPT = Path(__file__).with_name("boot.sh")
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "pitcrew-sim-"
_NEEDED = {"unshare": "util-linux", "nsenter": "util-linux", "/usr/sbin/sshd": "openssh-server",
           "/usr/bin/sudo": "sudo", "/usr/bin/dbus-daemon": "dbus", "/usr/sbin/useradd": "passwd"}
# Sets PR_SET_PDEATHSIG (1) to SIGKILL, then becomes the launcher: if the process that started the namespace
# dies without tearing it down, the kernel kills `unshare`, whose --kill-child then kills PID 1.
_LAUNCH = ("import ctypes,os,sys\n"
           "ctypes.CDLL(None).prctl(1,9,0,0,0)\n"
           "n=int(sys.argv[1])\n"
           "for f in sys.argv[2:2+n]:\n"
           "    with open(f,'w') as h: h.write(str(os.getpid()))\n"
           "os.execvp('unshare',['unshare','--pid','--fork','--mount','--uts','--ipc','--cgroup',\n"
           "          '--kill-child=SIGKILL','--propagation','private','bash',*sys.argv[2+n:]])\n")


def systemd_version() -> int:
    """systemd's major version (0 when it is not installed or does not answer)."""
    try:
        out = subprocess.run([SYSTEMD_BIN, "--version"], capture_output=True, text=True, timeout=10).stdout
        return int(out.split()[1])
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return 0


def unavailable() -> str | None:
    """Why real systemd cannot be booted here, or None when it can."""
    if sys.platform != "linux":
        return "not Linux"
    if os.geteuid() != 0:
        return "booting systemd in namespaces needs root"
    if os.environ.get("SIMHOST_SYSTEMD", "").lower() == "python":
        return "SIMHOST_SYSTEMD=python"
    if not os.access(SYSTEMD_BIN, os.X_OK):
        return f"{SYSTEMD_BIN} is not installed"
    for tool, package in _NEEDED.items():
        if (shutil.which(tool) if "/" not in tool else (tool if os.access(tool, os.X_OK) else None)) is None:
            return f"{tool} is missing (apt-get install {package})"
    try:
        if "overlay" not in Path("/proc/filesystems").read_text():
            return "the kernel has no overlayfs"
    except OSError:
        return "/proc/filesystems is unreadable"
    if not (CGROUP_ROOT / "systemd").is_dir() and not (CGROUP_ROOT / "cgroup.controllers").exists():
        return "no cgroup hierarchy systemd can use"
    for ns in ("pid", "mnt", "uts", "ipc", "cgroup"):
        if not Path(f"/proc/self/ns/{ns}").exists():
            return f"the kernel has no {ns} namespaces"
    return None


def _own_cgroups() -> dict[Path, str]:
    """Each mounted hierarchy's directory -> this process's cgroup path in it (cpuset left out: a v1 cpuset child
    needs cpus and mems before it can take a task, and systemd does not use it)."""
    mounts: dict[str, Path] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fstype, _src, opts = [*right.split(), "", "", ""][:3]
        target = Path(left.split()[4])
        if not str(target).startswith(str(CGROUP_ROOT)):
            continue
        if fstype == "cgroup2":
            mounts[""] = target
        elif fstype == "cgroup":
            names = [o for o in opts.split(",") if o not in ("rw", "ro", "relatime", "nosuid", "nodev", "noexec")]
            mounts[",".join(sorted(names))] = target
    found: dict[Path, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _hid, controllers, path = line.split(":", 2)
        key = "" if controllers == "" else ",".join(sorted(controllers.split(",")))
        if "cpuset" in key.split(","):
            continue
        mounted = mounts.get(key)
        if mounted is not None:
            found[mounted] = path
    return found


@dataclass
class SystemdNamespace:
    """One booted systemd (see the module docstring). `pid1` is PID 1's pid as this machine sees it."""

    state: Path
    token: str = field(default_factory=lambda: secrets.token_hex(5))
    pid1: int = 0
    _launcher: asyncio.subprocess.Process | None = None
    _cgroups: list[Path] = field(default_factory=list)

    @property
    def root(self) -> Path:
        """The namespace's `/` seen from outside (read and write its files through this)."""
        return Path(f"/proc/{self.pid1}/root")

    @property
    def console(self) -> Path:
        return self.state / "console.log"

    async def boot(self, setup: str, binds: list[Path], *, within: float = 30.0) -> None:
        """Boot systemd; returns once PID 1 answers `systemctl` (units may still be starting)."""
        self.state.mkdir(parents=True, exist_ok=True)
        setup_path = self.state / "setup.sh"
        setup_path.write_text(setup)
        (self.state / "token").write_text(self.token)  # which cgroups are this host's (pitcrew-sim-<token>)
        procs_files = []
        await asyncio.to_thread(reap_orphaned_cgroups)
        for group in host_cgroups(self.token):
            group.mkdir(parents=True, exist_ok=True)
            self._cgroups.append(group)
            procs_files.append(str(group / "cgroup.procs"))
        args = [str(BOOT_SCRIPT), str(self.state), str(setup_path), *(str(b) for b in binds)]
        with open(self.console, "ab") as console:  # noqa: ASYNC230 - a local log file, opened once
            self._launcher = await asyncio.create_subprocess_exec(
                sys.executable, "-S", "-c", _LAUNCH, str(len(procs_files)), *procs_files, *args,
                stdin=asyncio.subprocess.DEVNULL, stdout=console, stderr=console, start_new_session=True)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while loop.time() < deadline:
            if self._launcher.returncode is not None:
                raise RuntimeError(f"systemd did not boot: {self._console_tail()}")
            if not self.pid1:
                self.pid1 = self._pid1()
            if self.pid1 and (await self.run(["systemctl", "is-system-running"], timeout=5.0))[1].strip() in (
                    "running", "degraded", "starting"):
                return
            await asyncio.sleep(0.05)
        raise RuntimeError(f"systemd did not answer within {within:.0f} s: {self._console_tail()}")

    def _pid1(self) -> int:
        assert self._launcher is not None
        try:
            children = Path(f"/proc/{self._launcher.pid}/task/{self._launcher.pid}/children").read_text().split()
        except OSError:
            return 0
        for child in children:
            try:
                if Path(f"/proc/{child}/exe").resolve().name == "systemd":
                    return int(child)
            except OSError:
                continue
        return 0

    def _console_tail(self) -> str:
        try:
            return self.console.read_text(errors="replace")[-1500:]
        except OSError:
            return ""

    def enter_argv(self, argv: list[str]) -> list[str]:
        """`argv` run inside the namespace (its mounts, PIDs, hostname, IPC and cgroups) as root."""
        return ["nsenter", "-t", str(self.pid1), "-m", "-u", "-i", "-p", "-C", "--", *argv]

    async def run(self, argv: list[str], *, input: bytes | None = None,
                  timeout: float = 30.0) -> tuple[int, str, str]:  # noqa: ASYNC109
        """Run `argv` inside as root; (exit code, stdout, stderr). A timeout kills it and raises TimeoutError."""
        proc = await asyncio.create_subprocess_exec(
            *self.enter_argv(argv), stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(input), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise
        return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")

    async def close(self, *, within: float = 10.0) -> None:
        """Kill PID 1 (and with it every process inside), then remove our cgroups and state. Idempotent."""
        launcher, self._launcher = self._launcher, None
        pid1 = self.pid1
        if pid1:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid1, signal.SIGKILL)
        if launcher is not None:
            # `unshare` reaps PID 1, and PID 1 is reaped only after every process of its namespace is gone
            try:
                await asyncio.wait_for(launcher.wait(), within)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    launcher.kill()
                await launcher.wait()
        await asyncio.to_thread(self._reap, within)

    def _reap(self, within: float) -> None:
        deadline = time.monotonic() + within
        for group in self._cgroups:  # every process of ours was in these; wait until the kernel has emptied them
            while time.monotonic() < deadline and _members(group):
                time.sleep(0.02)
        for group in self._cgroups:
            _remove_tree(group)
        self._cgroups.clear()
        shutil.rmtree(self.state / "ovl", ignore_errors=True)


def host_cgroups(token: str) -> list[Path]:
    """Where the cgroups of the host booted with `token` live (one per hierarchy), whether or not they exist."""
    return [hierarchy / own.lstrip("/") / f"{CGROUP_PREFIX}{token}" for hierarchy, own in _own_cgroups().items()]


def reap_orphaned_cgroups(min_age_s: float = 60.0) -> int:
    """Remove the `pitcrew-sim-*` cgroups of hosts whose owner died without a teardown (SIGKILL): empty and older
    than `min_age_s` (a host booting right now has a fresh, possibly still empty one). Returns how many."""
    removed = 0
    for hierarchy, own in _own_cgroups().items():
        parent = hierarchy / own.lstrip("/")
        try:
            groups = [p for p in parent.iterdir() if p.name.startswith(CGROUP_PREFIX)]
        except OSError:
            continue
        for group in groups:
            try:
                age = time.time() - group.stat().st_mtime
            except OSError:
                continue
            if age >= min_age_s and not _members(group):
                _remove_tree(group)
                removed += not group.exists()
    return removed


def _tree(group: Path) -> list[Path]:
    """`group` and every cgroup below it, deepest first (a tree other hosts' teardowns may be changing: what
    vanishes while it is walked is skipped)."""
    found = [Path(top) for top, _dirs, _files in os.walk(group, onerror=lambda _e: None)]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def _members(group: Path) -> bool:
    for cgroup in _tree(group):
        with contextlib.suppress(OSError):
            if (cgroup / "cgroup.procs").read_text().strip():
                return True
    return False


def _remove_tree(group: Path) -> None:
    for cgroup in _tree(group):
        with contextlib.suppress(OSError):
            cgroup.rmdir()
