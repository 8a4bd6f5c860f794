"""The Slack App Home tab: publish the fleet at a glance when someone opens it, and keep it fresh.

`HomeTab.attach(bot)` adds an ``app_home_opened`` listener to the Bolt app; `HomeTab.subscribe(bus)`
listens for job and incident events. Who to refresh: users who opened the Home tab within
``recent_s``, remembered in memory (at most ``max_viewers``, the least recently seen dropped first).

Publishing: one task per user at a time, so calls for one user never overlap. A request waits
``settle_s`` (a burst of events, and the database commit behind it, lands in one view) and at least
``min_interval_s`` after that user's previous publish, so a burst gives one publish per user per
interval. Every ``views.publish`` goes through the client's `SlackPacer` (its budget and 429 holds);
a call the pacer holds back is tried again when the hold ends. The fleet is read once per
``settle_s`` whatever the number of users. The listener only records and schedules: Bolt has already
acknowledged the event, and nothing slow runs in it.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.home_view import render_home
from bot.slack_pacer import SlackHeld, retry_after_of
from services.events import EventBus
from services.incidents import IncidentOpened, IncidentResolved, IncidentUpdated
from services.jobs import JobFinished, JobResultsReady, JobStarted
from services.status import HostStatus

log = logging.getLogger(__name__)

FleetSource = Callable[[], Awaitable[Sequence[HostStatus]]]
# Events after which the Home view is out of date.
REFRESH_ON: tuple[type, ...] = (JobStarted, JobFinished, JobResultsReady, IncidentOpened, IncidentUpdated,
                                IncidentResolved)
FLEET_READ_TIMEOUT_S = 30.0


class HomeTab:
    """Home views for one workspace (see the module docstring)."""

    def __init__(self, client: AsyncWebClient, fleet: FleetSource, *, recent_s: float = 4 * 3600.0,
                 max_viewers: int = 200, settle_s: float = 0.5, min_interval_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.fleet = fleet
        self.recent_s = recent_s
        self.max_viewers = max_viewers
        self.settle_s = settle_s
        self.min_interval_s = min_interval_s
        self.clock = clock
        self.published = 0
        self.failed = 0
        self.disabled: str | None = None  # why Slack refuses Home views (e.g. the tab is not enabled)
        self._viewers: collections.OrderedDict[str, float] = collections.OrderedDict()  # user -> last opened
        self._last: dict[str, float] = {}  # user -> when their view was last published
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._dirty: set[str] = set()  # changed after their waiting publish read the fleet: publish again
        self._view: tuple[float, asyncio.Future[dict[str, Any]]] | None = None
        self._closed = False

    # -- wiring -----------------------------------------------------------------------------------

    def attach(self, bot: Any) -> None:
        """Listen for ``app_home_opened`` on ``bot.app`` (a `bot.slack.SlackBot`)."""

        async def on_home_opened(event: dict[str, Any]) -> None:
            self.opened(event)

        bot.app.event("app_home_opened")(on_home_opened)

    def subscribe(self, bus: EventBus) -> None:
        for event_type in REFRESH_ON:
            bus.subscribe(event_type, self._on_change)

    async def aclose(self) -> None:
        self._closed = True
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- who looks ----------------------------------------------------------------------------------

    def opened(self, event: dict[str, Any]) -> None:
        """A user opened the App Home: remember them and publish their view (only the Home tab)."""
        user = event.get("user")
        if event.get("tab") != "home" or not isinstance(user, str) or not user:
            return
        self.disabled = None  # Slack sends tab "home" only while the Home tab is on: it was switched on again
        self._viewers[user] = self.clock()
        self._viewers.move_to_end(user)
        while len(self._viewers) > self.max_viewers:
            gone, _ = self._viewers.popitem(last=False)
            self._last.pop(gone, None)
        self._schedule(user, settle=False)

    def viewers(self) -> list[str]:
        """Users who opened the Home tab within ``recent_s`` (forgets the others)."""
        cutoff = self.clock() - self.recent_s
        for user in [u for u, at in self._viewers.items() if at < cutoff]:
            del self._viewers[user]
            self._last.pop(user, None)
        return list(self._viewers)

    async def _on_change(self, _event: object) -> None:
        self._view = None  # the next publish reads the fleet again
        for user in self.viewers():
            self._schedule(user, settle=True)

    # -- publishing ---------------------------------------------------------------------------------

    def _schedule(self, user: str, *, settle: bool) -> None:
        if self._closed or self.disabled:
            return
        if user in self._tasks:
            self._dirty.add(user)  # one publish at a time per user; the next one shows the newest state
            return
        wait = max(self.settle_s if settle else 0.0, self._last.get(user, -1e18) + self.min_interval_s - self.clock())
        task = asyncio.create_task(self._publish_later(user, wait), name=f"home-{user}")
        self._tasks[user] = task
        task.add_done_callback(functools.partial(self._done, user))

    def _done(self, user: str, _task: asyncio.Task[None]) -> None:
        self._tasks.pop(user, None)
        if user in self._dirty:
            self._dirty.discard(user)
            self._schedule(user, settle=True)

    async def _publish_later(self, user: str, wait: float) -> None:
        while True:
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                self._dirty.discard(user)  # the view read from here on includes every change so far
                view = await self.view()
                self._last[user] = self.clock()
                await self.client.views_publish(user_id=user, view=view)
                self.published += 1
                return
            except SlackHeld as held:
                wait = max(held.retry_after, 0.1)  # the pacer says when a turn comes: try then
            except SlackApiError as exc:
                retry = retry_after_of(exc)
                if retry is not None:
                    wait = max(retry, 0.1)
                    continue
                self.failed += 1
                error = str(exc.response.get("error", "")) if exc.response is not None else ""
                if error == "not_enabled":
                    self.disabled = "the Home tab is not enabled for this app (slack/manifest.yaml: home_tab_enabled)"
                    log.warning("views.publish: %s", self.disabled)
                else:
                    log.warning("views.publish for %s failed: %s", user, error or type(exc).__name__)
                return
            except Exception as exc:
                self.failed += 1
                log.warning("the Home view for %s could not be published (%s)", user, type(exc).__name__)
                return

    async def view(self) -> dict[str, Any]:
        """The Home view, built from one fleet read shared by every publish within ``settle_s``."""
        now = self.clock()
        hit = self._view
        if hit is None or now - hit[0] > self.settle_s or (hit[1].done() and hit[1].exception() is not None):
            hit = self._view = (now, asyncio.ensure_future(self._build()))
        return await asyncio.shield(hit[1])

    async def _build(self) -> dict[str, Any]:
        statuses = await asyncio.wait_for(self.fleet(), FLEET_READ_TIMEOUT_S)
        return render_home(statuses)
