"""One concurrency level of the closed-loop benchmark: exactly C requests in flight.

Owns the per-level machinery: C worker tasks on the shared `httpx.AsyncClient`, each sending its
warmup requests first (excluded, so the measurement starts with C streams in flight), then the
measured requests, then padding requests that keep C in flight until the last measured request
ends (they are cancelled and never counted); per-request deadlines and
failure classes; the event-loop lag ticker; the process CPU over the measurement window; the
server probe around the same window; cancellation and the dead-server stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from services.bench.http import SENT_AT
from services.bench.probes import ServerProbe
from services.bench.sse import StreamState
from services.bench.stats import LevelInputs, LevelResult, RequestRecord, ServerFigures, summarize

LAG_TICK_S = 0.010
PROGRESS_EVERY_S = 0.5
FAILURE_BACKOFF_S = 0.05
DEAD_AFTER_CONNECT_FAILURES = 3
PROBE_END_TIMEOUT_S = 10.0
_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}


@dataclass(frozen=True, slots=True)
class BenchProgress:
    """A live view of the running level."""

    concurrency: int
    done: int  # measured requests finished (completed or failed)
    total: int | None  # measured requests planned; None in duration mode
    phase: str  # "warmup" | "measure"
    tok_s: float | None  # output tok/s of the measured requests so far
    level: int  # 1-based index of the level
    levels: int


@dataclass(frozen=True, slots=True)
class LevelPlan:
    concurrency: int
    warmup: int  # warmup requests per slot (each of the C workers sends these first)
    requests: int | None
    duration_s: float | None
    timeout_s: float
    path: str
    body: Callable[[int], bytes]  # request index -> encoded body
    first_index: int  # request indices of this level start here (prompts differ across levels)
    level: int
    levels: int


class LevelRun:
    """Runs one level; `run()` returns its result, `stopped_reason` says why it ended early."""

    def __init__(self, client: httpx.AsyncClient, plan: LevelPlan, *,
                 progress: Callable[[BenchProgress], Awaitable[None]] | None,
                 probe: ServerProbe | None, cancel: asyncio.Event | None) -> None:
        self._client = client
        self._plan = plan
        self._progress = progress
        self._probe = probe
        self._cancel = cancel
        self._next = plan.first_index
        self._measured_issued = 0
        self._records: list[RequestRecord] = []
        self._failures: dict[str, int] = {}
        self._measured_done = 0
        self._measured_inflight = 0
        self._measure_start: float | None = None
        self._deadline_passed = False
        self._cpu_start = 0.0
        self._cpu_s: float | None = None
        self._lag: list[float] = []
        self._finished = asyncio.Event()
        self._connect_failures = 0
        self._probe_begin: asyncio.Task[None] | None = None
        self._tokens = 0
        self.cancelled = False
        self.server_dead = False

    async def run(self) -> LevelResult:
        plan = self._plan
        workers = [asyncio.create_task(self._worker()) for _ in range(plan.concurrency)]
        ticker = asyncio.create_task(self._ticker())
        watcher = asyncio.create_task(self._watch_cancel()) if self._cancel is not None else None
        try:
            await self._finished.wait()
            if self._cpu_s is None and self._measure_start is not None:
                self._cpu_s = time.process_time() - self._cpu_start
        finally:
            for t in (*workers, ticker, *([watcher] if watcher else [])):
                t.cancel()
            await asyncio.gather(*workers, ticker, *([watcher] if watcher else []),
                                 return_exceptions=True)
        server = await self._probe_end()
        warnings: list[str] = []
        if self.cancelled:
            warnings.append("cancelled: partial level")
        if self.server_dead:
            warnings.append("server unreachable (connection refused): run stopped")
        if self._measure_start is None:
            warnings.append("no measured request was sent")
        return summarize(LevelInputs(
            concurrency=plan.concurrency, records=self._records, failures=self._failures,
            cpu_s=self._cpu_s, lag_samples_ms=self._lag, server=server, extra_warnings=tuple(warnings)))

    # -- the closed loop -------------------------------------------------------------------------

    def _kind(self) -> str:
        plan = self._plan
        if plan.requests is not None:
            if self._measured_issued < plan.requests:
                self._measured_issued += 1
                return "measure"
            return "pad"
        return "pad" if self._deadline_passed else "measure"

    async def _worker(self) -> None:
        warmups = self._plan.warmup
        while not self._finished.is_set():
            idx = self._next
            self._next += 1
            if warmups > 0:
                warmups -= 1
                kind = "warmup"
            else:
                kind = self._kind()
            if kind == "measure":
                if self._measure_start is None:
                    self._start_measuring()
                self._measured_inflight += 1
            slot = time.perf_counter()
            body = self._plan.body(idx)
            ok = await self._request(body, slot, idx, measured=kind == "measure")
            if kind == "measure":
                self._measured_inflight -= 1
                self._measured_done += 1
                self._check_finished()
            if not ok:
                await asyncio.sleep(FAILURE_BACKOFF_S)

    def _start_measuring(self) -> None:
        self._measure_start = time.perf_counter()
        self._cpu_start = time.process_time()
        self._lag.clear()
        if self._probe is not None:
            self._probe_begin = asyncio.create_task(self._probe.begin())
        if self._plan.duration_s is not None:
            asyncio.get_running_loop().call_later(self._plan.duration_s, self._deadline)

    def _deadline(self) -> None:
        self._deadline_passed = True
        self._check_finished()

    def _check_finished(self) -> None:
        plan = self._plan
        done = (self._measured_done >= plan.requests if plan.requests is not None
                else self._deadline_passed and self._measured_inflight == 0)
        if done and not self._finished.is_set():
            self._cpu_s = time.process_time() - self._cpu_start
            self._finished.set()

    def _fail(self, kind: str, measured: bool) -> bool:
        if measured:
            self._failures[kind] = self._failures.get(kind, 0) + 1
        if kind == "connect":
            self._connect_failures += 1
            if self._connect_failures >= DEAD_AFTER_CONNECT_FAILURES:
                self.server_dead = True
                self._finished.set()
        return False

    async def _request(self, body: bytes, slot: float, idx: int, *, measured: bool) -> bool:
        state = StreamState()
        sent: list[float] = []
        SENT_AT.set(sent)
        t_call = time.perf_counter()
        try:
            async with asyncio.timeout(self._plan.timeout_s):
                async with self._client.stream("POST", self._plan.path, content=body,
                                               headers=_HEADERS) as resp:
                    if resp.status_code != 200:
                        await resp.aread()
                        return self._fail(f"http_{resp.status_code}", measured)
                    self._connect_failures = 0
                    feed = state.feed
                    clock = time.perf_counter
                    async for data in resp.aiter_raw():
                        feed(data, clock())
                        if state.error is not None:
                            break
        except TimeoutError:
            return self._fail("timeout", measured)
        except (httpx.ConnectError, httpx.ConnectTimeout):
            return self._fail("connect", measured)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
            return self._fail("dropped", measured)
        except httpx.HTTPError:
            return self._fail("http_error", measured)
        if state.error is not None:
            return self._fail("stream_error", measured)
        if state.first_text is None or state.last_text is None:
            return self._fail("no_text" if state.done else "dropped", measured)
        if not state.done and state.completion_tokens is None:
            return self._fail("dropped", measured)
        if not measured:
            return True
        t0 = sent[0] if sent and sent[0] >= t_call else t_call
        counted = state.completion_tokens is None
        tokens = state.text_events if state.completion_tokens is None else state.completion_tokens
        self._tokens += tokens
        self._records.append(RequestRecord(
            index=idx, t0=t0, queue_s=t0 - slot, ttft=state.first_text - t0, e2e=state.last_text - t0,
            tokens=tokens, chunks=state.text_events, chunk_counted=counted, max_gap=state.max_gap))
        return True

    # -- around the loop -------------------------------------------------------------------------

    async def _ticker(self) -> None:
        loop = asyncio.get_running_loop()
        next_progress = loop.time() + PROGRESS_EVERY_S
        expected = loop.time() + LAG_TICK_S
        while True:
            await asyncio.sleep(max(expected - loop.time(), 0.0))
            now = loop.time()
            if self._measure_start is not None:
                self._lag.append(max(now - expected, 0.0) * 1000.0)
            expected = now + LAG_TICK_S
            if self._progress is not None and now >= next_progress:
                next_progress = now + PROGRESS_EVERY_S
                await self._progress(self.snapshot())

    def snapshot(self) -> BenchProgress:
        plan = self._plan
        tok_s = None
        if self._measure_start is not None and self._tokens:
            tok_s = self._tokens / max(time.perf_counter() - self._measure_start, 1e-9)
        return BenchProgress(concurrency=plan.concurrency, done=self._measured_done, total=plan.requests,
                             phase="warmup" if self._measure_start is None else "measure",
                             tok_s=tok_s, level=plan.level, levels=plan.levels)

    async def _watch_cancel(self) -> None:
        assert self._cancel is not None
        await self._cancel.wait()
        self.cancelled = True
        self._finished.set()

    async def _probe_end(self) -> ServerFigures:
        if self._probe is None or self._probe_begin is None:
            return ServerFigures()
        try:
            async with asyncio.timeout(PROBE_END_TIMEOUT_S):
                await self._probe_begin
                return await self._probe.end()
        except Exception:  # a probe never breaks a benchmark
            with contextlib.suppress(Exception):
                self._probe_begin.cancel()
            return ServerFigures()
