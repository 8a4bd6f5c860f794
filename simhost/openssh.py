"""A real OpenSSH ``sshd`` serving the simulated host's command environment (tests only).

`start_openssh_server` runs ``/usr/sbin/sshd -D -e`` on a claimed loopback port with its own config
file under ``root/ssh/`` (never the system's). The host key and client key are the files
`simhost.ssh.start_ssh_server` uses, so both servers can serve one simulated host side by side;
this server's pin is published in ``root/ssh/known_hosts_openssh``. ``SetEnv`` gives sessions
the same environment (given env + ``PATH=<path_prefix>:<system PATH>``; pass ``HOME`` to keep
bash from sourcing the real user's ``~/.bashrc``; SFTP starts there too). Differences that are OpenSSH's own:
sessions start in the user's home directory (not ``root``) under the user's login shell, SFTP is not
confined, closing a channel does not end its process, and "signal" requests are refused for
root logins (`services.hosts.ssh` copes with both). The returned `OpenSshServer` has the same
attributes and methods as `simhost.ssh.SimSshServer`, plus ``pid``, ``config`` and ``log``.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import shutil
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from simhost import ports
from simhost.ssh import known_hosts_line, prepare_keys

SSHD = "/usr/sbin/sshd"
_START_TIMEOUT_S = 10.0


def sshd_path() -> str | None:
    """The sshd binary, or None when OpenSSH's server is not installed."""
    found = SSHD if os.access(SSHD, os.X_OK) else shutil.which("sshd")
    return found


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            text = Path(f"/proc/{current}/task/{current}/children").read_text()
        except OSError:
            continue
        children = [int(x) for x in text.split()]
        found.extend(children)
        stack.extend(children)
    return found


def _setenv_value(name: str, value: str) -> str:
    if any(c in name + value for c in '"\n\r\x00\\'):
        raise ValueError(f"environment variable {name} cannot be passed through sshd's SetEnv")
    return f'"{name}={value}"'


@dataclass(eq=False)
class OpenSshServer:
    """A running sshd started by `start_openssh_server`."""

    host: str
    port: int
    user: str
    client_key: Path
    client_public_key: Path
    host_key: Path
    known_hosts: Path
    root: Path
    config: Path
    log: Path
    _proc: asyncio.subprocess.Process
    _claimed: int = 0  # the port `simhost.ports` claimed for it (0: the caller's own), released at close

    @property
    def pid(self) -> int:
        return self._proc.pid

    async def drop_connections(self) -> None:
        """Kill every per-connection sshd process (and its sessions); the listener keeps running."""
        for pid in _descendants(self._proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.05)

    async def close(self) -> None:
        children = _descendants(self._proc.pid)
        if self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.terminate()
            try:
                await asyncio.wait_for(self._proc.wait(), 5)
            except TimeoutError:
                self._proc.kill()
                await self._proc.wait()
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self._claimed:
            ports.release_port(self._claimed)
            self._claimed = 0

    async def __aenter__(self) -> OpenSshServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _write_config(
    root: Path, host: str, port: int, env: Mapping[str, str], path_prefix: Sequence[Path]
) -> tuple[Path, Path]:
    ssh_dir = root / "ssh"
    with contextlib.suppress(OSError):  # sshd's privilege separation directory (needs root)
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    system_path = os.environ.get("PATH") or os.defpath
    full_env = dict(env)
    full_env["PATH"] = ":".join([*(str(p) for p in path_prefix), system_path])
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    setenv = " ".join(_setenv_value(k, v) for k, v in full_env.items())
    config = ssh_dir / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                f"ListenAddress {host}",
                f"HostKey {ssh_dir / 'host_key'}",
                f"AuthorizedKeysFile {ssh_dir / 'authorized_keys'}",
                f"PidFile {ssh_dir / 'sshd.pid'}",
                "UsePAM no",
                "StrictModes no",
                "PermitRootLogin yes",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "AllowAgentForwarding no",
                "AllowTcpForwarding no",
                "X11Forwarding no",
                "PrintMotd no",
                "MaxStartups 100",
                "LogLevel INFO",
                f"SetEnv {setenv}",
                # SFTP starts where the sessions' HOME is, as on a host whose passwd home that is: sshd would start
                # it in the real user's home (here /root, shared by every test: a sudo upload stages its file in the
                # SFTP start directory, and a test that checked /root for leftovers saw another test's, session 18)
                f"Subsystem sftp internal-sftp -d {_sftp_dir(full_env.get('HOME'))}",
                "",
            ]
        )
    )
    return config, ssh_dir / "sshd.log"


def _sftp_dir(home: str | None) -> str:
    """internal-sftp's start directory (`-d`, %-expanded by sshd): the given HOME, else the user's home (`%d`)."""
    return "%d" if home is None else home.replace("%", "%%")


async def _listening(host: str, port: int) -> bool:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 1.0)
    except (OSError, TimeoutError):
        return False
    try:
        banner = await asyncio.wait_for(reader.readline(), 2.0)
    except (OSError, TimeoutError):
        banner = b""
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return banner.startswith(b"SSH-2.0-OpenSSH")


async def start_openssh_server(
    root: Path,
    *,
    env: Mapping[str, str],
    path_prefix: Sequence[Path],
    host: str = "127.0.0.1",
    port: int = 0,
    user: str | None = None,
) -> OpenSshServer:
    """Start sshd for ``root``'s keys on ``host:port`` (0: a port claimed with `simhost.ports`, released at close);
    raises if it cannot start."""
    binary = sshd_path()
    if binary is None:
        raise FileNotFoundError("sshd is not installed")
    root, host_key, _client_key = await asyncio.to_thread(prepare_keys, Path(root))
    ssh_dir = root / "ssh"
    attempts = 1 if port else 5
    last_error = ""
    for _ in range(attempts):
        chosen = port or ports.claim_port(host)
        config, log = await asyncio.to_thread(_write_config, root, host, chosen, env, path_prefix)
        with open(log, "ab") as log_file:  # noqa: ASYNC230 - opening a local log file
            proc = await asyncio.create_subprocess_exec(
                binary, "-D", "-e", "-f", str(config),
                stdin=asyncio.subprocess.DEVNULL, stdout=log_file, stderr=log_file,
            )
        deadline = asyncio.get_running_loop().time() + _START_TIMEOUT_S
        while proc.returncode is None and asyncio.get_running_loop().time() < deadline:
            if await _listening(host, chosen):
                known = known_hosts_line(host, chosen, host_key) + "\n"
                await asyncio.to_thread((ssh_dir / "known_hosts_openssh").write_text, known)
                return OpenSshServer(
                    host=host, port=chosen, user=user or getpass.getuser(),
                    client_key=ssh_dir / "client_key", client_public_key=ssh_dir / "client_key.pub",
                    host_key=ssh_dir / "host_key", known_hosts=ssh_dir / "known_hosts_openssh",
                    root=root, config=config, log=log, _proc=proc, _claimed=0 if port else chosen,
                )
            await asyncio.sleep(0.02)
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        if not port:
            ports.release_port(chosen)
        last_error = (await asyncio.to_thread(log.read_text, errors="replace"))[-500:]
    raise RuntimeError(f"sshd did not start: {last_error}")
