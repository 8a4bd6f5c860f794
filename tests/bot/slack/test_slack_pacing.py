"""The Slack pacer (issue 13): Retry-After holds per method and channel, budgets from Slack's tiers,
and the review's finding — a newer edit that replaces one held back by a 429 must not go out early."""

from __future__ import annotations

import asyncio
import time

from slack_kit import Harness

from bot.slack_pacer import BUDGETS, SlackHeld, SlackPacer
from handlers.contract import ChatMessage, Reply


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


async def echo(h: Harness, msg: ChatMessage) -> Reply:
    return Reply(text=f"ok: {msg.text}")


def test_a_budget_lets_at_most_its_tier_through_in_any_minute() -> None:
    clock = Clock()
    pacer = SlackPacer(clock=clock)
    sent: list[float] = []
    # callers that ask 5 times a second for 3 minutes
    for _ in range(5 * 180):
        if pacer.ready_in("chat.update") == 0.0:
            pacer._refill("chat.update", None, clock()).tokens -= 1.0
            sent.append(clock())
        clock.t += 0.2
    worst = max(sum(1 for t in sent if s <= t < s + 60.0) for s in sent)
    assert worst <= BUDGETS["chat.update"].per_minute == 50  # Tier 3: 50+ per minute
    assert worst >= 45  # and the budget is used, not wasted


def test_holds_are_per_method_and_per_channel_for_posting() -> None:
    clock = Clock()
    pacer = SlackPacer(clock=clock)
    pacer.hold("chat.update", "C1", 5.0)
    assert pacer.held_for("chat.update", "C2") == 5.0  # a workspace-wide limit: every channel
    assert pacer.held_for("chat.postMessage", "C1") == 0.0
    pacer.hold("chat.postMessage", "C1", 3.0)
    assert pacer.held_for("chat.postMessage", "C1") == 3.0
    assert pacer.held_for("chat.postMessage", "C2") == 0.0  # 1 per second *per channel*
    clock.t += 5.0
    assert pacer.held_for("chat.update", "C1") == 0.0


async def test_acquire_waits_out_a_short_hold_and_refuses_a_long_one() -> None:
    pacer = SlackPacer()
    pacer.hold("users.info", None, 0.3)
    t0 = time.monotonic()
    await pacer.acquire("users.info", max_wait_s=1.0)
    assert time.monotonic() - t0 >= 0.3
    pacer.hold("users.info", None, 5.0)
    try:
        await pacer.acquire("users.info", max_wait_s=0.5)
    except SlackHeld as exc:
        assert exc.retry_after > 4.0
    else:
        raise AssertionError("a 5 s hold must not be waited out by a caller with 0.5 s of patience")


async def test_an_edit_that_replaces_a_held_back_edit_inherits_its_hold(make_harness) -> None:
    """The review's finding: v2 held back by a 429 (Retry-After 2), v3 arrives 0.1 s later and
    used to go out at once. Now no chat.update leaves before the 2 s are over, and v3 is shown."""
    h: Harness = await make_harness(echo)
    out = h.bot.outbox
    await out.send("job:1", Reply(text="v1"), channel="C1")
    await h.wait_ref("job:1")
    h.fake.fail("chat.update", "429", times=1, retry_after=2)
    await out.send("job:1", Reply(text="v2"), channel="C1")
    await h.fake.wait_for(lambda f: any(c.status == 429 for c in f.calls), timeout=5)
    limited_at = next(c.at for c in h.fake.calls if c.status == 429)
    await asyncio.sleep(0.1)
    await out.send("job:1", Reply(text="v3"), channel="C1")
    await h.fake.wait_for(lambda f: f.posted("C1")[0].text == "v3", timeout=10)
    updates = [c for c in h.fake.calls_to("chat.update") if c.status == 200]
    assert updates and all(c.at - limited_at >= 2.0 for c in updates), [c.at - limited_at for c in updates]
    assert h.fake.early_calls() == []
    assert [c.args["text"] for c in updates][-1] == "v3"


async def test_posts_to_another_channel_go_on_while_one_channel_is_held(make_harness, fake) -> None:
    fake.add_channel("C2", "other")
    h: Harness = await make_harness(echo)
    fake.fail("chat.postMessage", "429", times=1, retry_after=3)
    await h.bot.outbox.send("a", Reply(text="to C1"), channel="C1")
    await fake.wait_for(lambda f: any(c.status == 429 for c in f.calls), timeout=5)
    t0 = time.monotonic()
    await h.bot.outbox.send("b", Reply(text="to C2"), channel="C2")
    await fake.wait_for(lambda f: any(m.text == "to C2" for m in f.messages), timeout=5)
    assert time.monotonic() - t0 < 2.0  # not behind C1's hold
    await fake.wait_for(lambda f: any(m.text == "to C1" for m in f.messages), timeout=10)
    assert fake.early_calls() == [] and fake.duplicates() == {}
