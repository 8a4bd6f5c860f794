"""Start and drive the known-truth streaming server (`support.truth_server`) as a child process.

Owns `TruthServer` (url, `/truth`, `/control`, `/truth/reset`, stop) and `truth_server(...)`,
an async context manager that starts the process on a free loopback port and ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson

TESTS_DIR = str(Path(__file__).resolve().parents[1])

START_TIMEOUT_S = 15.0


class TruthServer:
    def __init__(self, proc: asyncio.subprocess.Process, port: int) -> None:
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}"

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
            resp = await client.request(method, self.url + path, json=body)
            resp.raise_for_status()
            return resp.json()

    async def truth(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._call("GET", "/truth")
        return result

    async def control(self, **knobs: Any) -> dict[str, Any]:
        """Change parameters (`rate=...`) and faults (`fault_kind="error"`, `fault_start=...`)."""
        result: dict[str, Any] = await self._call("POST", "/control", knobs)
        return result

    async def reset(self) -> None:
        await self._call("POST", "/truth/reset", {})

    async def stop(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 5.0)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()


def child_env() -> dict[str, str]:
    """The environment for a child `python -m support.…`: `tests/` on its import path."""
    env = dict(os.environ)
    root = str(Path(TESTS_DIR).parent)  # the source tree first: tests/bot and tests/handlers must not shadow packages
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, TESTS_DIR, env.get("PYTHONPATH", "")) if p)
    return env


async def start_truth_server(*args: str) -> TruthServer:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "support.truth_server", "--port", "0", *args,
        stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL, env=child_env())
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT_S)
        port = int(orjson.loads(line)["port"])
    except (TimeoutError, orjson.JSONDecodeError, KeyError, ValueError):
        proc.kill()
        await proc.wait()
        raise RuntimeError("truth server did not start") from None
    return TruthServer(proc, port)


@contextlib.asynccontextmanager
async def truth_server(*args: str) -> AsyncIterator[TruthServer]:
    srv = await start_truth_server(*args)
    try:
        yield srv
    finally:
        await srv.stop()
