"""The service's stdout/stderr as journald receives them: a Unix stream socket with SO_PASSCRED.

Like journald's stdout streams, the supervisor hands the service one end of a socket pair as its
stdout and stderr and reads the other with `recvmsg()`: the kernel attaches the writing
process's credentials to every chunk and never merges chunks of different writers, so each line
is attributed to the process that wrote it (`_PID`, `_COMM`) — child processes (SGLang's
schedulers) get their own `_PID` while sharing the stream. Lines are split on `\\n`, and at 48 KiB
(journald's `LineMax`).
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable

LINE_MAX = 48 * 1024
_CREDS = struct.Struct("iII")


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


def make_pair() -> tuple[socket.socket, socket.socket]:
    """(reader, writer): give `writer.fileno()` to the child as stdout/stderr, then close it."""
    reader, writer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    reader.setblocking(False)
    return reader, writer


async def pump(reader: socket.socket, default_pid: int, emit: Callable[[int, bytes], None]) -> None:
    """Read until every writer has closed; `emit(pid, line)` per complete line."""
    loop = asyncio.get_running_loop()
    fd = reader.fileno()
    buf = b""
    pid = default_pid
    space = socket.CMSG_SPACE(_CREDS.size)
    try:
        while True:
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, _wake, ready)
            try:
                await ready
            finally:
                loop.remove_reader(fd)
            while True:
                try:
                    data, ancillary, _flags, _addr = reader.recvmsg(65536, space)
                except (BlockingIOError, InterruptedError):
                    break
                if not data:
                    if buf:
                        emit(pid, buf)
                    return
                for level, kind, cdata in ancillary:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(cdata) >= _CREDS.size:
                        pid = _CREDS.unpack(cdata[:_CREDS.size])[0] or default_pid
                buf += data
                while True:
                    cut = buf.find(b"\n")
                    if cut < 0:
                        if len(buf) >= LINE_MAX:
                            emit(pid, buf[:LINE_MAX])
                            buf = buf[LINE_MAX:]
                            continue
                        break
                    emit(pid, buf[:cut])
                    buf = buf[cut + 1:]
    finally:
        reader.close()
