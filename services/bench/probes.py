"""Server-side figures for a benchmark level's window, read from the server's Prometheus `/metrics`.

Owns the `ServerProbe` seam (begin at the start of a level's measurement window, end after it)
and two implementations: `SglangMetricsProbe` (SGLang gauges and counters) and
`VllmMetricsProbe` (differences of vLLM's speculative-decoding counters). A probe never breaks a
benchmark: when the server does not answer or lacks a metric, the figure is None.
"""

from __future__ import annotations

import math
import time
from typing import Protocol

import httpx

from services.bench.stats import ServerFigures

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
        # no CA bundle for plain http: loading it blocks the loop for tens of ms (at the window's edge)
        self._verify = self._url.startswith("https://")

    async def read(self) -> dict[str, list[float]] | None:
        try:
            async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_S, verify=self._verify, trust_env=False) as client:
                resp = await client.get(self._url)
        except httpx.HTTPError:
            return None
        if resp.status_code != 200:
            return None
        return parse_prometheus(resp.text)


def _mean(metrics: dict[str, list[float]] | None, name: str) -> float | None:
    vals = (metrics or {}).get(name)
    return sum(vals) / len(vals) if vals else None


def _total(metrics: dict[str, list[float]] | None, name: str) -> float | None:
    vals = (metrics or {}).get(name)
    return sum(vals) if vals else None


def _delta(before: dict[str, list[float]] | None, after: dict[str, list[float]] | None,
           name: str) -> float | None:
    a, b = _total(before, name), _total(after, name)
    if a is None or b is None or b < a:
        return None
    return b - a


class SglangMetricsProbe:
    """SGLang `/metrics` (needs `--enable-metrics`): accept length/rate gauges at the window's end,
    generation throughput from `sglang:generation_tokens_total` over the window (else the gauge)."""

    def __init__(self, base_url: str) -> None:
        self._reader = _MetricsReader(base_url)
        self._before: dict[str, list[float]] | None = None
        self._t0 = 0.0

    async def begin(self) -> None:
        self._before = await self._reader.read()
        self._t0 = time.monotonic()

    async def end(self) -> ServerFigures:
        after = await self._reader.read()
        elapsed = time.monotonic() - self._t0
        gen = _delta(self._before, after, "sglang:generation_tokens_total")
        throughput = gen / elapsed if gen is not None and elapsed > 0 else None
        if throughput is None:
            throughput = _mean(after, "sglang:gen_throughput")
        return ServerFigures(accept_len=_mean(after, "sglang:spec_accept_length"),
                             accept_rate=_mean(after, "sglang:spec_accept_rate"),
                             gen_throughput=throughput)


class VllmMetricsProbe:
    """vLLM `/metrics`: accept rate = Δaccepted/Δdraft_tokens, accept length = 1 + Δaccepted/Δdrafts,
    generation throughput = Δ`vllm:generation_tokens_total` / window."""

    def __init__(self, base_url: str) -> None:
        self._reader = _MetricsReader(base_url)
        self._before: dict[str, list[float]] | None = None
        self._t0 = 0.0

    async def begin(self) -> None:
        self._before = await self._reader.read()
        self._t0 = time.monotonic()

    async def end(self) -> ServerFigures:
        after = await self._reader.read()
        elapsed = time.monotonic() - self._t0
        accepted = _delta(self._before, after, "vllm:spec_decode_num_accepted_tokens_total")
        drafts = _delta(self._before, after, "vllm:spec_decode_num_drafts_total")
        draft_tokens = _delta(self._before, after, "vllm:spec_decode_num_draft_tokens_total")
        gen = _delta(self._before, after, "vllm:generation_tokens_total")
        return ServerFigures(
            accept_len=1.0 + accepted / drafts if accepted is not None and drafts else None,
            accept_rate=accepted / draft_tokens if accepted is not None and draft_tokens else None,
            gen_throughput=gen / elapsed if gen is not None and elapsed > 0 else None,
        )
