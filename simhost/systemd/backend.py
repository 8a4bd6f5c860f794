"""The simulated host's service manager when it is systemd itself: boot, the engine unit, processes inside, teardown.

`RealSystemd` is what `SimHost(systemd="real")` uses in place of `simhost.supervisor.Supervisor` + the asyncssh
server: systemd 252 as PID 1 of private namespaces (`namespace.SystemdNamespace`), holding the host described
by `layout.HostLayout` (OpenSSH's sshd, sudo, journald, D-Bus, the engine unit). The engine unit is started
after the scenario's faults, as the sim's supervisor does. Processes the sim places on the host (a stale GPU
holder, a port squatter) run inside the namespace, so `ps`, `ss -p` and `nvidia-smi` there see them as a real
host's tools would.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from simhost.systemd.layout import UNIT_DIR, HostLayout
from simhost.systemd.namespace import SystemdNamespace

_READY_S = 30.0


@dataclass
class Placed:
    """A process the sim started inside the host: `proc` is our `nsenter`, `pid` its pid inside."""

    proc: subprocess.Popen[bytes]
    pid: int


@dataclass
class RealSystemd:
    layout: HostLayout
    state: Path
    ns: SystemdNamespace = field(init=False)
    placed: list[Placed] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ns = SystemdNamespace(self.state)

    @property
    def unit(self) -> str:
        return self.layout.unit

    @property
    def unit_path(self) -> Path:
        """The unit file as this machine reaches it (`/proc/<pid1>/root/etc/systemd/system/<unit>`)."""
        return self.ns.root / UNIT_DIR.lstrip("/") / self.unit

    async def boot(self) -> None:
        await self.ns.boot(self.layout.script(), [self.layout.sim_dir, self.layout.repo])
        await self._wait_sshd()

    async def _wait_sshd(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _READY_S
        while loop.time() < deadline:
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", self.layout.ssh_port), 1.0)
            except (OSError, TimeoutError):
                await asyncio.sleep(0.05)
                continue
            try:
                banner = await asyncio.wait_for(reader.readline(), 2.0)
            except (OSError, TimeoutError):
                banner = b""
            finally:
                writer.close()
            if banner.startswith(b"SSH-2.0-OpenSSH"):
                return
            await asyncio.sleep(0.05)
        _, out, _ = await self.ns.run(["journalctl", "-u", "pitcrew-sshd.service", "-n", "20", "--no-pager"])
        raise RuntimeError(f"sshd of the simulated host did not listen on port {self.layout.ssh_port}:\n{out}")

    async def systemctl(self, *args: str, timeout: float = 60.0) -> tuple[int, str]:  # noqa: ASYNC109
        rc, out, err = await self.ns.run(["systemctl", *args], timeout=timeout)
        return rc, out + err

    async def start(self) -> None:
        rc, out = await self.systemctl("start", "--no-block", self.unit)
        if rc != 0:
            raise RuntimeError(f"systemctl start {self.unit}: {out.strip()}")

    async def main_pid(self) -> int:
        """The unit's main pid as the host sees it (0 when it has none)."""
        _, out = await self.systemctl("show", self.unit, "-p", "MainPID", "--value")
        with contextlib.suppress(ValueError):
            return int(out.strip().splitlines()[0]) if out.strip() else 0
        return 0

    async def signal_main(self, signame: str) -> bool:
        pid = await self.main_pid()
        if not pid:
            return False
        rc, _, _ = await self.ns.run(["kill", f"-{signame}", str(pid)])
        return rc == 0

    def place(self, code: str, *args: str) -> Placed:
        """Run `python3 -S -c code args` inside the host; the code prints `ready <pid>` once it is in place."""
        proc = subprocess.Popen(self.ns.enter_argv(["/usr/bin/python3", "-S", "-c", code, *args]),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        assert proc.stdout is not None
        line = proc.stdout.readline().decode().split()
        if len(line) < 2 or line[0] != "ready":
            proc.kill()
            proc.wait()
            raise RuntimeError("could not place a process on the simulated host")
        placed = Placed(proc, int(line[1]))
        self.placed.append(placed)
        return placed

    def unplace(self) -> list[int]:
        """End every placed process (each dies with its `nsenter`: it asked for SIGKILL when its parent dies)."""
        pids = []
        for placed in self.placed:
            with contextlib.suppress(OSError):
                placed.proc.kill()
            with contextlib.suppress(Exception):
                placed.proc.wait(timeout=2)
            pids.append(placed.pid)
        self.placed.clear()
        return pids

    async def close(self) -> None:
        await asyncio.to_thread(self.unplace)
        await self.ns.close()


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def python_for_tools() -> str:
    """The interpreter the host's own tools run with (the host's, not this venv's: the login user must run it)."""
    return "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
