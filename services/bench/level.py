"""One concurrency level of the closed-loop benchmark: at most C requests in flight.

Owns the per-level machinery: C worker tasks, each on its own keep-alive connection
(`services.bench.conn.SlotConnection`), each sending its
warmup requests first; a barrier (every slot's warmups finished) so that the measurement window
starts with no unmeasured request on the server; then the measured requests, taken by whichever
slot is free, and nothing after the last one (no padding), so the window, from the first measured
request sent to the last one's end, holds only measured requests and every figure computed from
them is what the server did in it. Also per-request deadlines and failure classes; the event-loop
lag ticker; the CPU of the process tree over the measurement window (`process_tree_cpu_s`); the server
probe around the same window; cancellation and the dead-server stop.

Every time here is `time.perf_counter()` (sub-microsecond): the loop's own `loop.time()` is uvloop's
libuv clock, whole milliseconds, which made lag samples multiples of 1 ms (a p99 of 1.0000000002).
"""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from services.bench.conn import ConnectFailed, Dropped, Endpoint, SlotConnection
from services.bench.probes import ServerProbe
from services.bench.sse import StreamState
from services.bench.stats import LevelInputs, LevelResult, RequestRecord, ServerFigures, summarize

LAG_TICK_S = 0.010  # the lag ticker's period with 16 or more slots
LAG_TICK_MAX_S = 0.100  # ... and with one: the period is 0.16 s / C within these bounds
PROGRESS_EVERY_S = 0.5
FAILURE_BACKOFF_S = 0.05
DEAD_AFTER_CONNECT_FAILURES = 3
PROBE_TIMEOUT_S = 10.0


def lag_tick_s(concurrency: int) -> float:
    return min(max(0.16 / concurrency, LAG_TICK_S), LAG_TICK_MAX_S)


def process_tree_cpu_s() -> float:
    """User + system CPU seconds of this process (every thread) and of its children that have ended.

    What an observer reading `/proc/<pid>/stat` sees (utime + stime + cutime + cstime), from the kernel's own
    accounting at sub-tick resolution (`/proc` rounds to clock ticks). `time.process_time()`, used before,
    left out the children. Two syscalls; read at the window's edges only.
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class AllBusy:
    """When all C slots had a measured request in flight, and the text events each request received then.

    A request is in flight from just before its bytes are sent to the end of its response (any outcome). Each
    time the C-th one starts, the in-flight requests' event counts are noted; each time one of C ends, the
    interval is closed and every in-flight request is credited the events it received since. O(C) per request
    start or end, nothing per event; `services.bench.stats.steady_rate` turns it into steady tok/s.
    """

    def __init__(self, concurrency: int, clock: Callable[[], float] = time.perf_counter) -> None:
        self._c = concurrency
        self._clock = clock
        self._inflight: dict[int, tuple[StreamState, list[int]]] = {}  # id -> (state, [events at entry, inside])
        self._since: float | None = None
        self.intervals: list[tuple[float, float]] = []

    def started(self, state: StreamState) -> None:
        self._inflight[id(state)] = (state, [state.text_events, 0])
        if len(self._inflight) == self._c:
            self._since = self._clock()
            for st, acc in self._inflight.values():
                acc[0] = st.text_events

    def ended(self, state: StreamState) -> int:
        """The request is over; returns the text events it received while all C slots were busy."""
        if self._since is not None and len(self._inflight) == self._c:
            self.intervals.append((self._since, self._clock()))
            self._since = None
            for st, acc in self._inflight.values():
                acc[1] += st.text_events - acc[0]
        _, acc = self._inflight.pop(id(state))
        return acc[1]


class LoopLag:
    """The event loop's lag: how late a sleep of `tick_s` wakes, on `time.perf_counter()` (never the loop's
    millisecond clock). `run` samples while `recording` is true, in ms; `on_tick(now)` runs after each sample."""

    def __init__(self, tick_s: float) -> None:
        self.tick_s = tick_s
        self.samples: list[float] = []
        self.recording = False

    def start_recording(self) -> None:
        self.samples.clear()
        self.recording = True

    async def run(self, on_tick: Callable[[float], Awaitable[None]] | None = None) -> None:
        clock = time.perf_counter
        expected = clock() + self.tick_s
        while True:
            await asyncio.sleep(max(expected - clock(), 0.0))
            now = clock()
            if self.recording:
                self.samples.append(max(now - expected, 0.0) * 1000.0)
            expected = now + self.tick_s
            if on_tick is not None:
                await on_tick(now)


@dataclass(frozen=True, slots=True)
class BenchProgress:
    """A live view of the running level."""

    concurrency: int
    done: int  # measured requests finished (completed or failed)
    total: int | None  # measured requests planned; None in duration mode
    phase: str  # "warmup" | "measure"
    tok_s: float | None  # output tok/s of the measured requests so far
    e2e_s: float | None  # mean E2E of the level's requests that have ended so far, warmups included
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

    def __init__(self, endpoint: Endpoint, plan: LevelPlan, *,
                 progress: Callable[[BenchProgress], Awaitable[None]] | None,
                 probe: ServerProbe | None, cancel: asyncio.Event | None) -> None:
        self._endpoint = endpoint
        self._plan = plan
        self._progress = progress
        self._probe = probe
        self._cancel = cancel
        self._next = plan.first_index
        self._measured_issued = 0
        self._warming = plan.concurrency  # slots still sending their warmup requests
        self._warmed = asyncio.Event()
        self._records: list[RequestRecord] = []
        self._failures: dict[str, int] = {}
        self._measured_done = 0
        self._measured_inflight = 0
        self._measure_start: float | None = None
        self._deadline_passed = False
        self._cpu_start = 0.0
        self._cpu_s: float | None = None
        self._lag = LoopLag(lag_tick_s(plan.concurrency))
        self._busy = AllBusy(plan.concurrency)
        self._next_progress = 0.0
        self._finished = asyncio.Event()
        self._connect_failures = 0
        self._probe_begun = False
        self._tokens = 0
        self._e2e_sum = 0.0
        self._e2e_n = 0
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
                self._cpu_s = process_tree_cpu_s() - self._cpu_start
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
            cpu_s=self._cpu_s, lag_samples_ms=self._lag.samples,
            busy=self._busy.intervals, server=server, extra_warnings=tuple(warnings)))

    # -- the closed loop -------------------------------------------------------------------------

    def _take_measured(self) -> bool:
        """Claim the next measured request; False once the count is reached or the time is up."""
        plan = self._plan
        if plan.requests is not None:
            if self._measured_issued >= plan.requests:
                return False
            self._measured_issued += 1
            return True
        return not self._deadline_passed

    async def _worker(self) -> None:
        conn = SlotConnection(self._endpoint, connect_timeout_s=min(10.0, self._plan.timeout_s))
        try:
            await self._slot(conn)
        finally:
            conn.close()

    async def _slot(self, conn: SlotConnection) -> None:
        for _ in range(self._plan.warmup):
            if self._finished.is_set():
                return
            idx = self._next
            self._next += 1
            if not await self._request(conn, idx, time.perf_counter(), measured=False):
                await asyncio.sleep(FAILURE_BACKOFF_S)
        self._warming -= 1
        if self._warming == 0:  # the last slot to finish its warmups opens the window
            await self._begin_probe()
            self._warmed.set()
        await self._warmed.wait()
        while not self._finished.is_set() and self._take_measured():
            idx = self._next
            self._next += 1
            if self._measure_start is None:
                self._start_measuring()
            self._measured_inflight += 1
            ok = await self._request(conn, idx, time.perf_counter(), measured=True)
            self._measured_inflight -= 1
            self._measured_done += 1
            self._check_finished()
            if not ok:
                await asyncio.sleep(FAILURE_BACKOFF_S)

    async def _begin_probe(self) -> None:
        """The server's figures at the window's start, read before any measured request is sent
        (so its HTTP call neither competes with them nor counts as the client's CPU)."""
        if self._probe is None:
            return
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S):
                await self._probe.begin()
            self._probe_begun = True
        except Exception:  # a probe never breaks a benchmark
            self._probe_begun = False

    def _start_measuring(self) -> None:
        self._measure_start = time.perf_counter()
        self._cpu_start = process_tree_cpu_s()
        self._lag.start_recording()
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
            self._cpu_s = process_tree_cpu_s() - self._cpu_start
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

    async def _request(self, conn: SlotConnection, idx: int, slot: float, *, measured: bool) -> bool:
        state = StreamState()
        request = self._endpoint.request(self._plan.path, self._plan.body(idx))
        busy_chunks = 0
        if measured:
            self._busy.started(state)
        try:
            async with asyncio.timeout(self._plan.timeout_s):
                resp = await conn.stream(request, state)
        except TimeoutError:
            return self._fail("timeout", measured)
        except ConnectFailed:
            return self._fail("connect", measured)
        except Dropped:
            return self._fail("dropped", measured)
        finally:
            if measured:
                busy_chunks = self._busy.ended(state)
        self._connect_failures = 0
        if resp.status != 200:
            return self._fail(f"http_{resp.status}", measured)
        if state.error is not None:
            return self._fail("stream_error", measured)
        if state.first_text is None or state.last_text is None:
            return self._fail("no_text" if state.done else "dropped", measured)
        if not state.done and state.completion_tokens is None:
            return self._fail("dropped", measured)
        self._e2e_sum += state.last_text - resp.t0
        self._e2e_n += 1
        if self._e2e_n == 1:
            self._next_progress = 0.0  # the first E2E of the level goes out at the next tick (the run's estimate)
        if not measured:
            return True
        t0 = resp.t0
        counted = state.completion_tokens is None
        tokens = state.text_events if state.completion_tokens is None else state.completion_tokens
        self._tokens += tokens
        self._records.append(RequestRecord(
            index=idx, t0=t0, queue_s=t0 - slot, ttft=state.first_text - t0, e2e=state.last_text - t0,
            tokens=tokens, chunks=state.text_events, chunk_counted=counted, max_gap=state.max_gap,
            busy_chunks=busy_chunks))
        return True

    # -- around the loop -------------------------------------------------------------------------

    async def _ticker(self) -> None:
        """Sample the event loop's lag and send progress; few slots mean few events, so it wakes less often
        there (at C=1 a 10 ms ticker was a third of the client's CPU)."""
        self._next_progress = time.perf_counter() + PROGRESS_EVERY_S
        await self._lag.run(self._tick)

    async def _tick(self, now: float) -> None:
        if self._progress is not None and now >= self._next_progress:
            self._next_progress = now + PROGRESS_EVERY_S
            await self._progress(self.snapshot())

    def snapshot(self) -> BenchProgress:
        plan = self._plan
        tok_s = None
        if self._measure_start is not None and self._tokens:
            tok_s = self._tokens / max(time.perf_counter() - self._measure_start, 1e-9)
        return BenchProgress(concurrency=plan.concurrency, done=self._measured_done, total=plan.requests,
                             phase="warmup" if self._measure_start is None else "measure",
                             tok_s=tok_s, e2e_s=self._e2e_sum / self._e2e_n if self._e2e_n else None,
                             level=plan.level, levels=plan.levels)

    async def _watch_cancel(self) -> None:
        assert self._cancel is not None
        await self._cancel.wait()
        self.cancelled = True
        self._finished.set()

    async def _probe_end(self) -> ServerFigures:
        if self._probe is None or not self._probe_begun or self._measure_start is None:
            return ServerFigures()
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S):
                return await self._probe.end()
        except Exception:  # a probe never breaks a benchmark
            return ServerFigures()
