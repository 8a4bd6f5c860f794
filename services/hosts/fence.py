"""Fencing of host actions: a guard that must pass before every command, stream, upload or read.

Whoever owns a piece of work on a host (the job runner, holding the host's lease) installs a guard
for the duration of that work with `guarded(...)`; it lives in a context variable, so it follows the
work into every task the work starts and nowhere else. `fenced(host)` wraps a `Host` so that each
action awaits the current guard first; a guard refuses by raising (e.g. `LeaseLost`), and the
action is then never sent. Outside guarded work the wrapper adds nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from services.hosts.contract import CommandResult, Host, HostSpec

Guard = Callable[[], Awaitable[None]]

_guard: ContextVar[Guard | None] = ContextVar("pitcrew_host_guard", default=None)


@contextlib.contextmanager
def guarded(guard: Guard) -> Iterator[None]:
    """Every fenced host action inside this block (and the tasks it starts) first awaits `guard`."""
    token = _guard.set(guard)
    try:
        yield
    finally:
        _guard.reset(token)


async def check_guard() -> None:
    """Await the current guard, if any (raises when the work may no longer touch the host)."""
    guard = _guard.get()
    if guard is not None:
        await guard()


class FencedHost:
    """A `Host` whose every action is preceded by the current guard."""

    def __init__(self, inner: Host) -> None:
        self.inner = inner

    @property
    def spec(self) -> HostSpec:
        return self.inner.spec

    async def run(self, argv: Sequence[str], *, timeout: float, input: bytes | None = None,  # noqa: ASYNC109
                  check: bool = False, sudo: bool = False) -> CommandResult:
        await check_guard()
        return await self.inner.run(argv, timeout=timeout, input=input, check=check, sudo=sudo)

    @contextlib.asynccontextmanager
    async def stream(self, argv: Sequence[str], *, timeout: float | None = None  # noqa: ASYNC109
                     ) -> AsyncIterator[AsyncIterator[str]]:
        await check_guard()
        async with self.inner.stream(argv, timeout=timeout) as lines:
            yield lines

    async def upload(self, remote_path: str, data: bytes, *, mode: int = 0o644, timeout: float) -> None:  # noqa: ASYNC109
        await check_guard()
        await self.inner.upload(remote_path, data, mode=mode, timeout=timeout)

    async def read_file(self, remote_path: str, *, timeout: float) -> str:  # noqa: ASYNC109
        await check_guard()
        return await self.inner.read_file(remote_path, timeout=timeout)

    async def close(self) -> None:
        await self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def fenced(host: Host) -> Host:
    """`host` with every action behind the current guard."""
    return host if isinstance(host, FencedHost) else FencedHost(host)
