"""Run a benchmark in a child process, so the bot's own work never skews its timings.

The bot's process also serves chat, the outbox, journals and the database; a benchmark that
shares its event loop (or even its GIL) reads the bot's scheduling delays as server latency. The
child (`python -m services.bench.process`) reads the `BenchSpec` as JSON on stdin, prints one JSON
line per progress update and the result document last; closing its stdin cancels it cleanly
(it returns what it measured). Its own CPU and loop lag are what the client-health figures show.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from services.bench.conn import run_client_loop
from services.errors import BenchmarkError


@dataclasses.dataclass(frozen=True)
class IsolatedResult:
    """The result document plus the facts the pipeline needs."""

    doc: dict[str, Any]
    cancelled: bool

    @property
    def levels(self) -> list[dict[str, Any]]:
        return list(self.doc.get("levels", []))

    @property
    def model(self) -> str | None:
        m = self.doc.get("model")
        return str(m) if m else None


ProgressFn = Callable[[dict[str, Any]], Awaitable[None]]


async def run_benchmark_isolated(spec: Any, *, progress: ProgressFn | None = None, probe: str | None = "sglang",
                                 cancel: asyncio.Event | None = None, timeout_s: float = 3600.0) -> IsolatedResult:
    """Benchmark in a child process; `spec` is a `services.bench.runner.BenchSpec`."""
    payload = {k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(spec).items()}
    payload["_probe"] = probe
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.bench.process", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=16 * 1024 * 1024)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(orjson.dumps(payload) + b"\n")
    await proc.stdin.drain()
    result: dict[str, Any] | None = None
    cancelled = False

    async def watch_cancel() -> None:
        if cancel is not None:
            await cancel.wait()
            if proc.stdin is not None:
                proc.stdin.close()

    watcher = asyncio.create_task(watch_cancel())
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                line = await proc.stdout.readline()
                if not line:
                    break
                msg = orjson.loads(line)
                if msg.get("type") == "progress" and progress is not None:
                    await progress(msg)
                elif msg.get("type") == "result":
                    result, cancelled = msg["result"], bool(msg.get("cancelled"))
                elif msg.get("type") == "error":
                    raise BenchmarkError(str(msg.get("message")))
            await proc.wait()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    finally:
        watcher.cancel()
    if result is None:
        err = (await proc.stderr.read()).decode(errors="replace").strip().splitlines()
        raise BenchmarkError("the benchmark process ended without a result" + (f": {err[-1][:300]}" if err else ""))
    return IsolatedResult(result, cancelled)


async def _child() -> int:
    from services.bench.probes import MetricsProbe
    from services.bench.runner import BenchSpec, run_benchmark
    from services.engines import find_engine

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    raw = orjson.loads(await reader.readline())
    probe_kind = raw.pop("_probe", None)
    raw["concurrency"] = tuple(raw["concurrency"])
    if raw.get("prompts_file"):
        raw["prompts_file"] = Path(raw["prompts_file"])
    out = sys.stdout.buffer

    def emit(obj: dict[str, Any]) -> None:
        out.write(orjson.dumps(obj) + b"\n")
        out.flush()

    try:
        spec = BenchSpec(**raw)
    except BenchmarkError as e:
        emit({"type": "error", "message": e.message})
        return 2
    cancel = asyncio.Event()

    async def stdin_closed() -> None:
        await reader.read()  # EOF when the parent closes our stdin
        cancel.set()

    watcher = asyncio.create_task(stdin_closed())
    engine = find_engine(probe_kind)  # whose /metrics counters to read (None: no server-side figures)
    probe = MetricsProbe(spec.url, engine) if engine is not None else None

    async def progress(p: Any) -> None:
        emit({"type": "progress", **dataclasses.asdict(p)})

    try:
        result = await run_benchmark(spec, progress=progress, probe=probe, cancel=cancel)
    except BenchmarkError as e:
        emit({"type": "error", "message": e.message})
        return 2
    finally:
        watcher.cancel()
    emit({"type": "result", "result": result.to_json(), "cancelled": result.cancelled})
    return 0


if __name__ == "__main__":
    sys.exit(run_client_loop(_child()))
