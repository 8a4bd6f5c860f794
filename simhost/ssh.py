"""The simulated host's SSH server (asyncssh): keys, exec of real ``bash -c``, confined SFTP.

Owns everything the bot sees of the simulated host at the SSH layer:

- key material under ``root/ssh/`` (host key, client key pair, ``authorized_keys``, the published
  ``known_hosts`` pin in ``[127.0.0.1]:port`` form), generated once and reused on restart;
  :func:`rotate_host_key` regenerates only the host key (for the key-change test);
- public-key authentication with the generated client key, for one user name;
- each exec request runs a real ``bash -c CMD`` (cwd ``root``, env = the given env plus
  ``PATH=<path_prefix>:<system PATH>``) in its own process group, stdin/stdout/stderr streamed
  as produced, exit status (or exit signal) returned; a signal request from the client is
  delivered to the whole process group; closing the channel or dropping the connection ends it
  (SIGTERM, then SIGKILL after a grace period), as does closing the server (a command that has
  already finished leaves its detached background children alone, as OpenSSH does);
  ``PYTHONUNBUFFERED=1`` is added unless given, so the simulator's Python tools stream lines;
- SFTP confined to ``root``: any path that resolves outside it is refused with a permission
  error; ``posix-rename@openssh.com`` and ``fsync@openssh.com`` are served.

Processes that must outlive the exec request (a supervised service) must start their own session
(``start_new_session=True``), otherwise closing the channel ends them too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh

_KILL_GRACE_S = 2.0
_READ_CHUNK = 65536
_KEY_ALG = "ssh-ed25519"


def _ssh_dir(root: Path) -> Path:
    return Path(root) / "ssh"


def _write_private_key(key: asyncssh.SSHKey, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    key.write_private_key(str(tmp))
    os.chmod(tmp, 0o600)
    key.write_public_key(str(tmp) + ".pub")
    os.replace(str(tmp) + ".pub", str(path) + ".pub")
    os.replace(tmp, path)


def _load_or_create(path: Path) -> asyncssh.SSHKey:
    if path.exists() and Path(str(path) + ".pub").exists():
        return asyncssh.read_private_key(str(path))
    key = asyncssh.generate_private_key(_KEY_ALG, comment=path.name)
    _write_private_key(key, path)
    return key


def rotate_host_key(root: Path) -> Path:
    """Regenerate the simulated host's host key under ``root/ssh/``; returns its path.

    A running server keeps the old key until it is restarted. ``known_hosts`` is rewritten with
    the new key by the next :func:`start_ssh_server`, so a test that wants a client to see a
    changed key must keep its own copy of the old ``known_hosts``.
    """
    path = _ssh_dir(root) / "host_key"
    key = asyncssh.generate_private_key(_KEY_ALG, comment="host_key")
    _write_private_key(key, path)
    return path


def known_hosts_line(host: str, port: int, public_key: asyncssh.SSHKey) -> str:
    """One ``known_hosts`` line for ``host:port`` (``[host]:port`` unless the port is 22)."""
    pattern = host if port == 22 else f"[{host}]:{port}"
    alg, blob = public_key.export_public_key("openssh").decode().split()[:2]
    return f"{pattern} {alg} {blob}"


class _ConfinedSFTPServer(asyncssh.SFTPServer):
    """SFTP with real absolute paths, refusing anything that resolves outside ``root``."""

    def __init__(self, chan: asyncssh.SSHServerChannel[bytes], root: Path) -> None:
        super().__init__(chan)
        self._root = os.path.realpath(root).encode()

    def _inside(self, real: bytes) -> bool:
        return real == self._root or real.startswith(self._root + b"/")

    def map_path(self, path: bytes) -> bytes:
        joined = posixpath.join(self._root, path)
        real = os.path.realpath(joined)
        if not self._inside(real):
            raise asyncssh.SFTPPermissionDenied("Permission denied: path is outside the host directory")
        return real

    def reverse_map_path(self, path: bytes) -> bytes:
        return path

    def symlink(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPPermissionDenied("Permission denied: symlinks are not served")

    def link(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPPermissionDenied("Permission denied: links are not served")


class _AuthServer(asyncssh.SSHServer):
    def __init__(self, owner: SimSshServer) -> None:
        self._owner = owner
        self._conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn
        self._owner._connections.add(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._conn is not None:
            self._owner._connections.discard(self._conn)

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return False

    def kbdint_auth_supported(self) -> bool:
        return False

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return username == self._owner.user and (
            key.public_data == self._owner._client_pub.public_data
        )


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@dataclass(eq=False)
class SimSshServer:
    """A running simulated SSH server; ``await close()`` stops it and ends every remote process."""

    host: str
    port: int
    user: str
    client_key: Path
    client_public_key: Path
    host_key: Path
    known_hosts: Path
    root: Path
    _client_pub: asyncssh.SSHKey
    _env: dict[str, str]
    _acceptor: Any = None
    _connections: set[asyncssh.SSHServerConnection] = field(default_factory=set)
    _groups: set[int] = field(default_factory=set)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def drop_connections(self) -> None:
        """Abort every open client connection (a network reset); the listener keeps running."""
        for conn in list(self._connections):
            conn.abort()
        await asyncio.sleep(0)

    async def close(self) -> None:
        if self._acceptor is not None:
            self._acceptor.close()
            with contextlib.suppress(Exception):
                await self._acceptor.wait_closed()
            self._acceptor = None
        for conn in list(self._connections):
            conn.abort()
        for pgid in list(self._groups):
            _killpg(pgid, signal.SIGKILL)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=_KILL_GRACE_S + 1)

    async def __aenter__(self) -> SimSshServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- exec -------------------------------------------------------------------------------

    async def _handle_process(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._run_command(process)
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def _run_command(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        command = process.command
        if command is None:
            process.stderr.write(b"pitcrew sim: interactive shells are not supported\n")
            process.exit(1)
            return
        try:
            proc = await asyncio.create_subprocess_exec(
                "bash", "-c", command,
                cwd=str(self.root), env=self._env,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True,
            )
        except OSError as exc:
            process.stderr.write(f"pitcrew sim: cannot start bash: {exc}\n".encode())
            process.exit(127)
            return
        pgid = proc.pid
        self._groups.add(pgid)
        assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None

        async def pump_out(src: asyncio.StreamReader, dst: asyncssh.SSHWriter[bytes]) -> None:
            while True:
                data = await src.read(_READ_CHUNK)
                if not data:
                    return
                try:
                    dst.write(data)
                    await dst.drain()
                except (OSError, asyncssh.Error):
                    # The channel is gone: keep draining so the process never blocks on a full pipe.
                    continue

        async def pump_in() -> None:
            stdin = proc.stdin
            assert stdin is not None
            while True:
                try:
                    data = await process.stdin.read(_READ_CHUNK)
                except asyncssh.SignalReceived as sig:
                    signum = getattr(signal, f"SIG{sig.signal}", None)
                    if isinstance(signum, signal.Signals):
                        _killpg(pgid, signum)
                    continue
                except asyncssh.BreakReceived:
                    _killpg(pgid, signal.SIGINT)
                    continue
                except asyncssh.TerminalSizeChanged:
                    continue
                except (asyncssh.Error, OSError):
                    break  # the channel or connection is gone
                if not data:
                    break
                try:
                    stdin.write(data)
                    await stdin.drain()
                except (BrokenPipeError, ConnectionResetError):
                    break
            with contextlib.suppress(OSError):
                stdin.close()

        async def reap_on_close() -> None:
            await process.wait_closed()
            if proc.returncode is None:
                _killpg(pgid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), _KILL_GRACE_S)
                except TimeoutError:
                    _killpg(pgid, signal.SIGKILL)
            # Anything left in the group (backgrounded children) goes too.
            _killpg(pgid, signal.SIGKILL)

        out_task = asyncio.create_task(pump_out(proc.stdout, process.stdout))
        err_task = asyncio.create_task(pump_out(proc.stderr, process.stderr))
        in_task = asyncio.create_task(pump_in())
        close_task = asyncio.create_task(reap_on_close())
        try:
            await asyncio.gather(out_task, err_task)
            returncode = await proc.wait()
        finally:
            in_task.cancel()
            self._groups.discard(pgid)
        if not process.is_closing():
            with contextlib.suppress(OSError, asyncssh.Error):
                if returncode < 0:
                    name = signal.Signals(-returncode).name.removeprefix("SIG")
                    process.exit_with_signal(name)
                else:
                    process.exit(returncode)
        # As with OpenSSH, detached leftovers of a finished command (`daemon >/dev/null &`) live on.
        close_task.cancel()


def prepare_keys(root: Path) -> tuple[Path, asyncssh.SSHKey, asyncssh.SSHKey]:
    """Create (or reuse) the key files under ``root/ssh/``; returns ``(resolved root, host key,
    client key)``. Also used by `simhost.openssh` so both servers share one identity layout."""
    root = root.resolve()
    ssh_dir = _ssh_dir(root)
    ssh_dir.mkdir(parents=True, exist_ok=True)
    host_key = _load_or_create(ssh_dir / "host_key")
    client_key = _load_or_create(ssh_dir / "client_key")
    (ssh_dir / "authorized_keys").write_text((ssh_dir / "client_key.pub").read_text())
    return root, host_key, client_key


async def start_ssh_server(
    root: Path,
    *,
    env: Mapping[str, str],
    path_prefix: Sequence[Path],
    host: str = "127.0.0.1",
    port: int = 0,
    user: str = "pitcrew",
) -> SimSshServer:
    """Start the simulated host's SSH server on ``host:port`` (0 = a free port) serving ``root``."""
    root, host_key, client_key = await asyncio.to_thread(prepare_keys, Path(root))
    ssh_dir = _ssh_dir(root)
    client_key_path = ssh_dir / "client_key"
    host_key_path = ssh_dir / "host_key"
    client_pub_path = Path(str(client_key_path) + ".pub")

    system_path = os.environ.get("PATH") or os.defpath
    full_env = dict(env)
    full_env["PATH"] = ":".join([*(str(p) for p in path_prefix), system_path])
    full_env.setdefault("PYTHONUNBUFFERED", "1")

    server = SimSshServer(
        host=host, port=0, user=user,
        client_key=client_key_path, client_public_key=client_pub_path,
        host_key=host_key_path, known_hosts=ssh_dir / "known_hosts", root=root,
        _client_pub=client_key, _env=full_env,
    )
    acceptor = await asyncssh.listen(
        host, port,
        server_factory=lambda: _AuthServer(server),
        server_host_keys=[host_key],
        process_factory=server._handle_process,
        sftp_factory=lambda chan: _ConfinedSFTPServer(chan, root),
        allow_scp=False,
        encoding=None,
        agent_forwarding=False,
        x11_forwarding=False,
        allow_pty=False,
        keepalive_interval=30,
    )
    server._acceptor = acceptor
    server.port = acceptor.get_port()
    line = known_hosts_line(host, server.port, host_key) + "\n"
    await asyncio.to_thread(server.known_hosts.write_text, line)
    return server
