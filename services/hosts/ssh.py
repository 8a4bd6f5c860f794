"""`SshHost`: the asyncssh implementation of the `Host` protocol.

One lazily opened SSH connection per host, shared by concurrent calls (at most ``max_channels``
channels at once: OpenSSH's default ``MaxSessions`` is 10). The host key is always checked
against ``spec.known_hosts``; the operator's ``~/.ssh/config`` and agent are never used.

Ending remote processes. OpenSSH does not end a session's process when its channel closes, and
refuses the "signal" channel request for root logins (no privilege separation after auth), so
neither is enough alone. Every command without ``input`` (and every stream) therefore runs under
a small POSIX ``sh`` watchdog: the command gets ``/dev/null`` as stdin while the watchdog reads
the channel's stdin, which the client never closes; when the channel closes (client gave up,
stream context exited, connection dropped) the watchdog sees EOF and sends SIGTERM to its
process group, then SIGKILL two seconds later. Commands with a deadline are also wrapped in
coreutils ``timeout --kill-after=2`` set a little past the caller's deadline (a backstop, and the
only guard for commands fed ``input``). On the caller's deadline the client sends SIGTERM over
the channel, closes it and raises `HostTimeout`. Processes run through ``sudo`` get the SIGTERM
(sudo relays it) but not the SIGKILL, which an unprivileged watchdog cannot send to root.

A connection found dropped when opening a channel is reopened once; a connection lost while a
command runs raises `HostUnreachable` (the command's outcome is unknown, so it is not re-run).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
import secrets
import signal
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

import asyncssh

from services.errors import CommandFailed, HostError, HostTimeout, HostUnreachable, SudoRefused
from services.hosts.conn import CONNECTION_ERRORS, END_WAIT_S, SshConnection, secs
from services.hosts.contract import (
    CommandResult,
    HostSpec,
    check_argv,
    check_remote_path,
    program_name,
    quote_argv,
    stderr_tail,
)
from services.hosts.sudoers import refusal

log = logging.getLogger("pitcrew.hosts")

_KILL_AFTER_S = 2
_REMOTE_MARGIN_S = 0.5
_TIMEOUT_EXIT = 124
# Runs "$@" with stdin from /dev/null and exits with its status. A watchdog (immune to SIGTERM)
# reads the channel's stdin; at EOF (the channel closed) it sends SIGTERM to the process group,
# then SIGKILL two seconds later. On a normal end the watchdog itself is killed.
_WATCHDOG = (
    'exec 3<&0; "$@" </dev/null 3<&- & c=$!; '
    "{ trap '' TERM; while read -r _; do :; done; kill -TERM 0; sleep 2; kill -KILL 0; } "
    '<&3 >/dev/null 2>&1 & w=$!; '
    'exec 3<&-; wait "$c"; s=$?; kill -KILL "$w" 2>/dev/null; exit "$s"'
)
_AFTER_DEADLINE_WAIT_S = 0.5  # past a deadline, wait only this long for the channel to close


def _exit_status(proc: asyncssh.SSHClientProcess[bytes]) -> int | None:
    if proc.exit_status is not None and proc.exit_status >= 0:
        return proc.exit_status
    if proc.exit_signal is not None:
        name = proc.exit_signal[0]
        number = getattr(signal, f"SIG{name}", None)
        return 128 + int(number) if number is not None else 255
    return None


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


class SshHost:
    """A `Host` reached with asyncssh (see the module docstring for the guarantees)."""

    def __init__(
        self,
        spec: HostSpec,
        *,
        connect_timeout: float = 10.0,
        on_command: Callable[[str], None] | None = None,
        keepalive_interval: float = 15.0,
        keepalive_count_max: int = 3,
        max_channels: int = 8,
    ) -> None:
        self._spec = spec
        self._on_command = on_command
        self._link = SshConnection(
            spec,
            connect_timeout=connect_timeout,
            keepalive_interval=keepalive_interval,
            keepalive_count_max=keepalive_count_max,
            max_channels=max_channels,
        )

    @property
    def spec(self) -> HostSpec:
        return self._spec

    def __repr__(self) -> str:
        return f"SshHost({self._spec.name!r}, {self._spec.user}@{self._spec.address}:{self._spec.port})"

    # -- connection ---------------------------------------------------------------------------

    def _label(self) -> str:
        return self._link.label()

    async def close(self) -> None:
        await self._link.close()

    # -- commands -----------------------------------------------------------------------------

    def _command(
        self, argv: Sequence[str], *, timeout: float | None, sudo: bool, watchdog: bool
    ) -> tuple[tuple[str, ...], str]:
        args = check_argv(argv)
        wrapped: list[str] = list(args)
        if sudo:
            wrapped = ["sudo", "-n", "--", *wrapped]
        if watchdog:
            wrapped = ["sh", "-c", _WATCHDOG, "sh", *wrapped]
        if timeout is not None:
            backstop = secs(timeout + _REMOTE_MARGIN_S)
            wrapped = ["timeout", f"--kill-after={_KILL_AFTER_S}", backstop, *wrapped]
        return args, quote_argv(wrapped)

    async def _start(
        self, command: str, argv: Sequence[str], deadline: float | None
    ) -> asyncssh.SSHClientProcess[bytes]:
        reported = False

        def opener(conn: asyncssh.SSHClientConnection) -> Awaitable[asyncssh.SSHClientProcess[bytes]]:
            nonlocal reported
            if self._on_command is not None and not reported:
                reported = True  # once per command, on a verified connection, before it is sent
                self._on_command(command)
            return conn.create_process(command, encoding=None)

        return await self._link.open(opener, deadline, program_name(argv))

    async def _end(self, proc: asyncssh.SSHClientProcess[bytes], wait: float = END_WAIT_S) -> None:
        """End a remote process: SIGTERM to its group, close the channel, wait briefly."""
        if not proc.is_closing():
            with contextlib.suppress(Exception):
                proc.send_signal("TERM")
        with contextlib.suppress(Exception):
            proc.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait_closed(), wait)

    def _lost(self, argv: Sequence[str]) -> HostUnreachable:
        return HostUnreachable(
            f"The connection to {self._label()} was lost while {program_name(argv)} ran; "
            "its outcome is unknown.",
            host=self._spec.name,
        )

    def _timed_out(self, argv: Sequence[str], timeout: float) -> HostTimeout:
        return HostTimeout(
            f"{program_name(argv)} on {self._label()} did not finish within {secs(timeout)}s; "
            "the remote process was ended.",
            host=self._spec.name,
            timeout_s=timeout,
        )

    async def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,  # noqa: ASYNC109 - the deadline is enforced remotely too
        input: bytes | None = None,
        check: bool = False,
        sudo: bool = False,
    ) -> CommandResult:
        args, command = self._command(argv, timeout=timeout, sudo=sudo, watchdog=input is None)
        started = time.monotonic()
        deadline = started + timeout
        async with self._link.slot(args, deadline):
            proc = await self._start(command, args, deadline)
            try:
                if input is not None:
                    proc.stdin.write(input)
                    proc.stdin.write_eof()
                out, err = await asyncio.wait_for(proc.communicate(), max(deadline - time.monotonic(), 0))
            except TimeoutError:
                await self._end(proc, _AFTER_DEADLINE_WAIT_S)
                raise self._timed_out(args, timeout) from None
            except CONNECTION_ERRORS:
                await self._end(proc)
                raise self._lost(args) from None
            except BaseException:
                await self._end(proc)
                raise
        duration = time.monotonic() - started
        status = _exit_status(proc)
        if status is None:
            raise self._lost(args)
        if status == _TIMEOUT_EXIT and duration >= timeout:
            raise self._timed_out(args, timeout)  # the remote backstop fired first
        result = CommandResult(args, status, _decode(out), _decode(err), duration)
        log.debug("%s: %s exited %d in %.3fs", self._spec.name, program_name(args), status, duration)
        if sudo and refusal(status, result.stderr):
            raise self._refused(args, result.stderr)
        if check and status != 0:
            raise self._failed(args, status, result.stderr)
        return result

    def _refused(self, argv: Sequence[str], stderr: str) -> SudoRefused:
        shown = " ".join(argv)
        return SudoRefused(
            f"sudo on {self._label()} refused `{shown[:200]}` for user {self._spec.user}: its sudoers rule does not "
            "allow that command, so it did not run. Install the rule pitcrew needs (docs/HOSTS.md shows it; "
            "`sudo -l` on the host lists what the user may run).",
            host=self._spec.name, exit_status=1, stderr_tail=stderr_tail(stderr))

    def _failed(self, argv: Sequence[str], status: int, stderr: str) -> CommandFailed:
        tail = stderr_tail(stderr)
        detail = f": {tail}" if tail else ""
        return CommandFailed(
            f"{program_name(argv)} on {self._label()} exited with status {status}{detail}",
            host=self._spec.name,
            exit_status=status,
            stderr_tail=tail,
        )

    @asynccontextmanager
    async def stream(
        self, argv: Sequence[str], *, timeout: float | None = None  # noqa: ASYNC109
    ) -> AsyncIterator[AsyncIterator[str]]:
        """Lines of stdout as produced. If the command ends on its own with a non-zero status the
        iterator raises `CommandFailed` after the last line; past ``timeout`` it raises `HostTimeout`."""
        args, command = self._command(argv, timeout=timeout, sudo=False, watchdog=True)
        deadline = None if timeout is None else time.monotonic() + timeout
        async with self._link.slot(args, deadline):
            proc = await self._start(command, args, deadline)
            errors: deque[bytes] = deque(maxlen=50)

            async def drain_stderr() -> None:
                with contextlib.suppress(Exception):
                    while chunk := await proc.stderr.read(4096):
                        errors.append(chunk)

            drain = asyncio.create_task(drain_stderr())

            async def lines() -> AsyncGenerator[str, None]:
                while True:
                    try:
                        if deadline is None:
                            raw = await proc.stdout.readline()
                        else:
                            raw = await asyncio.wait_for(proc.stdout.readline(), deadline - time.monotonic())
                    except TimeoutError:
                        await self._end(proc, _AFTER_DEADLINE_WAIT_S)
                        assert timeout is not None
                        raise self._timed_out(args, timeout) from None
                    except CONNECTION_ERRORS:
                        raise self._lost(args) from None
                    if not raw:
                        break
                    yield _decode(raw.rstrip(b"\n").rstrip(b"\r"))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait_closed(), END_WAIT_S)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(drain, END_WAIT_S)
                status = _exit_status(proc)
                if status is None:
                    raise self._lost(args)
                if status != 0:
                    raise self._failed(args, status, _decode(b"".join(errors)))

            gen = lines()
            try:
                yield gen
            finally:
                await gen.aclose()
                await self._end(proc)
                drain.cancel()

    # -- files ----------------------------------------------------------------------------------

    async def upload(self, remote_path: str, data: bytes, *, mode: int = 0o644, timeout: float) -> None:  # noqa: ASYNC109
        directory, base = check_remote_path(remote_path)
        token = secrets.token_hex(6)
        target_tmp = f"{directory.rstrip('/')}/.{base}.pitcrew-{token}.tmp"
        try:
            async with asyncio.timeout(timeout):
                if self._spec.sudo:
                    await self._upload_sudo(remote_path, data, mode, target_tmp, token, timeout)
                else:
                    await self._upload_direct(remote_path, data, mode, target_tmp)
        except TimeoutError:
            raise HostTimeout(
                f"Uploading {base} to {self._label()} did not finish within {secs(timeout)}s.",
                host=self._spec.name,
                timeout_s=timeout,
            ) from None

    @asynccontextmanager
    async def _sftp(self, what: str) -> AsyncIterator[asyncssh.SFTPClient]:
        """An SFTP session; every wait on the way out is bounded."""
        async with self._link.slot(["sftp"], None):
            sftp = await self._link.open(lambda conn: conn.start_sftp_client())
            try:
                yield sftp
            except asyncssh.SFTPError as exc:
                raise HostError(f"{what} on {self._label()} failed: {exc.reason}", host=self._spec.name) from None
            except CONNECTION_ERRORS:
                raise HostUnreachable(
                    f"The connection to {self._label()} was lost during {what.lower()}.", host=self._spec.name
                ) from None
            finally:
                sftp.exit()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(sftp.wait_closed(), END_WAIT_S)

    @staticmethod
    async def _remove_quietly(sftp: asyncssh.SFTPClient, path: str) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(sftp.remove(path), END_WAIT_S)

    async def _write(self, sftp: asyncssh.SFTPClient, path: str, data: bytes, mode: int) -> None:
        try:
            async with sftp.open(path, "wb", asyncssh.SFTPAttrs(permissions=mode)) as handle:
                await handle.write(data)
                with contextlib.suppress(asyncssh.SFTPOpUnsupported):
                    await handle.fsync()
            await sftp.chmod(path, mode)  # the server's umask applied to the open's mode
        except BaseException:
            await self._remove_quietly(sftp, path)
            raise

    async def _upload_direct(self, remote_path: str, data: bytes, mode: int, target_tmp: str) -> None:
        async with self._sftp(f"Uploading {posixpath.basename(remote_path)}") as sftp:
            await self._write(sftp, target_tmp, data, mode)
            try:
                await sftp.posix_rename(target_tmp, remote_path)
            except BaseException:
                await self._remove_quietly(sftp, target_tmp)
                raise

    async def _upload_sudo(
        self, remote_path: str, data: bytes, mode: int, target_tmp: str, token: str, step_s: float
    ) -> None:
        async with self._sftp(f"Staging {posixpath.basename(remote_path)}") as sftp:
            home: str = await sftp.realpath(".")
            staging = f"{home.rstrip('/')}/.pitcrew-upload-{token}"
            await self._write(sftp, staging, data, 0o600)
        try:
            install = ["install", "-m", f"{mode:o}", staging, target_tmp]
            await self.run(install, timeout=step_s, check=True, sudo=True)
            try:
                mv = ["mv", "-f", "-T", target_tmp, remote_path]
                await self.run(mv, timeout=step_s, check=True, sudo=True)
            except BaseException:
                with contextlib.suppress(Exception):
                    await self.run(["rm", "-f", "--", target_tmp], timeout=step_s, sudo=True)
                raise
        finally:
            with contextlib.suppress(Exception):
                await self.run(["rm", "-f", "--", staging], timeout=step_s)

    async def read_file(self, remote_path: str, *, timeout: float) -> str:  # noqa: ASYNC109
        check_remote_path(remote_path)
        result = await self.run(["cat", "--", remote_path], timeout=timeout, check=True, sudo=self._spec.sudo)
        return result.stdout
