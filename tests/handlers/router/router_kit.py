"""Shared pieces of the router tests: a recording outbox and a router over a real job runner."""

from __future__ import annotations

from typing import Any

from handlers.auth import Policy
from handlers.contract import Actor, ChatMessage, Reply
from handlers.router import Domain, Router
from services.events import EventBus
from services.experiments.results import Results
from services.jobs.runner import JobRunner
from services.store.audit import AuditLog
from services.store.db import Database
from services.units.revisions import Revisions


class RecordingOutbox:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Reply, str, str | None]] = []

    async def send(self, key: str, reply: Reply, *, channel: str, thread_of: str | None = None) -> None:
        self.sent.append((key, reply, channel, thread_of))


class Boom:
    """An experiments stand-in whose every call is a bug (for the reference-id path)."""

    def ops(self, host: str) -> Any:
        raise RuntimeError("secret-internal-detail xoxb-1234567890-abcdef")

    async def preview(self, host: str, changes: dict[str, str], **_: Any) -> Any:
        raise RuntimeError("secret-internal-detail")


async def make_router(db: Database, policy: Policy) -> tuple[Router, RecordingOutbox, JobRunner]:
    audit = AuditLog(db)

    async def never(ctx: Any) -> Any:
        raise AssertionError("no job should run in these tests")

    jobs = JobRunner(db, EventBus(), audit, holder="t", host_names=["gpu-1", "gpu-2"], pipeline=never)
    outbox = RecordingOutbox()
    domain = Domain(jobs=jobs, experiments=Boom(), audit=audit, results=Results(db), revisions=Revisions(db),
                    host_names=["gpu-1", "gpu-2"], outbox=outbox)
    return Router(domain, policy), outbox, jobs


def msg(text: str, user: str = "U1", channel: str = "C1") -> ChatMessage:
    return ChatMessage(text=text, actor=Actor(user, f"name-{user}", "slack"), channel=channel)


