"""Host access: the `Host` protocol, its value types and argument checks.

What the rest of pitcrew knows about a GPU host: a `HostSpec` (plain values from the composition
root), `Host` (run a command with a deadline, stream its lines, upload a file atomically, read a
file) and `CommandResult`. The asyncssh implementation is `services/hosts/ssh.py`, the pool
`services/hosts/pool.py`.

Commands are argument vectors, never shell strings: each element is quoted with `shlex.join`
before it reaches the remote shell, and an element carrying NUL, a newline or a carriage return
is refused with `UserInputError` before anything is sent.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from services.errors import UserInputError
from services.redact import redact

_FORBIDDEN_CHARS = {"\x00": "a NUL", "\n": "a newline", "\r": "a carriage return"}


@dataclass(frozen=True)
class HostSpec:
    """How to reach one host and what runs there (values passed down by the composition root)."""

    name: str
    address: str
    port: int
    user: str
    client_key: Path
    known_hosts: Path
    unit: str
    unit_dir: str
    server_url: str
    sudo: bool = False
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class CommandResult:
    """The outcome of one command on a host (exit status 128+N when killed by signal N)."""

    argv: tuple[str, ...]
    exit_status: int
    stdout: str
    stderr: str
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


class Host(Protocol):
    """A GPU host reached over SSH (or anything that behaves the same)."""

    @property
    def spec(self) -> HostSpec: ...

    async def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,  # noqa: ASYNC109 - the deadline is enforced remotely too
        input: bytes | None = None,
        check: bool = False,
        sudo: bool = False,
    ) -> CommandResult:
        """Run ``argv``; past ``timeout`` seconds the remote process is ended and `HostTimeout` raised."""
        ...

    def stream(
        self, argv: Sequence[str], *, timeout: float | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[str]]:
        """Lines of ``argv``'s stdout as produced (no newline); the remote process ends on exit."""
        ...

    async def upload(self, remote_path: str, data: bytes, *, mode: int = 0o644, timeout: float) -> None:  # noqa: ASYNC109
        """Write ``data`` to ``remote_path`` atomically (temp file in the same directory, then rename)."""
        ...

    async def read_file(self, remote_path: str, *, timeout: float) -> str:  # noqa: ASYNC109
        """The text of ``remote_path`` on the host."""
        ...

    async def close(self) -> None: ...


def check_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """Validate an argument vector; returns it as a tuple or raises `UserInputError`."""
    if isinstance(argv, str | bytes):
        raise UserInputError("a host command must be a list of arguments, not one string")
    args = tuple(argv)
    if not args:
        raise UserInputError("empty command")
    for index, arg in enumerate(args):
        if not isinstance(arg, str):
            raise UserInputError(f"argument {index} of the command is not text")
        for char, label in _FORBIDDEN_CHARS.items():
            if char in arg:
                program = program_name(args) if index else "the command"
                raise UserInputError(
                    f"argument {index} of {program} contains {label} character; "
                    "pitcrew refuses to send it to a host"
                )
    return args


def program_name(argv: Sequence[str]) -> str:
    """A short, printable name for a command (basename of argv[0], at most 40 chars)."""
    name = posixpath.basename(argv[0]) if argv else "?"
    name = re.sub(r"[^\w.+@:=-]", "?", name)[:40]
    return f"`{name}`"


def quote_argv(argv: Sequence[str]) -> str:
    """The shell command string for ``argv`` (validated, every element quoted)."""
    return shlex.join(check_argv(argv))


def check_remote_path(remote_path: str) -> tuple[str, str]:
    """Validate an absolute remote file path; returns ``(directory, basename)``."""
    if not isinstance(remote_path, str) or not remote_path:
        raise UserInputError("a remote path is required")
    for char, label in _FORBIDDEN_CHARS.items():
        if char in remote_path:
            raise UserInputError(f"the remote path contains {label} character; refused")
    if not remote_path.startswith("/"):
        raise UserInputError("the remote path must be absolute")
    parts = remote_path.split("/")
    if ".." in parts or "." in parts:
        raise UserInputError("the remote path must not contain '.' or '..' components")
    directory, base = posixpath.split(remote_path)
    if not base:
        raise UserInputError("the remote path must name a file, not a directory")
    return directory or "/", base


def stderr_tail(stderr: str, *, max_chars: int = 400) -> str:
    """The last lines of ``stderr``, at most ``max_chars``, with secrets masked."""
    tail = stderr.strip()[-max_chars:]
    return redact(tail)
