"""The one scheduler every Slack Web API call goes through: Retry-After holds and per-method budgets.

`PacedWebClient` is the `AsyncWebClient` pitcrew uses for everything (outbox delivery, button
receipts, user and group look-ups, Socket Mode's ``apps.connections.open``): its ``api_call``, which
every SDK method funnels into, first asks the workspace's `SlackPacer` for a turn.

The pacer keeps two things per workspace, shared by every job, incident and command:

* **holds** — when Slack answers HTTP 429 it says how long to wait (``Retry-After``). The method is
  held that long for the whole workspace; ``chat.postMessage``/``chat.postEphemeral``, whose limit
  is per channel, are held for that channel. No call of a held method leaves before the hold ends,
  whoever makes it: a newer edit of a message that replaced one held back by a 429 inherits the
  hold, because the hold belongs to the method, not to the outbox row.
* **budgets** — a token bucket per method (per channel for posting) sized from Slack's published
  tiers, so the bot stays under the limit instead of discovering it with 429s. A bucket of
  ``burst`` tokens refilled at ``(per_minute - burst) / 60`` per second lets at most ``per_minute``
  calls through in any 60-second window.

Slack's published limits (https://docs.slack.dev/apis/web-api/rate-limits , checked 2026-12): limits
apply "per API method per workspace/team per app"; Tier 1 1+/min, Tier 2 20+/min, Tier 3 50+/min,
Tier 4 100+/min; ``chat.postMessage`` is a special tier: "generally allows posting one message per
second per channel, while also maintaining a workspace-wide limit", short bursts allowed. Each
method's tier is on its reference page (https://docs.slack.dev/reference/methods/<method>).

Waiting: a caller that cannot wait (the outbox delivery loop, which would otherwise stall every
other message) asks `SlackPacer.ready_in` first and reschedules the item; everyone else waits in
``acquire`` up to ``max_wait_s`` and then gets `SlackHeld`.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

DOCS_URL = "https://docs.slack.dev/apis/web-api/rate-limits"


@dataclass(frozen=True)
class Budget:
    """At most ``per_minute`` calls in any 60 s window, up to ``burst`` of them back to back."""

    per_minute: float
    burst: int = 3
    per_channel: bool = False

    @property
    def refill_per_s(self) -> float:
        return max(0.01, (self.per_minute - self.burst) / 60.0)


TIER1 = Budget(per_minute=5, burst=2)  # "1+ per minute"; a few reconnects must still go
TIER2 = Budget(per_minute=20, burst=4)
TIER3 = Budget(per_minute=50, burst=5)
TIER4 = Budget(per_minute=100, burst=10)
# Special tier: one message per second per channel, short bursts allowed.
POST_PER_CHANNEL = Budget(per_minute=62, burst=2, per_channel=True)

# Each method's tier from its reference page on docs.slack.dev; unknown methods get Tier 2.
BUDGETS: dict[str, Budget] = {
    "chat.postMessage": POST_PER_CHANNEL,
    "chat.postEphemeral": Budget(per_minute=100, burst=10, per_channel=True),  # Tier 4
    "chat.update": TIER3,
    "chat.delete": TIER3,
    "chat.getPermalink": TIER4,
    "conversations.history": TIER3,
    "conversations.replies": TIER3,
    "conversations.info": TIER3,
    "users.info": TIER4,
    "usergroups.list": TIER2,
    "files.getUploadURLExternal": TIER4,
    "files.completeUploadExternal": TIER4,
    "auth.test": TIER4,  # special tier, "hundreds per minute"
    "apps.connections.open": TIER1,
    "views.publish": TIER4,  # the App Home tab (bot.slack_home), per user
}
# Methods whose limit (and so whose 429 hold) is per channel rather than per workspace.
PER_CHANNEL_HOLD = frozenset({"chat.postMessage", "chat.postEphemeral"})


class SlackHeld(Exception):
    """A call could not get a turn within the caller's patience (a 429 hold or an empty budget)."""

    def __init__(self, method: str, retry_after: float) -> None:
        super().__init__(f"{method} is held for {retry_after:.1f}s (Slack rate limit)")
        self.method = method
        self.retry_after = retry_after


@dataclass
class _Bucket:
    tokens: float
    at: float


@dataclass
class PacerStats:
    """What the pacer did, for the health command and for tests."""

    calls: Counter[str] = field(default_factory=Counter)
    rate_limited: Counter[str] = field(default_factory=Counter)  # 429s Slack sent, per method
    waited_s: float = 0.0


class SlackPacer:
    """Holds and budgets for one workspace (see the module docstring)."""

    def __init__(self, budgets: dict[str, Budget] | None = None, *, default: Budget = TIER2,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.budgets = dict(BUDGETS if budgets is None else budgets)
        self.default = default
        self.clock = clock
        self.stats = PacerStats()
        self._holds: dict[tuple[str, str | None], float] = {}
        self._buckets: dict[tuple[str, str | None], _Bucket] = {}

    @classmethod
    def unlimited(cls) -> SlackPacer:
        """Holds only, no budgets: for load tests of the bot's own throughput against a fake Slack
        (real Slack would take ten minutes to accept 600 answers in one channel)."""
        return cls({}, default=Budget(per_minute=1e9, burst=1_000_000))

    def budget(self, method: str) -> Budget:
        return self.budgets.get(method, self.default)

    def _bucket_key(self, method: str, channel: str | None) -> tuple[str, str | None]:
        return (method, channel if self.budget(method).per_channel else None)

    def _hold_keys(self, method: str, channel: str | None) -> list[tuple[str, str | None]]:
        keys: list[tuple[str, str | None]] = [(method, None)]
        if method in PER_CHANNEL_HOLD and channel:
            keys.append((method, channel))
        return keys

    def _refill(self, method: str, channel: str | None, now: float) -> _Bucket:
        b = self.budget(method)
        key = self._bucket_key(method, channel)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(tokens=float(b.burst), at=now)
        bucket.tokens = min(float(b.burst), bucket.tokens + (now - bucket.at) * b.refill_per_s)
        bucket.at = now
        return bucket

    def held_for(self, method: str, channel: str | None = None) -> float:
        """Seconds left on a 429 hold for this method (and channel), 0 when none."""
        now = self.clock()
        until = max((self._holds.get(k, 0.0) for k in self._hold_keys(method, channel)), default=0.0)
        return max(0.0, until - now)

    def ready_in(self, method: str, channel: str | None = None) -> float:
        """Seconds until a call of ``method`` (to ``channel``) may leave; 0 = now. Takes nothing."""
        held = self.held_for(method, channel)
        bucket = self._refill(method, channel, self.clock())
        short = 0.0 if bucket.tokens >= 1.0 else (1.0 - bucket.tokens) / self.budget(method).refill_per_s
        return max(held, short)

    async def acquire(self, method: str, channel: str | None = None, *, max_wait_s: float = 30.0) -> None:
        """Wait for a turn and take it; `SlackHeld` if that would take longer than ``max_wait_s``."""
        waited = 0.0
        while True:
            wait = self.ready_in(method, channel)
            if wait <= 0.0:
                self._refill(method, channel, self.clock()).tokens -= 1.0
                self.stats.calls[method] += 1
                self.stats.waited_s += waited
                return
            if waited + wait > max_wait_s:
                raise SlackHeld(method, wait)
            await asyncio.sleep(wait)
            waited += wait

    def hold(self, method: str, channel: str | None, retry_after: float) -> None:
        """Slack answered 429 with ``Retry-After: retry_after``: no call of it before that."""
        key = (method, channel if method in PER_CHANNEL_HOLD and channel else None)
        until = self.clock() + max(0.0, retry_after)
        self._holds[key] = max(self._holds.get(key, 0.0), until)
        self.stats.rate_limited[method] += 1
        # an empty bucket too: the budget was evidently too generous for this workspace right now
        self._refill(method, channel, self.clock()).tokens = 0.0

    def summary(self) -> str:
        held = sorted({m for (m, _c), until in self._holds.items() if until > self.clock()})
        limited = sum(self.stats.rate_limited.values())
        text = f"Slack calls {sum(self.stats.calls.values())}, 429s {limited}"
        return text + (f", held now: {', '.join(held)}" if held else "")


def retry_after_of(exc: SlackApiError) -> float | None:
    """The ``Retry-After`` of a 429 answer (seconds), or None when the error is not a rate limit."""
    resp = exc.response
    status = getattr(resp, "status_code", 200)
    error = str(resp.get("error", "")) if resp is not None else ""
    if status != 429 and error != "ratelimited":
        return None
    headers = getattr(resp, "headers", None) or {}
    for k, v in headers.items():
        if k.lower() == "retry-after":
            raw = v[0] if isinstance(v, list | tuple) else v
            try:
                return max(0.0, float(raw))
            except (TypeError, ValueError):
                break
    return 1.0


def _channel_of(*bodies: Any) -> str | None:
    for body in bodies:
        if isinstance(body, dict):
            ch = body.get("channel") or body.get("channel_id")
            if isinstance(ch, str) and ch:
                return ch
    return None


class PacedWebClient(AsyncWebClient):
    """`AsyncWebClient` whose every call takes a turn from ``pacer`` and reports 429s to it."""

    def __init__(self, *args: Any, pacer: SlackPacer | None = None, max_wait_s: float = 30.0,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pacer = pacer or SlackPacer()
        self.max_wait_s = max_wait_s

    async def api_call(self, api_method: str, *, http_verb: str = "POST", files: dict[str, Any] | None = None,
                       data: Any = None, params: dict[str, Any] | None = None,
                       json: dict[str, Any] | None = None, headers: dict[str, Any] | None = None,
                       auth: dict[str, Any] | None = None) -> AsyncSlackResponse:
        channel = _channel_of(json, data, params)
        await self.pacer.acquire(api_method, channel, max_wait_s=self.max_wait_s)
        try:
            return await super().api_call(api_method, http_verb=http_verb, files=files, data=data,
                                          params=params, json=json, headers=headers, auth=auth)
        except SlackApiError as exc:
            retry_after = retry_after_of(exc)
            if retry_after is not None:
                self.pacer.hold(api_method, channel, retry_after)
            raise
