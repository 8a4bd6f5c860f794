"""The App Home tab over real Bolt request handling: signed ``app_home_opened`` events posted to the
bot's HTTP endpoint, ``views.publish`` answered and recorded by the fake Slack on loopback."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from slack_kit import Harness
from slack_sdk.models.views import View

from bot.home_view import MAX_VIEW_BLOCKS, render_home
from bot.slack_home import HomeTab
from handlers.contract import ChatMessage, Reply
from services.events import EventBus
from services.incidents import IncidentInfo, IncidentOpened
from services.jobs import JobFinished, JobRef
from services.status import HostStatus, IncidentBrief, LastResult, UnitState


async def _answer(_h: Harness, _m: ChatMessage) -> Reply:
    return Reply(text="ok")


def _fleet() -> list[HostStatus]:
    return [
        HostStatus(host="gpu-1", unit="sglang.service", state=UnitState("active", "running", 0, "steps 3", "sglang"),
                   unreachable=None, running_job=None, queued_jobs=0, incidents=(),
                   last_result=LastResult(11, "steps 3", concurrency=1, decode_tok_s=251.4,
                                          decode_ci=(246.0, 256.0))),
        HostStatus(host="gpu-2", unit="vllm.service", state=UnitState("activating", "auto-restart", 7, "steps 5",
                                                                       "vllm"),
                   unreachable=None, running_job=None, queued_jobs=0,
                   incidents=(IncidentBrief(7, "kv_cache_oom"),), last_result=None),
        HostStatus(host="gpu-3", unit="sglang.service", state=None, unreachable="connection refused",
                   running_job=None, queued_jobs=0, incidents=(), last_result=None),
    ]


class Fleet:
    """What the status query answers; tests change it between events."""

    def __init__(self) -> None:
        self.statuses = _fleet()
        self.reads = 0

    async def __call__(self) -> list[HostStatus]:
        self.reads += 1
        return list(self.statuses)


def _home_opened(user: str = "U1", tab: str = "home") -> dict[str, Any]:
    return {"type": "app_home_opened", "user": user, "channel": "D1", "tab": tab,
            "event_ts": f"{time.time():.6f}"}


def _shown(view: dict[str, Any]) -> str:
    return json.dumps(view["blocks"], ensure_ascii=False)


def _job_finished(job_id: int = 5) -> JobFinished:
    ref = JobRef(id=job_id, kind="try", host="gpu-1", transport="slack", channel="C1", requested_by="U1",
                 requested_by_name="alice", command_text="try 4 steps on gpu-1")
    return JobFinished(job=ref, state="succeeded", summary="done")


def _incident(incident_id: int) -> IncidentInfo:
    at = datetime.now(UTC)
    return IncidentInfo(id=incident_id, host="gpu-3", unit="sglang.service", cause="cuda_oom_runtime",
                        config_hash="abc", state="open", summary="CUDA out of memory", confidence=0.9, evidence=(),
                        recommendation="", config_change=None, ran_before=None, stale_pids=(), restarts=3,
                        opened_at=at, last_event_at=at, resolved_at=None, muted_until=None, acknowledged_by=None,
                        resolution="")


async def _home(h: Harness, fleet: Fleet, **kw: Any) -> tuple[HomeTab, EventBus]:
    bus = EventBus()
    home = HomeTab(h.bot.client, fleet, **kw)
    home.attach(h.bot)
    home.subscribe(bus)
    return home, bus


async def test_opening_the_home_tab_publishes_each_host_and_its_state(make_harness: Any) -> None:
    h = await make_harness(_answer)
    fleet = Fleet()
    home, _bus = await _home(h, fleet)
    try:
        status, _, took = await h.event(_home_opened("U1"), event_id="EvHome1")
        assert status == 200 and took < 1.0
        await h.fake.wait_for(lambda f: "U1" in f.home_views, timeout=5)
        view = h.fake.home_views["U1"]
        View(**view).validate_json()
        text = _shown(view)
        assert view["type"] == "home"
        for expected in ("gpu-1", "sglang", "steps 3", "active/running", "0 restarts",
                         "steps 3 · 251 tok/s (±2 %) at C=1 · run 11",
                         "gpu-2", "vllm", "activating/auto-restart · 7 restarts", "incident #7: kv_cache_oom",
                         "gpu-3", "unreachable (connection refused)", "no open incident"):
            assert expected in text, (expected, text)
        assert view["blocks"][-1]["type"] == "context"
        assert "UTC" in view["blocks"][-1]["elements"][0]["text"]
        # the Messages tab is not ours to draw
        await h.event(_home_opened("U2", tab="messages"), event_id="EvHome2")
        await asyncio.sleep(0.3)
        assert "U2" not in h.fake.home_views
        assert [c.args["user_id"] for c in h.fake.calls_to("views.publish")] == ["U1"]
    finally:
        await home.aclose()


async def test_a_finished_job_republishes_the_home_view_with_the_new_result(make_harness: Any) -> None:
    h = await make_harness(_answer)
    fleet = Fleet()
    home, bus = await _home(h, fleet, settle_s=0.05, min_interval_s=0.2)
    try:
        await h.event(_home_opened("U1"), event_id="EvHome3")
        await h.fake.wait_for(lambda f: "U1" in f.home_views, timeout=5)
        assert "277 tok/s" not in _shown(h.fake.home_views["U1"])
        new = LastResult(12, "steps 4", concurrency=1, decode_tok_s=277.0, decode_ci=(271.5, 282.6))
        fleet.statuses[0] = replace(fleet.statuses[0], last_result=new,
                                    state=UnitState("active", "running", 0, "steps 4", "sglang"))
        await bus.publish(_job_finished())
        await h.fake.wait_for(lambda f: "277 tok/s" in _shown(f.home_views["U1"]), timeout=5)
        assert "steps 4 · 277 tok/s (±2 %) at C=1 · run 12" in _shown(h.fake.home_views["U1"])
        assert len(h.fake.calls_to("views.publish")) == 2
        # an incident opening refreshes it too
        fleet.statuses[2] = replace(fleet.statuses[2], incidents=(IncidentBrief(8, "cuda_oom_runtime"),))
        await bus.publish(IncidentOpened(_incident(8)))
        await h.fake.wait_for(lambda f: "incident #8" in _shown(f.home_views["U1"]), timeout=5)
    finally:
        await home.aclose()


async def test_a_burst_of_events_gives_one_publish_per_user_per_interval(make_harness: Any) -> None:
    h = await make_harness(_answer)
    fleet = Fleet()
    home, bus = await _home(h, fleet, settle_s=0.1, min_interval_s=2.0)
    try:
        await h.event(_home_opened("U1"), event_id="EvHome4")
        await h.event(_home_opened("U2"), event_id="EvHome5")
        await h.fake.wait_for(lambda f: {"U1", "U2"} <= set(f.home_views), timeout=5)
        reads_before = fleet.reads
        t0 = time.monotonic()
        for i in range(30):
            fleet.statuses[0] = replace(fleet.statuses[0], running_job=100 + i)
            await bus.publish(_job_finished(100 + i))
            await asyncio.sleep(0)  # a burst: other tasks run between events, no time passes
        await h.fake.wait_for(lambda f: all("job 129 running" in _shown(f.home_views[u]) for u in ("U1", "U2")),
                              timeout=8)
        await asyncio.sleep(2.2)  # nothing more comes
        calls = h.fake.calls_to("views.publish")
        per_user = {u: [c.at for c in calls if c.args["user_id"] == u] for u in ("U1", "U2")}
        for user, times in per_user.items():
            assert len(times) == 2, (user, times)  # the open, then one for the whole burst
            # not before the interval since the last one (arrival times at the fake: the first answer may have
            # been slower to arrive than the second on a loaded machine)
            assert times[1] - times[0] >= 1.5, times
        assert time.monotonic() - t0 < 15.0
        assert fleet.reads - reads_before <= 2  # one fleet read serves both users
    finally:
        await home.aclose()


async def test_a_forged_request_publishes_nothing(make_harness: Any) -> None:
    h = await make_harness(_answer)
    home, _bus = await _home(h, Fleet())
    try:
        status, _, _ = await h.event(_home_opened("U1"), event_id="EvForged", signature="v0=" + "0" * 64)
        assert status == 401
        stale, _, _ = await h.event(_home_opened("U1"), event_id="EvStale", ts=int(time.time()) - 3600)
        assert stale == 401
        await asyncio.sleep(0.5)
        assert not h.fake.calls_to("views.publish")
        assert not h.fake.home_views
    finally:
        await home.aclose()


async def test_a_rate_limited_publish_waits_for_the_hold_and_then_goes(make_harness: Any) -> None:
    h = await make_harness(_answer)
    h.fake.fail("views.publish", "429", retry_after=1)
    home, _bus = await _home(h, Fleet())
    try:
        await h.event(_home_opened("U1"), event_id="EvHome6")
        await h.fake.wait_for(lambda f: "U1" in f.home_views, timeout=6)
        assert [c.status for c in h.fake.calls_to("views.publish")] == [429, 200]
        assert not h.fake.early_calls()
        assert h.bot.client.pacer.stats.rate_limited["views.publish"] == 1  # type: ignore[attr-defined]
    finally:
        await home.aclose()


async def test_a_home_tab_that_is_not_enabled_is_reported_once_and_not_retried(make_harness: Any) -> None:
    h = await make_harness(_answer)
    h.fake.home_tab_enabled = False
    home, bus = await _home(h, Fleet(), settle_s=0.01, min_interval_s=0.01)
    try:
        await h.event(_home_opened("U1"), event_id="EvHome7")
        await h.fake.wait_for(lambda f: f.calls_to("views.publish"), timeout=5)
        await asyncio.sleep(0.1)
        assert home.disabled and "home_tab_enabled" in home.disabled
        await bus.publish(_job_finished())
        await asyncio.sleep(0.3)
        assert len(h.fake.calls_to("views.publish")) == 1
        # someone opens the Home tab again: Slack shows it, so it was switched on meanwhile
        h.fake.home_tab_enabled = True
        await h.event(_home_opened("U1"), event_id="EvHome8")
        await h.fake.wait_for(lambda f: "U1" in f.home_views, timeout=5)
        assert home.disabled is None
    finally:
        await home.aclose()


async def test_viewers_are_capped_and_forgotten_after_a_while(make_harness: Any) -> None:
    h = await make_harness(_answer)
    now = [1000.0]
    home = HomeTab(h.bot.client, Fleet(), recent_s=60.0, max_viewers=3, clock=lambda: now[0])
    for i in range(5):
        now[0] += 1
        home.opened(_home_opened(f"U{i}"))
    assert home.viewers() == ["U2", "U3", "U4"]
    home.opened(_home_opened("U2"))  # seen again: now the most recent
    now[0] += 50
    home.opened(_home_opened("U9"))
    assert home.viewers() == ["U4", "U2", "U9"]
    now[0] += 30  # U4 (seen at 1005) and U2 (1005) are older than 60 s now
    assert home.viewers() == ["U9"]
    await home.aclose()


@pytest.mark.parametrize("hosts", [0, 1, 45, 46, 120])
def test_the_home_view_stays_within_slack_limits(hosts: int) -> None:
    base = _fleet()
    long_cause = "x" * 5000
    statuses = [replace(base[i % 3], host=f"gpu-{i:03d}-" + "n" * 40,
                        incidents=tuple(IncidentBrief(j, long_cause) for j in range(8)))
                for i in range(hosts)]
    view = render_home(statuses)
    View(**view).validate_json()
    assert len(view["blocks"]) <= MAX_VIEW_BLOCKS
    text = _shown(view)
    assert len(json.dumps(view)) < 250_000
    for b in view["blocks"]:
        if b["type"] == "section":
            assert len(b["text"]["text"]) <= 3000
    if hosts == 0:
        assert "No hosts are configured" in text
    shown = [s.host for s in statuses if s.host in text]
    assert len(shown) == hosts  # every host is at least named
    if hosts > 45:
        assert f"{hosts - 45} more hosts" in text
