"""Benchmark value types and the arithmetic that turns per-request records into level figures.

Owns the definitions of issue 4 once measurements exist: TTFT, E2E, N, TPOT, decode tok/s per
request, tokens per SSE event, output tok/s, request/s, achieved concurrency, steady tok/s (the
output rate while all C slots were busy), percentiles, and the JSON document `pitcrew bench --json` prints.

The window is the first measured request's send to the last measured request's end; the level
runner sends nothing else in it (warmups end before it, no padding after the last measured request),
so measured tokens / window is the server's output rate over the window, and sum(E2E) / window the
mean number of requests it had in flight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from services.bench.noise import median_ci

# A level is unreliable (client saturated) above these.
LAG_P99_LIMIT_MS = 20.0
CPU_BUSY_LIMIT = 0.90  # fraction of one core over the measurement window
CONCURRENCY_WARN = 0.95


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One finished request, times in seconds relative to its own t0 (perf_counter based)."""

    index: int  # request index (the synthetic prompt's number)
    t0: float  # absolute perf_counter() just before the request was sent
    queue_s: float  # wait for a client slot before t0
    ttft: float
    e2e: float
    tokens: int  # N
    chunks: int  # text-carrying events
    chunk_counted: bool  # N came from counting chunks (no usage in the stream)
    max_gap: float  # largest inter-chunk latency seen
    busy_chunks: int = 0  # text events received while all C slots were busy (services.bench.level.AllBusy)

    @property
    def end(self) -> float:
        return self.t0 + self.e2e

    @property
    def tpot(self) -> float | None:
        if self.tokens <= 1 or self.e2e <= self.ttft:
            return None
        return (self.e2e - self.ttft) / (self.tokens - 1)

    @property
    def icl(self) -> float | None:
        """Mean inter-chunk latency as measured."""
        if self.chunks <= 1:
            return None
        return (self.e2e - self.ttft) / (self.chunks - 1)


@dataclass(frozen=True, slots=True)
class Dist:
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None
    p95: float | None = None

    def to_json(self) -> dict[str, float | None]:
        return {"mean": self.mean, "p50": self.p50, "p90": self.p90, "p95": self.p95, "p99": self.p99,
                "max": self.max}


@dataclass(frozen=True, slots=True)
class ServerFigures:
    """Server-side figures for a level's window; None where the server does not say."""

    accept_len: float | None = None
    accept_rate: float | None = None
    gen_throughput: float | None = None

    def to_json(self) -> dict[str, float | None]:
        return {"accept_len": self.accept_len, "accept_rate": self.accept_rate,
                "gen_throughput": self.gen_throughput}


@dataclass(frozen=True, slots=True)
class ClientHealth:
    cpu_s_per_1k_tokens: float | None = None
    loop_lag_ms_p99: float | None = None
    cpu_busy: float | None = None  # CPU seconds / wall seconds over the window
    cpu_s: float | None = None  # the process tree's user + system CPU seconds over the window

    def to_json(self) -> dict[str, float | None]:
        return {"cpu_s_per_1k_tokens": self.cpu_s_per_1k_tokens, "loop_lag_ms_p99": self.loop_lag_ms_p99,
                "cpu_s": self.cpu_s}


@dataclass(frozen=True, slots=True)
class LevelResult:
    concurrency: int
    requests: int  # measured requests that completed
    failed: int
    failures: dict[str, int]
    output_tokens: int
    duration_s: float | None
    output_tok_s: float | None
    request_per_s: float | None
    achieved_concurrency: float | None
    steady_tok_s: float | None  # output tok/s while all C slots were busy (`steady_rate`)
    steady_s: float | None  # how long all C slots were busy, seconds (the gaps between requests left out)
    steady_span_s: tuple[float, float] | None  # first and last moment of it, seconds from the window's start
    tokens_per_chunk: float | None
    chunk_counted: bool
    ttft_ms: Dist
    tpot_ms: Dist
    decode_tok_s_per_request: Dist
    e2e_ms: Dist
    icl_ms: Dist
    queue_ms: Dist
    server: ServerFigures
    client: ClientHealth
    unreliable: bool
    warnings: tuple[str, ...] = ()
    # bootstrap 95 % interval of the median decode tok/s per request, and the per-request rates it came from
    decode_tok_s_ci95: tuple[float, float] | None = None
    decode_tok_s_samples: tuple[float, ...] = ()
    # the measured requests themselves (not in the JSON document; for storage and comparisons)
    records: tuple[RequestRecord, ...] = field(default=(), repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency, "requests": self.requests, "failed": self.failed,
            "output_tokens": self.output_tokens, "duration_s": self.duration_s,
            "output_tok_s": self.output_tok_s, "request_per_s": self.request_per_s,
            "achieved_concurrency": self.achieved_concurrency,
            "steady_tok_s": self.steady_tok_s, "steady_s": self.steady_s,
            "steady_span_s": list(self.steady_span_s) if self.steady_span_s else None,
            "tokens_per_chunk": self.tokens_per_chunk,
            "chunk_counted": self.chunk_counted, "ttft_ms": self.ttft_ms.to_json(),
            "tpot_ms": self.tpot_ms.to_json(),
            "decode_tok_s_per_request": self.decode_tok_s_per_request.to_json(),
            "e2e_ms": self.e2e_ms.to_json(), "server": self.server.to_json(),
            "client": self.client.to_json(), "warnings": list(self.warnings),
            "decode_tok_s_ci95": list(self.decode_tok_s_ci95) if self.decode_tok_s_ci95 else None,
            "decode_tok_s_samples": list(self.decode_tok_s_samples),
        }


@dataclass(frozen=True, slots=True)
class BenchResult:
    url: str
    model: str | None
    started_at: str  # ISO 8601 UTC
    levels: tuple[LevelResult, ...] = ()
    cancelled: bool = False
    warnings: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The JSON document of issue 4 item 6 (null where a figure is not known)."""
        return {"url": self.url, "model": self.model, "started_at": self.started_at,
                "levels": [lv.to_json() for lv in self.levels]}


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), `q` in [0, 100]."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def dist(values: list[float], scale: float = 1.0) -> Dist:
    if not values:
        return Dist()
    v = sorted(x * scale for x in values)
    return Dist(mean=sum(v) / len(v), p50=percentile(v, 50), p90=percentile(v, 90),
                p99=percentile(v, 99), max=v[-1], p95=percentile(v, 95))


def steady_rate(records: list[RequestRecord], busy: list[tuple[float, float]]) -> float | None:
    """Output tok/s while all C slots were busy: the tokens the requests received in the `busy` intervals
    (when all C slots had a measured request in flight, prefill included) over their total length.

    A request's tokens in them are N x (its text events in them) / (its text events): exact at one token per
    event, and under speculative decoding the server's accept length spreads N over the events. The tail where
    fewer than C are in flight (variable output lengths, a count that is not a multiple of C) is left out, and
    no request's whole-life mean rate stands in for its rate in the intervals (it reads high when streams
    speed up as the others end).
    """
    length = sum(b - a for a, b in busy)
    if length <= 0:
        return None
    tokens = sum(r.tokens * r.busy_chunks / r.chunks for r in records if r.chunks)
    return tokens / length


@dataclass(frozen=True, slots=True)
class LevelInputs:
    """What the runner hands to `summarize` for one level."""

    concurrency: int
    records: list[RequestRecord]
    failures: dict[str, int]
    cpu_s: float | None
    lag_samples_ms: list[float]
    busy: list[tuple[float, float]]  # when all C slots had a measured request in flight (perf_counter)
    server: ServerFigures
    extra_warnings: tuple[str, ...] = ()


def concurrency_warning(achieved: float, c: int, requests: int, cpu_s: float | None, window: float) -> str:
    """Why the server had fewer than C requests in flight on average over the window."""
    if requests < c:
        why = f"only {requests} measured requests for {c} slots"
    elif cpu_s is not None and cpu_s / window > CPU_BUSY_LIMIT:
        why = "the client could not keep up"
    else:
        why = ("the last requests ran with fewer in flight: the request count is not a multiple of C "
               "or the output lengths vary")
    return (f"achieved concurrency {achieved:.2f} < {CONCURRENCY_WARN:.2f} x {c}: the server had fewer "
            f"than {c} requests in flight on average ({why})")


def summarize(inp: LevelInputs) -> LevelResult:
    recs = inp.records
    c = inp.concurrency
    warnings = list(inp.extra_warnings)
    failed = sum(inp.failures.values())
    if failed:
        parts = ", ".join(f"{k}: {v}" for k, v in sorted(inp.failures.items()))
        warnings.append(f"{failed} request(s) failed ({parts})")
    tokens = sum(r.tokens for r in recs)
    chunks = sum(r.chunks for r in recs)
    chunk_counted = any(r.chunk_counted for r in recs)
    if chunk_counted:
        warnings.append("server sent no usage: N chunk-counted (lower bound); token figures are lower bounds")
    window = None
    out_tok_s = req_s = achieved = None
    if recs:
        first = min(r.t0 for r in recs)
        last = max(r.end for r in recs)
        window = last - first if last > first else None
    if window:
        out_tok_s = tokens / window
        req_s = len(recs) / window
        achieved = sum(r.e2e for r in recs) / window
        if achieved < CONCURRENCY_WARN * c:
            warnings.append(concurrency_warning(achieved, c, len(recs), inp.cpu_s, window))
    steady_s = sum(b - a for a, b in inp.busy) if inp.busy else None
    steady_span = None
    if inp.busy and recs:
        start = min(r.t0 for r in recs)
        # the busy time opens just before the first request's t0 is stamped: a few microseconds, not shown
        steady_span = (round(max(inp.busy[0][0] - start, 0.0), 6), round(inp.busy[-1][1] - start, 6))
    lag_p99 = percentile(sorted(inp.lag_samples_ms), 99) if inp.lag_samples_ms else None
    cpu_per_1k = inp.cpu_s / tokens * 1000.0 if inp.cpu_s is not None and tokens else None
    busy = inp.cpu_s / window if inp.cpu_s is not None and window else None
    unreliable = False
    if lag_p99 is not None and lag_p99 > LAG_P99_LIMIT_MS:
        unreliable = True
        warnings.append(f"client event-loop lag p99 {lag_p99:.1f} ms > {LAG_P99_LIMIT_MS:.0f} ms: "
                        "client saturated, level unreliable")
    if busy is not None and busy > CPU_BUSY_LIMIT:
        unreliable = True
        warnings.append(f"client CPU {busy:.0%} of a core: client saturated, level unreliable")
    tpots = [t for t in (r.tpot for r in recs) if t is not None]
    rates = [1.0 / t for t in tpots if t > 0]
    ci = median_ci(rates)
    icls = [t for t in (r.icl for r in recs) if t is not None]
    return LevelResult(
        concurrency=c, requests=len(recs), failed=failed, failures=dict(inp.failures),
        output_tokens=tokens, duration_s=window, output_tok_s=out_tok_s, request_per_s=req_s,
        achieved_concurrency=achieved,
        steady_tok_s=steady_rate(recs, inp.busy), steady_s=steady_s, steady_span_s=steady_span,
        tokens_per_chunk=tokens / chunks if chunks else None, chunk_counted=chunk_counted,
        ttft_ms=dist([r.ttft for r in recs], 1000.0), tpot_ms=dist(tpots, 1000.0),
        decode_tok_s_per_request=dist(rates),
        e2e_ms=dist([r.e2e for r in recs], 1000.0), icl_ms=dist(icls, 1000.0),
        queue_ms=dist([r.queue_s for r in recs], 1000.0), server=inp.server,
        client=ClientHealth(cpu_s_per_1k_tokens=cpu_per_1k, loop_lag_ms_p99=lag_p99, cpu_busy=busy,
                            cpu_s=inp.cpu_s),
        unreliable=unreliable, warnings=tuple(warnings), records=tuple(recs),
        decode_tok_s_ci95=(round(ci[0], 3), round(ci[1], 3)) if ci else None,
        decode_tok_s_samples=tuple(round(x, 3) for x in rates),
    )
