"""The bot's store health query: jobs by state, open incidents and the outbox backlog, in one call.

`bot.health` serves these as Prometheus gauges; it asks here instead of reading tables itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select

from services.store import Database, Incident, Job, OutboxStore


@dataclass(frozen=True)
class HealthCounts:
    jobs: dict[str, int]  # job state -> how many
    incidents_open: int
    outbox_depth: int  # messages not yet delivered


class HealthQuery:
    """Counts the health page shows; raises whatever the database raises (the caller reports it)."""

    def __init__(self, db: Database, outbox: OutboxStore) -> None:
        self._db = db
        self._outbox = outbox

    async def counts(self) -> HealthCounts:
        async with self._db.sessions() as s:
            rows = (await s.execute(select(Job.state, func.count()).group_by(Job.state))).all()
            incidents = await s.scalar(select(func.count()).select_from(Incident).where(Incident.state == "open"))
        return HealthCounts(jobs={state: int(n) for state, n in rows}, incidents_open=int(incidents or 0),
                            outbox_depth=await self._outbox.depth())
