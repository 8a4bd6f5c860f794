"""Fixtures for the incident tests: a lightweight simulated host (the sim's SSH server, its
`journalctl`/`systemctl` tools and its journal writer, without the GPU supervisor) and a client."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from handlers.contract import Reply
from services.hosts.contract import HostSpec
from services.hosts.ssh import SshHost
from simhost.journal import JournalWriter
from simhost.ssh import SimSshServer, start_ssh_server
from simhost.tools.install import install_tools

UNIT = "sglang.service"


@dataclass
class JournalHost:
    """The sim's SSH server serving a journal this test writes with the sim's writer."""

    root: Path
    server: SimSshServer
    writer: JournalWriter
    host: SshHost

    def spec(self, name: str = "sim-1") -> HostSpec:
        return make_spec(name, self.server)


def make_spec(name: str, server: SimSshServer, unit: str = UNIT) -> HostSpec:
    return HostSpec(name=name, address=server.host, port=server.port, user=server.user,
                    client_key=server.client_key, known_hosts=server.known_hosts, unit=unit,
                    unit_dir="/etc/systemd/system", server_url="http://127.0.0.1:1")


async def start_journal_host(root: Path, name: str = "sim-1", *, extra_bin: Path | None = None) -> JournalHost:
    await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
    bin_dir = await asyncio.to_thread(install_tools, root / "bin")
    prefix = [extra_bin, bin_dir] if extra_bin is not None else [bin_dir]
    server = await start_ssh_server(root, env={"SIMHOST_DIR": str(root), "HOME": str(root)},
                                    path_prefix=prefix)
    writer = JournalWriter(root, name)
    host = SshHost(make_spec(name, server), keepalive_interval=2.0, keepalive_count_max=2)
    return JournalHost(root, server, writer, host)


async def stop_journal_host(jh: JournalHost) -> None:
    await jh.host.close()
    await jh.server.close()
    jh.writer.close()




_SERVER_SCRIPT = r"""
import asyncio, signal, sys
from pathlib import Path
from simhost.ssh import start_ssh_server

async def main():
    root = Path(sys.argv[1]); prefix = [Path(p) for p in sys.argv[2].split(":")]
    server = await start_ssh_server(root, env={"SIMHOST_DIR": str(root), "HOME": str(root)},
                                    path_prefix=prefix, port=int(sys.argv[3]))
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGUSR1, lambda: loop.create_task(server.drop_connections()))
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    print(server.port, flush=True)
    await stop.wait()
    await server.close()

asyncio.run(main())
"""


@dataclass
class ServerProcess:
    """The sim's SSH server in its own process (so a heavy test uses both CPU cores)."""

    proc: asyncio.subprocess.Process
    port: int
    root: Path

    def drop_connections(self) -> None:
        self.proc.send_signal(signal.SIGUSR1)

    async def close(self) -> None:
        if self.proc.returncode is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


async def spawn_ssh_server(root: Path, *, port: int = 0) -> ServerProcess:
    """Start the sim's SSH server for `root` (tools installed in `root/bin`) in a child process."""
    await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
    bin_dir = await asyncio.to_thread(install_tools, root / "bin")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _SERVER_SCRIPT, str(root), str(bin_dir), str(port),
        stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 20)
    return ServerProcess(proc, int(line), root)


def spec_for(name: str, root: Path, port: int, unit: str = UNIT) -> HostSpec:
    ssh = root / "ssh"
    return HostSpec(name=name, address="127.0.0.1", port=port, user="pitcrew", client_key=ssh / "client_key",
                    known_hosts=ssh / "known_hosts", unit=unit, unit_dir="/etc/systemd/system",
                    server_url="http://127.0.0.1:1")


@dataclass
class Sent:
    key: str
    reply: Reply
    thread_of: str | None
    at: float


class RecordingOutbox:
    """An `Outbox` that records what would be sent (key, reply, thread parent, monotonic time)."""

    def __init__(self) -> None:
        self.sent: list[Sent] = []

    async def send(self, key: str, reply: Reply, *, channel: str, thread_of: str | None = None) -> None:
        self.sent.append(Sent(key, reply, thread_of, time.monotonic()))

    def main_keys(self) -> list[str]:
        return sorted({s.key for s in self.sent if s.thread_of is None and s.key.startswith("incident:")})

    def thread(self, key: str) -> list[Sent]:
        return [s for s in self.sent if s.thread_of == key]


def spec_from_sim(info: dict[str, object], name: str) -> HostSpec:
    return HostSpec(name=name, address=str(info["ssh_host"]), port=int(str(info["ssh_port"])),
                    user=str(info["user"]), client_key=Path(str(info["client_key"])),
                    known_hosts=Path(str(info["known_hosts"])), unit=str(info["unit"]),
                    unit_dir=str(info["unit_dir"]), server_url=str(info["server_url"]), sudo=bool(info.get("sudo")))


async def wait_for(cond: Callable[[], bool], limit_s: float, what: str) -> None:
    deadline = time.monotonic() + limit_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
