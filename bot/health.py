"""The bot's own health: event-loop lag, jobs, incidents, outbox depth, journal lag — as a
Prometheus `/metrics` page, a `/healthz` answer, and one status line for chat.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Iterator
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from services.status import HealthQuery


class LoopLag:
    """Samples how late the event loop wakes a 100 ms sleeper; keeps the last few minutes."""

    def __init__(self, interval_s: float = 0.1, keep: int = 3000) -> None:
        self.interval_s = interval_s
        self.samples: collections.deque[float] = collections.deque(maxlen=keep)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="loop-lag")

    async def _run(self) -> None:
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(self.interval_s)
            self.samples.append(max(0.0, time.perf_counter() - t0 - self.interval_s))

    def p99_ms(self) -> float:
        if not self.samples:
            return 0.0
        s = sorted(self.samples)
        return s[min(len(s) - 1, int(len(s) * 0.99))] * 1000

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


class HealthServer:
    """Serves /healthz and /metrics for one bot process."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.lag = LoopLag()
        self.lag.start()
        self.started = time.time()
        self.db_ok = True
        self.query = HealthQuery(core.db, core.store)

    async def figures(self) -> dict[str, Any]:
        core = self.core
        out: dict[str, Any] = {"loop_lag_p99_ms": self.lag.p99_ms(), "uptime_s": time.time() - self.started}
        try:
            counts = await self.query.counts()
            out["jobs"] = counts.jobs
            out["incidents_open"] = counts.incidents_open
            out["outbox_depth"] = counts.outbox_depth
            self.db_ok = True
        except Exception:
            self.db_ok = False
        out["db_ok"] = self.db_ok
        watch = core.extras.get("journal_status")
        if watch is not None:
            out["journal_lag_s"] = watch()
        stats = core.extras.get("delivery_stats")
        if stats is not None:
            out["chat_errors"] = stats.failed
            out["chat_rate_limited"] = stats.rate_limited
        return out

    def summary(self) -> str:
        """One line for the admin-only `health` command (never for `status`: it is about the bot)."""
        lag = self.lag.p99_ms()
        text = f"bot: loop lag p99 {lag:.0f} ms, database {'ok' if self.db_ok else 'DEGRADED (retrying)'}"
        stats = self.core.extras.get("delivery_stats")
        if stats is not None:
            text += f"; chat sent {stats.sent}, errors {stats.failed}, deferred {stats.rate_limited}"
        pacer = self.core.extras.get("slack_pacer")
        if pacer is not None:
            text += f"; {pacer.summary()}"
        return text

    async def metrics(self, _request: web.Request) -> web.Response:
        """The figures in Prometheus' text format, written by prometheus-client from a one-shot registry."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_FiguresCollector(await self.figures()))
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(self, _request: web.Request) -> web.Response:
        ok = await self.core.db.ping(timeout=2.0)
        return web.json_response({"ok": ok, "loop_lag_p99_ms": round(self.lag.p99_ms(), 1)},
                                 status=200 if ok else 503)

    async def start(self, *, host: str = "0.0.0.0", port: int = 0) -> web.AppRunner:
        app = web.Application()
        app.router.add_get("/metrics", self.metrics)
        app.router.add_get("/healthz", self.healthz)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        return runner


class _FiguresCollector(Collector):
    """One scrape's figures as metric families (names kept from the first, hand-written exposition)."""

    def __init__(self, figures: dict[str, Any]) -> None:
        self.f = figures

    def collect(self) -> Iterator[Metric]:
        f = self.f
        yield GaugeMetricFamily("pitcrew_loop_lag_p99_seconds", "p99 lateness of the event loop's 100 ms sleeper",
                                value=f["loop_lag_p99_ms"] / 1000)
        yield GaugeMetricFamily("pitcrew_db_up", "1 when the database answered the last query", value=int(f["db_ok"]))
        jobs = GaugeMetricFamily("pitcrew_jobs", "jobs by state", labels=["state"])
        for state, n in sorted(f.get("jobs", {}).items()):
            jobs.add_metric([state], n)
        yield jobs
        yield GaugeMetricFamily("pitcrew_incidents_open", "open incidents", value=f.get("incidents_open", 0))
        yield GaugeMetricFamily("pitcrew_outbox_depth", "chat messages waiting to be sent",
                                value=f.get("outbox_depth", 0))
        lag = GaugeMetricFamily("pitcrew_journal_lag_seconds", "how far each host's journal follower is behind",
                                labels=["host"])
        for host, seconds in sorted((f.get("journal_lag_s") or {}).items()):
            if seconds is not None:
                lag.add_metric([host], seconds)
        yield lag
        if "chat_errors" in f:
            yield CounterMetricFamily("pitcrew_chat_errors", "chat calls that failed", value=f["chat_errors"])
            yield CounterMetricFamily("pitcrew_chat_rate_limited", "chat calls answered 429",
                                      value=f["chat_rate_limited"])

