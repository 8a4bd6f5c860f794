"""The simulated host's tool server: runs the sim's `systemctl` and `nvidia-smi` for a thin client, in the host's
own process, so a call costs no Python start.

The bot probes a host by running these commands over SSH, thousands of times in a `make test`; as Python commands
each call started an interpreter (~14 ms of CPU, 8.4 of them the bare `python3 -S` start). With the server, the
command on PATH is a bash script (`simhost.tools.install`) that connects to this server on loopback
(`/dev/tcp`), sends its arguments and prints what the tool printed, exiting with its status (~1 ms for bash, ~1 ms
here). When the server is not there (the host is stopped, or the script runs where loopback is another network) the
script runs the Python tool itself: the same module, the same output.

Protocol, one call per connection: the client sends the token (a line), the tool's name (a line), the argument count
(a line) and each argument NUL-terminated; the server answers the tool's stdout, NUL, its stderr, NUL, and its exit
status (a line). A wrong token or tool closes the connection unanswered. Each call runs in a thread of the server's
own (the tools block on the host's control socket, served by the same event loop) with its output captured
(`simhost.tools.streams`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from simhost.tools import nvidia_smi, streams, systemctl

SERVED: dict[str, Callable[[list[str]], int]] = {"systemctl": systemctl.main, "nvidia-smi": nvidia_smi.main}
CALL_TIMEOUT_S = 600.0  # a `systemctl stop` waits for the unit's stop (TimeoutStopSec=, scaled): as long as allowed
MAX_ARGS = 4096


@dataclass
class ToolServer:
    """A running tool server: `port` on 127.0.0.1, `token` its clients send first."""

    root: Path
    port: int = 0
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    calls: int = 0  # calls answered (a client that reached the server did not start Python)
    _server: asyncio.AbstractServer | None = None
    _pool: ThreadPoolExecutor | None = None

    async def start(self) -> ToolServer:
        # threads of its own: a call blocks its thread until the host answers (a stop: seconds), and the default
        # executor is shared with the host's own file work, which may be what the answer waits on
        self._pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="simhost-tool")
        self._server = await asyncio.start_server(self._on_client, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(10):
                token = (await reader.readline()).decode().strip()
                name = (await reader.readline()).decode().strip()
                count = int((await reader.readline()).decode().strip() or "-1")
                if token != self.token or name not in SERVED or not 0 <= count <= MAX_ARGS:
                    return
                argv = [(await reader.readuntil(b"\0"))[:-1].decode("utf-8", "surrogateescape") for _ in range(count)]
            loop = asyncio.get_running_loop()
            call = loop.run_in_executor(self._pool, contextvars.Context().run, _run, name, argv, str(self.root))
            rc, out, err = await asyncio.wait_for(call, CALL_TIMEOUT_S)
            writer.write(_encode(out) + b"\0" + _encode(err) + b"\0" + f"{rc}\n".encode())
            await writer.drain()
            self.calls += 1
        except (ConnectionError, ValueError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def _encode(text: str) -> bytes:
    return text.replace("\0", "").encode("utf-8", "surrogateescape")


def _run(name: str, argv: list[str], root: str) -> tuple[int, str, str]:
    """One call of tool `name` (in a pool thread, in a context of its own): its status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    streams.serving(out, err, root)
    try:
        rc = SERVED[name](argv)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    except Exception as e:  # as the command would die: a traceback's last line on stderr, status 1
        print(f"{name}: {type(e).__name__}: {e}", file=err)
        rc = 1
    return rc, out.getvalue(), err.getvalue()
