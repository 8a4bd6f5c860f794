"""The generic outbox delivery loop (transport-agnostic) and the `Outbox` adapter over the store.

Every outgoing message is first a row in the outbox (`services.store.outbox.OutboxStore`). One loop per
transport claims due items, hands each to that transport's `Deliverer`, and marks it sent (the
store then remembers which transport message the key became) or failed with a retry delay:
exponential backoff with jitter, never shorter than a rate limit's ``Retry-After``. An item is
only ever claimed by one holder at a time, and a deliverer gets the item's idempotency key so a
retry after an ambiguous failure (a timeout after the message landed) does not post it twice.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from handlers.contract import Reply
from services.retry import Backoff

if TYPE_CHECKING:
    from services.store import MessageRef, OutboxItem, OutboxStore

log = logging.getLogger(__name__)


class RetryLater(Exception):
    """Raised by a deliverer when the transport asked us to wait (rate limit, outage).

    ``retry_after`` is the delay the transport asked for (seconds), if it said one; ``defer_batch``
    asks the loop to put the rest of the claimed batch back for the same delay. ``exact`` says the
    delay is authoritative (a rate limit's ``Retry-After`` or the transport's own pacing): the item
    is retried right after it, without exponential backoff on top (nothing failed).
    """

    def __init__(self, reason: str, *, retry_after: float | None = None, defer_batch: bool = False,
                 exact: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.defer_batch = defer_batch
        self.exact = exact


class Deliverer(Protocol):
    """One transport's way of putting an outbox item on screen."""

    transport: str

    async def deliver(self, item: OutboxItem, *, existing: MessageRef | None,
                      parent: MessageRef | None) -> MessageRef:
        """Post (``existing is None``) or edit (``existing``) the item's message; under ``parent``
        when the item belongs in a thread. Returns where the message is."""
        ...


DELIVERY_BACKOFF = Backoff(initial_s=0.5, max_s=60.0, jitter=0.5)


@dataclass
class DeliveryStats:
    """Counters a health endpoint or a test can read."""

    sent: int = 0
    failed: int = 0
    rate_limited: int = 0
    last_error: str | None = None
    last_sent_at: float | None = None


async def run_delivery(store: OutboxStore, deliverer: Deliverer, *, holder: str, stop: asyncio.Event,
                       poll_s: float = 0.2, wake: asyncio.Event | None = None,
                       backoff: Backoff | None = None, deliver_timeout_s: float = 60.0,
                       lease_s: float = 90.0, stats: DeliveryStats | None = None) -> None:
    """Deliver the transport's outbox until ``stop`` is set.

    Items of one claimed batch are delivered in order, one at a time (the store orders them; a
    thread reply waits for its parent). ``wake`` cuts the idle wait short when something was just
    enqueued. A store failure (database briefly away) is logged and retried; nothing is dropped.
    """
    backoff = backoff or DELIVERY_BACKOFF
    store_backoff = Backoff(initial_s=poll_s, max_s=5.0, jitter=0.0)
    stats = stats if stats is not None else DeliveryStats()
    transport = deliverer.transport
    store_failures = 0
    while not stop.is_set():
        try:
            items = await store.claim(transport=transport, holder=holder, lease_s=lease_s)
            store_failures = 0
        except Exception as exc:  # the database is the source of truth: wait for it
            store_failures += 1
            log.warning("outbox claim failed (%s), retrying", type(exc).__name__)
            await _idle(stop, wake, store_backoff.delay(store_failures))
            continue
        if not items:
            await _idle(stop, wake, poll_s)
            continue
        deferred_for: float | None = None
        for item in items:
            if deferred_for is not None:
                await _mark_failed(store, item, "deferred: transport rate limited", deferred_for)
                continue
            delay = await _deliver_one(store, deliverer, item, backoff=backoff,
                                       timeout_s=deliver_timeout_s, stats=stats)
            if delay is not None and delay[1]:
                deferred_for = delay[0]
            if stop.is_set():
                break


async def _deliver_one(store: OutboxStore, deliverer: Deliverer, item: OutboxItem, *, backoff: Backoff,
                       timeout_s: float, stats: DeliveryStats) -> tuple[float, bool] | None:
    """Deliver one item; returns ``(retry_in_s, defer_batch)`` when it failed, else None."""
    transport = deliverer.transport
    try:
        existing = await store.ref_for(transport, item.key)
        parent = await store.ref_for(transport, item.thread_of) if item.thread_of else None
    except Exception as exc:
        log.warning("outbox lookup failed for %s (%s)", item.idempotency_key, type(exc).__name__)
        return await _mark_failed(store, item, f"store: {type(exc).__name__}", backoff.delay(item.attempts))
    try:
        ref = await asyncio.wait_for(deliverer.deliver(item, existing=existing, parent=parent), timeout_s)
    except RetryLater as exc:
        stats.rate_limited += 1
        stats.last_error = exc.reason
        if exc.exact and exc.retry_after is not None:
            retry_in = exc.retry_after * (1 + 0.05 * random.random()) + 0.01  # never before it
        else:
            retry_in = backoff.delay(item.attempts, at_least=exc.retry_after or 0.0)
        log.info("delivery of %s deferred %.1fs: %s", item.idempotency_key, retry_in, exc.reason)
        res = await _mark_failed(store, item, exc.reason, retry_in)
        return (retry_in, exc.defer_batch) if res is not None else None
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        stats.failed += 1
        reason = _describe(exc)
        stats.last_error = reason
        retry_in = backoff.delay(item.attempts)
        log.warning("delivery of %s failed (attempt %d): %s; retry in %.1fs", item.idempotency_key,
                    item.attempts + 1, reason, retry_in)
        return await _mark_failed(store, item, reason, retry_in)
    try:
        await store.mark_sent(item, ref)
    except Exception as exc:
        # The message is out but not recorded; the lease expires and the retry finds the message
        # by its idempotency key instead of posting it again.
        log.error("delivered %s but could not record it (%s)", item.idempotency_key, type(exc).__name__)
        return None
    stats.sent += 1
    stats.last_sent_at = time.monotonic()
    return None


async def _mark_failed(store: OutboxStore, item: OutboxItem, error: str,
                       retry_in: float) -> tuple[float, bool] | None:
    try:
        await store.mark_failed(item, error=error[:500], retry_in_s=retry_in)
    except Exception as exc:
        log.error("could not record failed delivery of %s (%s); the lease will expire",
                  item.idempotency_key, type(exc).__name__)
    return (retry_in, False)


def _describe(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


async def _idle(stop: asyncio.Event, wake: asyncio.Event | None, seconds: float) -> None:
    waiters = [asyncio.ensure_future(stop.wait())]
    if wake is not None:
        waiters.append(asyncio.ensure_future(wake.wait()))
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
        if wake is not None:
            wake.clear()


class StoreOutbox:
    """The handlers' `Outbox` protocol over an `OutboxStore`, for one transport.

    ``send`` persists the message (so nothing is lost) and wakes that transport's delivery loop.
    ``extra`` is merged into each payload (transport hints such as Slack's ``{"slack": {...}}``).
    """

    def __init__(self, store: OutboxStore, *, transport: str, wake: asyncio.Event | None = None) -> None:
        self.store = store
        self.transport = transport
        self.wake = wake

    async def send(self, key: str, reply: Reply, *, channel: str, thread_of: str | None = None) -> None:
        await self.enqueue(key, reply, channel=channel, thread_of=thread_of)

    async def enqueue(self, key: str, reply: Reply, *, channel: str, thread_of: str | None = None,
                      extra: dict[str, object] | None = None) -> OutboxItem:
        payload = reply.to_json()
        if extra:
            payload.update(extra)
        item = await self.store.enqueue(transport=self.transport, key=key, channel=channel,
                                        payload=payload, thread_of=thread_of)
        if self.wake is not None:
            self.wake.set()
        return item

