"""Benchmark results: store each run with its levels, find the previous run, compare, and give a verdict.

A run is stored with the host, model, a short label of its configuration ("steps 10"), the unit
revision and the server's startup capacity. Comparisons are against the previous successful run
of the same host and model; `services.experiments.verdicts` judges them against the measured noise.
Each level keeps its per-request decode rates and the bootstrap interval of their median, and
`repeats` gathers the medians of repeated runs of one configuration (the run-to-run noise).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from services.errors import NotFound
from services.store import BenchResult, BenchRun, Database, utcnow


@dataclass(frozen=True)
class LevelFigures:
    """The figures people compare, for one concurrency level (None where unknown)."""

    concurrency: int
    requests: int
    failed: int
    decode_tok_s: float | None  # per request, p50
    output_tok_s: float | None
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    tpot_p50_ms: float | None
    accept_len: float | None
    accept_rate: float | None
    tokens_per_chunk: float | None
    reliable: bool
    warnings: tuple[str, ...] = ()
    decode_ci: tuple[float, float] | None = None  # bootstrap 95 % interval of decode_tok_s
    decode_samples: tuple[float, ...] = ()  # per-request decode tok/s
    ttft_p95_ms: float | None = None


@dataclass(frozen=True)
class RunSummary:
    id: int
    host: str
    model: str
    label: str
    job_id: int | None
    revision_id: int | None
    ok: bool
    started_at: datetime
    capacity: dict[str, Any]
    flags: dict[str, Any]
    levels: tuple[LevelFigures, ...]

    def level(self, c: int) -> LevelFigures | None:
        return next((lv for lv in self.levels if lv.concurrency == c), None)


def _p(d: Any, key: str) -> float | None:
    if isinstance(d, dict):
        v = d.get(key)
        return float(v) if isinstance(v, int | float) else None
    return None


def figures_from_json(level: dict[str, Any]) -> LevelFigures:
    server = level.get("server") or {}
    return LevelFigures(
        concurrency=int(level["concurrency"]), requests=int(level.get("requests") or 0),
        failed=int(level.get("failed") or 0),
        decode_tok_s=_p(level.get("decode_tok_s_per_request"), "p50"),
        output_tok_s=_p(level, "output_tok_s"),
        ttft_p50_ms=_p(level.get("ttft_ms"), "p50"), ttft_p99_ms=_p(level.get("ttft_ms"), "p99"),
        ttft_p95_ms=_p(level.get("ttft_ms"), "p95"),
        tpot_p50_ms=_p(level.get("tpot_ms"), "p50"),
        accept_len=_p(server, "accept_len"), accept_rate=_p(server, "accept_rate"),
        tokens_per_chunk=_p(level, "tokens_per_chunk"),
        reliable=not bool(level.get("unreliable")),
        warnings=tuple(str(w) for w in level.get("warnings") or ()),
        decode_ci=_ci(level.get("decode_tok_s_ci95")),
        decode_samples=tuple(float(x) for x in level.get("decode_tok_s_samples") or ()
                             if isinstance(x, int | float)))


def _ci(v: Any) -> tuple[float, float] | None:
    if isinstance(v, list | tuple) and len(v) == 2 and all(isinstance(x, int | float) for x in v):
        return float(v[0]), float(v[1])
    return None


class Results:
    """Store and read benchmark runs."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def save(self, *, host: str, model: str, label: str, result: dict[str, Any], ok: bool,
                   job_id: int | None = None, revision_id: int | None = None,
                   flags: dict[str, Any] | None = None, capacity: dict[str, Any] | None = None) -> RunSummary:
        async with self._db.session() as s:
            run = BenchRun(job_id=job_id, host=host, model=model, label=label, revision_id=revision_id,
                           flags=flags or {}, capacity=capacity or {}, raw=result, ok=ok,
                           started_at=utcnow(), finished_at=utcnow())
            s.add(run)
            await s.flush()
            for lv in result.get("levels", []):
                f = figures_from_json(lv)
                s.add(BenchResult(run_id=run.id, concurrency=f.concurrency, requests=f.requests, failed=f.failed,
                                  output_tok_s=f.output_tok_s, decode_tok_s_p50=f.decode_tok_s,
                                  decode_tok_s_ci_lo=f.decode_ci[0] if f.decode_ci else None,
                                  decode_tok_s_ci_hi=f.decode_ci[1] if f.decode_ci else None,
                                  ttft_ms_p50=f.ttft_p50_ms, ttft_ms_p99=f.ttft_p99_ms, tpot_ms_p50=f.tpot_p50_ms,
                                  accept_len=f.accept_len, accept_rate=f.accept_rate, reliable=f.reliable,
                                  data=lv))
            run_id = run.id
        return await self.get(run_id)

    async def get(self, run_id: int) -> RunSummary:
        async with self._db.sessions() as s:
            run = await s.get(BenchRun, run_id)
            if run is None:
                raise NotFound(f"there is no benchmark run {run_id}")
            return _summary(run)

    async def for_job(self, job_id: int) -> list[RunSummary]:
        async with self._db.sessions() as s:
            runs = (await s.execute(select(BenchRun).where(BenchRun.job_id == job_id)
                                    .order_by(BenchRun.id))).scalars().all()
            return [_summary(r) for r in runs]

    async def previous(self, host: str, model: str, *, before_id: int | None = None) -> RunSummary | None:
        """The newest successful run of this host and model (older than `before_id` if given)."""
        async with self._db.sessions() as s:
            stmt = select(BenchRun).where(BenchRun.host == host, BenchRun.model == model, BenchRun.ok.is_(True))
            if before_id is not None:
                stmt = stmt.where(BenchRun.id < before_id)
            run = await s.scalar(stmt.order_by(BenchRun.id.desc()).limit(1))
            return None if run is None else _summary(run)

    async def repeats(self, host: str, model: str, *, limit: int = 200) -> dict[str, dict[int, list[float]]]:
        """Medians of the host's recent successful runs, by configuration (unit revision, else label) and
        concurrency — the history the run-to-run noise is measured from."""
        async with self._db.sessions() as s:
            rows = (await s.execute(
                select(BenchRun.revision_id, BenchRun.label, BenchResult.concurrency, BenchResult.decode_tok_s_p50,
                       BenchResult.reliable)
                .join(BenchResult, BenchResult.run_id == BenchRun.id)
                .where(BenchRun.host == host, BenchRun.model == model, BenchRun.ok.is_(True))
                .order_by(BenchRun.id.desc()).limit(limit))).all()
        out: dict[str, dict[int, list[float]]] = {}
        for rev, label, c, med, reliable in rows:
            if med is None or not reliable:
                continue
            key = f"rev:{rev}" if rev is not None else f"label:{label}"
            out.setdefault(key, {}).setdefault(int(c), []).append(float(med))
        return out

    async def recent(self, host: str | None = None, limit: int = 10) -> list[RunSummary]:
        async with self._db.sessions() as s:
            stmt = select(BenchRun)
            if host:
                stmt = stmt.where(BenchRun.host == host)
            runs = (await s.execute(stmt.order_by(BenchRun.id.desc()).limit(limit))).scalars().all()
            return [_summary(r) for r in runs]


def _summary(run: BenchRun) -> RunSummary:
    levels = tuple(figures_from_json(lv) for lv in (run.raw or {}).get("levels", []))
    return RunSummary(id=run.id, host=run.host, model=run.model, label=run.label, job_id=run.job_id,
                      revision_id=run.revision_id, ok=run.ok, started_at=run.started_at,
                      capacity=dict(run.capacity or {}), flags=dict(run.flags or {}), levels=levels)


def pct(new: float | None, old: float | None) -> float | None:
    if new is None or old is None or old == 0:
        return None
    return (new - old) / old * 100.0
