"""`/metrics` and `/healthz` of a bot process, over real HTTP: the page parses with Prometheus' own parser and
says what the database holds; `/healthz` turns 503 when the database stops answering."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bot.health import HealthServer
from services.store import Database, Job, OutboxStore, utcnow


async def _serve(db: Database, **extras: object) -> tuple[HealthServer, str, object]:
    core = SimpleNamespace(db=db, store=OutboxStore(db), extras=dict(extras))
    server = HealthServer(core)
    runner = await server.start(host="127.0.0.1", port=0)
    port = runner.addresses[0][1]
    return server, f"http://127.0.0.1:{port}", runner


async def test_metrics_page_parses_and_counts_jobs_by_state(db: Database) -> None:
    async with db.session() as s:
        for state in ("queued", "queued", "running", "failed"):
            s.add(Job(kind="try", host="gpu-1", state=state, requested_by="U1", requested_by_name="a",
                      transport="test", channel="C1", command_text="try 4 steps", params={}, created_at=utcnow()))
    server, url, runner = await _serve(db, journal_status=lambda: {"gpu-1": 0.25, "gpu-2": None})
    try:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            page = await client.get(f"{url}/metrics")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
        families = {f.name: f for f in text_string_to_metric_families(page.text)}
        jobs = {s.labels["state"]: s.value for s in families["pitcrew_jobs"].samples}
        assert jobs == {"queued": 2.0, "running": 1.0, "failed": 1.0}
        assert families["pitcrew_db_up"].samples[0].value == 1.0
        assert families["pitcrew_incidents_open"].samples[0].value == 0.0
        lag = {s.labels["host"]: s.value for s in families["pitcrew_journal_lag_seconds"].samples}
        assert lag == {"gpu-1": 0.25}  # a host with no figure yet is left out, not reported as 0
    finally:
        server.lag.stop()
        await runner.cleanup()


async def test_healthz_is_503_when_the_database_is_gone(tmp_path) -> None:
    threads_before = set(threading.enumerate())
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'h.db'}")
    await db.migrate()
    server, url, runner = await _serve(db)
    try:
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            assert (await client.get(f"{url}/healthz")).status_code == 200
            await db.close()
            (tmp_path / "h.db").unlink()
            (tmp_path / "h.db").mkdir()  # the path is no longer a database file
            down = await client.get(f"{url}/healthz")
            page = await client.get(f"{url}/metrics")
        assert down.status_code == 503 and down.json()["ok"] is False
        families = {f.name: f for f in text_string_to_metric_families(page.text)}
        assert families["pitcrew_db_up"].samples[0].value == 0.0
    finally:
        server.lag.stop()
        await runner.cleanup()
        # Each probe of the missing database opened a connection that failed, and aiosqlite stops such a
        # connection's worker thread without waiting for it (`Connection._connect` calls `stop()`: omnilib/aiosqlite
        # #389). Ended after this test's loop closed, a thread delivered its result to the closed loop: a
        # PytestUnhandledThreadExceptionWarning reported at a later test (found with a plugin naming each worker
        # thread's test). The loop is kept until they are done.
        for thread in set(threading.enumerate()) - threads_before:
            if thread.name.endswith("(_connection_worker_thread)"):
                await asyncio.to_thread(thread.join, 10)
