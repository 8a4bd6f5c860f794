"""`SshConnection`: one pinned, lazily opened, self-healing asyncssh connection to one host.

Owns what `services.hosts.ssh.SshHost` needs below the command level: reading the pinned
``known_hosts`` and the client key (off the event loop), connecting with the operator's
``~/.ssh/config`` and agent ignored, mapping connection failures to the error tree (changed or
unknown host key -> `HostKeyMismatch`; refused, unreachable, silent -> `HostUnreachable`), a
bounded number of concurrent channels (OpenSSH's default ``MaxSessions`` is 10), and opening a
channel within the caller's deadline, reconnecting once when the connection was dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import asyncssh

from services.errors import HostKeyMismatch, HostTimeout, HostUnreachable
from services.hosts.contract import HostSpec, program_name
from services.retry import Backoff

log = logging.getLogger("pitcrew.hosts")

T = TypeVar("T")

END_WAIT_S = 2.0
CONNECTION_ERRORS = (asyncssh.ConnectionLost, asyncssh.DisconnectError, BrokenPipeError, ConnectionError)


def secs(value: float) -> str:
    """A duration for messages and coreutils ``timeout`` ("1.5", "10")."""
    text = f"{max(value, 0.001):.3f}".rstrip("0").rstrip(".")
    return text or "0"


class SshConnection:
    """The connection half of `SshHost` (see the module docstring)."""

    def __init__(
        self,
        spec: HostSpec,
        *,
        connect_timeout: float,
        keepalive_interval: float,
        keepalive_count_max: int,
        max_channels: int,
    ) -> None:
        self.spec = spec
        self._connect_timeout = connect_timeout
        self._keepalive_interval = keepalive_interval
        self._keepalive_count_max = keepalive_count_max
        self._conn: asyncssh.SSHClientConnection | None = None
        self._connect_lock = asyncio.Lock()
        self._channels = asyncio.Semaphore(max_channels)
        self._in_use = 0  # slots held now (commands, streams, SFTP), the caller's own included
        self._closed = False

    def label(self) -> str:
        return f"host {self.spec.name!r}"

    async def _load_credentials(self) -> tuple[asyncssh.SSHKnownHosts, asyncssh.SSHKey]:
        spec = self.spec

        def load() -> tuple[str, asyncssh.SSHKey]:
            return Path(spec.known_hosts).read_text(), asyncssh.read_private_key(str(spec.client_key))

        try:
            known_text, key = await asyncio.to_thread(load)
        except FileNotFoundError as exc:
            which = "known_hosts file" if exc.filename == str(spec.known_hosts) else "client key"
            if which == "known_hosts file":
                raise HostKeyMismatch(
                    f"No pinned host key for {self.label()}: its known_hosts file is missing. "
                    "An operator must pin the host's key before pitcrew connects.",
                    host=spec.name,
                ) from None
            raise HostUnreachable(
                f"Cannot read the SSH {which} for {self.label()}.", host=spec.name
            ) from None
        except (OSError, ValueError, asyncssh.KeyImportError):
            raise HostUnreachable(
                f"Cannot read the SSH client key or known_hosts file for {self.label()}.", host=spec.name
            ) from None
        try:
            known = asyncssh.import_known_hosts(known_text)
        except (ValueError, asyncssh.KeyImportError):
            raise HostKeyMismatch(
                f"The known_hosts file for {self.label()} cannot be parsed; refusing to connect. "
                "An operator must pin the host's key.",
                host=spec.name,
            ) from None
        return known, key

    async def _connect(self) -> asyncssh.SSHClientConnection:
        spec = self.spec
        known, key = await self._load_credentials()
        try:
            return await asyncio.wait_for(
                asyncssh.connect(
                    spec.address,
                    spec.port,
                    username=spec.user,
                    client_keys=[key],
                    known_hosts=known,
                    config=[],
                    agent_path=None,
                    agent_forwarding=False,
                    preferred_auth="publickey",
                    password=None,
                    keepalive_interval=self._keepalive_interval,
                    keepalive_count_max=self._keepalive_count_max,
                    login_timeout=self._connect_timeout,
                ),
                self._connect_timeout,
            )
        except asyncssh.HostKeyNotVerifiable:
            host_keys, ca_keys, _revoked, x509_certs, _rc, x509_subjects, _rs = known.match(
                spec.address, spec.address, spec.port
            )
            if host_keys or ca_keys or x509_certs or x509_subjects:
                log.warning("host key of %s does not match the pinned key; refusing to connect", spec.name)
                message = (
                    f"The SSH host key of {self.label()} has changed (it does not match the pinned key); "
                    "pitcrew refuses to connect. An operator must confirm the new key before pitcrew "
                    "talks to this host again."
                )
            else:
                log.warning("no pinned host key for %s; refusing to connect", spec.name)
                message = (
                    f"No SSH host key is pinned for {self.label()} at {spec.address}:{spec.port}; pitcrew "
                    "refuses to connect to an unknown key. An operator must confirm the host's key first."
                )
            raise HostKeyMismatch(message, host=spec.name, pinned=bool(host_keys or ca_keys)) from None
        except asyncssh.PermissionDenied:
            raise HostUnreachable(
                f"{self.label().capitalize()} refused pitcrew's SSH key for user {spec.user!r}.",
                host=spec.name,
            ) from None
        except TimeoutError:
            raise HostUnreachable(
                f"{self.label().capitalize()} did not answer within {secs(self._connect_timeout)}s.",
                host=spec.name,
            ) from None
        except (OSError, asyncssh.Error) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise HostUnreachable(
                f"Cannot reach {self.label()} at {spec.address}:{spec.port} ({reason}).", host=spec.name
            ) from None

    async def connection(self) -> asyncssh.SSHClientConnection:
        if self._closed:
            raise HostUnreachable(f"The connection to {self.label()} is closed.", host=self.spec.name)
        conn = self._conn
        if conn is not None and not conn.is_closed():
            return conn
        async with self._connect_lock:
            conn = self._conn
            if conn is not None and not conn.is_closed():
                return conn
            self._conn = None
            conn = await self._connect()
            self._conn = conn
            return conn

    def forget(self, conn: asyncssh.SSHClientConnection) -> None:
        if self._conn is conn:
            self._conn = None
        conn.abort()

    async def open(
        self,
        opener: Callable[[asyncssh.SSHClientConnection], Awaitable[T]],
        deadline: float | None = None,
        what: str = "the command",
    ) -> T:
        """Open a channel with ``opener``, reconnecting once if the connection was dropped.

        A channel refused on a live connection (OpenSSH's ``MaxSessions`` reached for a moment:
        sshd frees a session slot a little after the client sees the channel close) is retried
        with a short backoff until the connect timeout. Past the caller's ``deadline`` (monotonic
        time) it raises `HostTimeout`: nothing was started. A stalled open drops the connection only
        when no other channel uses it: their commands would otherwise be lost mid-run.
        """
        reconnected = waited = False
        session_backoff, refusals = Backoff(initial_s=0.01, max_s=0.2, jitter=0.0), 0

        def budget(limit: float) -> float:
            end = limit if deadline is None else min(limit, deadline)
            return end - time.monotonic()

        def not_started() -> HostTimeout:
            return HostTimeout(
                f"{what.capitalize()} could not start on {self.label()} before its deadline "
                "(the host did not answer in time); nothing ran.",
                host=self.spec.name,
            )

        while True:
            open_limit = time.monotonic() + self._connect_timeout
            try:
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0.001)
                conn = await asyncio.wait_for(self.connection(), remaining)
            except TimeoutError:
                raise not_started() from None
            try:
                return await asyncio.wait_for(opener(conn), max(budget(open_limit), 0.001))
            except asyncssh.ChannelOpenError:
                if not conn.is_closed():
                    delay = session_backoff.delay(refusals)
                    if budget(open_limit) <= delay:
                        if deadline is not None and time.monotonic() + delay >= deadline:
                            raise not_started() from None
                        raise HostUnreachable(
                            f"{self.label().capitalize()} refused a new SSH session.", host=self.spec.name
                        ) from None
                    await asyncio.sleep(delay)
                    refusals += 1
                    continue
            except TimeoutError:
                shared = self._in_use > 1
                if deadline is not None and time.monotonic() >= deadline:
                    if not shared:
                        self.forget(conn)
                    raise not_started() from None
                if shared and not waited:
                    # other channels use this connection: a slow open on a busy host is not a dead connection, and
                    # aborting it would lose their commands mid-run (keepalive finds a connection that is dead)
                    waited = True
                    continue
            except CONNECTION_ERRORS:
                pass
            self.forget(conn)
            if reconnected:
                raise HostUnreachable(
                    f"{self.label().capitalize()} dropped the SSH connection again after a reconnect.",
                    host=self.spec.name,
                )
            reconnected = True
            log.info("connection to %s was dropped or stalled; reconnecting", self.spec.name)

    async def close(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), END_WAIT_S)

    @asynccontextmanager
    async def slot(self, argv: Sequence[str], deadline: float | None) -> AsyncIterator[None]:
        """One of the ``max_channels`` channel slots, waited for until ``deadline`` at most."""
        try:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.001)
            await asyncio.wait_for(self._channels.acquire(), remaining)
        except TimeoutError:
            raise HostTimeout(
                f"{program_name(argv)} could not start on {self.label()} before its deadline "
                "(all SSH sessions to it were busy); nothing ran.",
                host=self.spec.name,
            ) from None
        self._in_use += 1
        try:
            yield
        finally:
            self._in_use -= 1
            self._channels.release()
