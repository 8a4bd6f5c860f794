"""The sim's control channel: `systemctl` and `pitcrew sim fault` talk to the SimHost process.

A Unix socket in the abstract namespace named after the state directory (no path-length limit,
nothing to clean up). One JSON request line, one JSON response line. The client side is stdlib
only and synchronous (the tools are short-lived processes); the server side runs in SimHost's
event loop and dispatches to the supervisor (`start`, `stop`, `restart`, `daemon-reload`,
`reset-failed`, `show`) or to the host (`fault`).
"""

from __future__ import annotations

import json
import os
import socket

try:  # the sha1 of hashlib without loading OpenSSL (~2 ms of each tool's start)
    from _sha1 import sha1
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import sha1

# The tools (`systemctl`, `nvidia-smi`: a new process per call, thousands per `make test`) import this module, so it
# imports only what `request` runs: asyncio, typing, pathlib and collections.abc (~12 ms of a ~38 ms start) are for
# the annotations or imported where used.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from collections.abc import Awaitable, Callable
    from pathlib import Path
    from typing import Any

    Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def address(root: Path | str) -> str:
    digest = sha1(os.path.realpath(str(root)).encode()).hexdigest()[:24]
    return f"\0simhost-{digest}"


def request(root: Path | str, payload: dict[str, Any], timeout: float | None = 600.0) -> dict[str, Any]:
    """Send one request and wait for its answer (blocking; for the tools)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(address(root))
        except OSError as exc:
            raise ConnectionError("simulated host is not running") from exc
        sock.sendall(json.dumps(payload).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
    if not buf:
        raise ConnectionError("simulated host closed the control connection")
    answer: dict[str, Any] = json.loads(buf)
    return answer


async def serve(root: Path, handler: Handler) -> asyncio.AbstractServer:
    import asyncio
    import contextlib

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            if not line:
                return
            try:
                answer = await handler(json.loads(line))
            except Exception as exc:  # the client gets the error; the sim keeps running
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    return await asyncio.start_unix_server(on_client, path=address(root))
