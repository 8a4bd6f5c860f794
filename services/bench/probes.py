"""Server-side figures for a benchmark level's window, read from the server's Prometheus `/metrics`.

Owns the `ServerProbe` seam (begin at the start of a level's measurement window, end after it)
and `MetricsProbe`, which reads `/metrics` at both ends and lets the unit's engine say what the two snapshots
mean (SGLang's gauges and counters, differences of vLLM's speculative-decoding counters). A probe never breaks a
benchmark: when the server does not answer or lacks a metric, the figure is None.
"""

from __future__ import annotations

import math
import time
from typing import Protocol

from services.bench.conn import ConnectFailed, Dropped, get
from services.bench.stats import ServerFigures
from services.engines import Engine

PROBE_TIMEOUT_S = 5.0


class ServerProbe(Protocol):
    """Server-side figures for one level's measurement window."""

    async def begin(self) -> None: ...

    async def end(self) -> ServerFigures: ...


def parse_prometheus(text: str) -> dict[str, list[float]]:
    """Metric name -> values of all its series (labels dropped); comments and bad lines skipped."""
    out: dict[str, list[float]] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        brace = line.find("{")
        if brace >= 0:
            name = line[:brace]
            close = line.rfind("}")
            rest = line[close + 1:].split() if close > brace else []
        else:
            parts = line.split()
            name, rest = (parts[0], parts[1:]) if parts else ("", [])
        if not name or not rest:
            continue
        try:
            value = float(rest[0])
        except ValueError:
            continue
        if math.isnan(value):
            continue
        out.setdefault(name.strip(), []).append(value)
    return out


class _MetricsReader:
    def __init__(self, base_url: str) -> None:
        self._url = base_url.rstrip("/").removesuffix("/v1") + "/metrics"

    async def read(self) -> dict[str, list[float]] | None:
        try:
            status, body = await get(self._url, timeout_s=PROBE_TIMEOUT_S)
        except (ConnectFailed, Dropped, TimeoutError, OSError):
            return None
        if status != 200:
            return None
        return parse_prometheus(body.decode("utf-8", errors="replace"))


class MetricsProbe:
    """The engine's `/metrics` at the window's start and end; the engine says what they mean
    (`Engine.window_figures`: SGLang's gauges and counters, differences of vLLM's speculative-decoding counters)."""

    def __init__(self, base_url: str, engine: Engine) -> None:
        self._reader = _MetricsReader(base_url)
        self._engine = engine
        self._before: dict[str, list[float]] | None = None
        self._t0 = 0.0

    async def begin(self) -> None:
        self._before = await self._reader.read()
        self._t0 = time.monotonic()

    async def end(self) -> ServerFigures:
        after = await self._reader.read()
        w = self._engine.window_figures(self._before, after, time.monotonic() - self._t0)
        return ServerFigures(accept_len=w.accept_len, accept_rate=w.accept_rate, gen_throughput=w.gen_throughput)
