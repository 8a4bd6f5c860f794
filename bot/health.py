"""The bot's own health: event-loop lag, jobs, incidents, outbox depth, journal lag — as a
Prometheus `/metrics` page, a `/healthz` answer, and one status line for chat.
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any

from aiohttp import web

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
        lag = self.lag.p99_ms()
        return f"bot: loop lag p99 {lag:.0f} ms, database {'ok' if self.db_ok else 'DEGRADED (retrying)'}"

    async def metrics(self, _request: web.Request) -> web.Response:
        f = await self.figures()
        lines = ["# TYPE pitcrew_loop_lag_p99_seconds gauge",
                 f"pitcrew_loop_lag_p99_seconds {f['loop_lag_p99_ms'] / 1000:.6f}",
                 "# TYPE pitcrew_db_up gauge", f"pitcrew_db_up {1 if f['db_ok'] else 0}",
                 "# TYPE pitcrew_jobs gauge"]
        for state, n in sorted(f.get("jobs", {}).items()):
            lines.append(f'pitcrew_jobs{{state="{state}"}} {n}')
        lines += ["# TYPE pitcrew_incidents_open gauge", f"pitcrew_incidents_open {f.get('incidents_open', 0)}",
                  "# TYPE pitcrew_outbox_depth gauge", f"pitcrew_outbox_depth {f.get('outbox_depth', 0)}"]
        for host, lag in sorted((f.get("journal_lag_s") or {}).items()):
            if lag is not None:
                lines.append(f'pitcrew_journal_lag_seconds{{host="{host}"}} {lag:.3f}')
        if "chat_errors" in f:
            lines += [f"pitcrew_chat_errors_total {f['chat_errors']}",
                      f"pitcrew_chat_rate_limited_total {f['chat_rate_limited']}"]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

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
