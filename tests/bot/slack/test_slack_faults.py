"""Delivery under Slack faults: 429 bursts with Retry-After, 5xx, `ok: false` errors, answers that
come too late. Every message arrives, in order per key, and none twice (checked by the
idempotency keys the fake Slack records)."""

from __future__ import annotations

import time

from slack_kit import Harness

from handlers.contract import ChatMessage, Reply, Table


async def echo(h: Harness, msg: ChatMessage) -> Reply:
    return Reply(text=f"ok: {msg.text}")


async def _enqueue_mix(h: Harness, n: int) -> None:
    """n parents, each edited twice, each with a thread table: 4n outbox items."""
    out = h.bot.outbox
    for i in range(n):
        await out.send(f"job:{i}", Reply(text=f"job {i} v1"), channel="C1")
    for i in range(n):
        await out.send(f"job:{i}", Reply(text=f"job {i} v2"), channel="C1")
        table = Table(columns=("k", "v"), rows=(("job", str(i)),))
        await out.send(f"job:{i}:t", Reply(text=f"table {i}", tables=(table,)), channel="C1",
                       thread_of=f"job:{i}")
        await out.send(f"job:{i}", Reply(text=f"job {i} final"), channel="C1")


def _check_complete(h: Harness, n: int) -> None:
    fake = h.fake
    assert not fake.duplicates(), fake.duplicates()
    tops = {m.metadata["event_payload"]["key"]: m for m in fake.messages if m.thread_ts is None}
    assert sorted(tops) == sorted(f"job:{i}" for i in range(n))
    for i in range(n):
        parent = tops[f"job:{i}"]
        assert parent.text == f"job {i} final", parent.text  # edits applied in order
        thread = [m for m in fake.messages if m.thread_ts == parent.ts]
        assert [m.text for m in thread] == [f"table {i}"]


async def _drained(h: Harness, within_s: float) -> float:
    t0 = time.monotonic()
    while await h.store.depth("slack") > 0:
        assert time.monotonic() - t0 < within_s, "outbox not drained"
        await h.fake.wait_for(lambda f: True, timeout=0.1)
        await __import__("asyncio").sleep(0.05)
    return time.monotonic() - t0


async def test_burst_of_429_delays_but_loses_and_duplicates_nothing(make_harness) -> None:
    h: Harness = await make_harness(echo)
    h.fake.fail("chat.postMessage", "429", times=5, retry_after=1)
    h.fake.fail("chat.update", "429", times=3, retry_after=1)
    t0 = time.monotonic()
    await _enqueue_mix(h, 8)
    # 16 posts in one channel: Slack allows about one a second there, so this takes 15 s or more
    await _drained(h, 90)
    took = time.monotonic() - t0
    _check_complete(h, 8)
    assert took >= 1.0  # Retry-After was honoured
    statuses = [c.status for c in h.fake.calls if c.method in ("chat.postMessage", "chat.update")]
    assert statuses.count(429) == 8
    # after a 429 no call of that method (in that channel, for posts) came before its Retry-After
    assert h.fake.early_calls() == []
    calls = [c for c in h.fake.calls if c.method == "chat.postMessage"]
    first_429 = next(i for i, c in enumerate(calls) if c.status == 429)
    assert calls[first_429 + 1].at - calls[first_429].at >= 1.0


async def test_5xx_and_ok_false_errors_are_retried(make_harness) -> None:
    h: Harness = await make_harness(echo)
    h.bot.deliverer.slow_error_retry_s = 0.2
    h.fake.fail("chat.postMessage", "5xx", times=3, status=503)
    h.fake.fail("chat.postMessage", "error", times=2, error="not_in_channel")
    h.fake.fail("chat.update", "error", times=1, error="channel_not_found")
    h.fake.fail("chat.postMessage", "5xx", times=1, status=500)
    await _enqueue_mix(h, 4)
    await _drained(h, 30)
    _check_complete(h, 4)
    assert h.bot.stats.last_error is not None


async def test_late_answer_after_post_is_not_posted_twice(make_harness) -> None:
    # The post lands, but the answer comes after the client's 1 s timeout: the retry must find
    # the message by its idempotency key instead of posting it again.
    h: Harness = await make_harness(echo, timeout_s=1.0)
    h.fake.fail("chat.postMessage", "slow", times=2, delay_s=1.6)
    await _enqueue_mix(h, 3)
    await _drained(h, 40)
    _check_complete(h, 3)
    assert len(h.fake.calls_to("conversations.history")) + len(h.fake.calls_to("conversations.replies")) >= 1


async def test_slash_command_acks_fast_while_slack_api_is_down(make_harness) -> None:
    h: Harness = await make_harness(echo)
    h.fake.fail("*", "5xx", times=4, status=503)  # users.info, usergroups.list, chat.postMessage x2
    status, _, took = await h.slash("status")
    assert status == 200 and took < 1.0
    await h.fake.wait_for(lambda f: any("ok: status" in m.text for m in f.messages), timeout=20)
    assert not h.fake.duplicates()


async def test_command_in_a_channel_the_bot_is_not_in_answers_via_response_url(make_harness) -> None:
    h: Harness = await make_harness(echo)
    h.fake.add_channel("G9", "private-team", is_member=False)
    status, _, _ = await h.slash("status", channel="G9", trigger="t-g9", response_url=h.fake.response_url("g9"))
    assert status == 200
    await h.fake.wait_for(lambda f: bool(f.responses), timeout=10)
    (resp,) = h.fake.responses
    assert resp["rid"] == "g9" and resp["response_type"] == "in_channel" and "ok: status" in resp["text"]
    assert "/invite @pitcrew" in str(resp["blocks"])
    await _drained(h, 5)


async def test_answer_is_posted_directly_when_the_database_stays_away(make_harness) -> None:
    h: Harness = await make_harness(echo)

    async def broken(*a: object, **k: object) -> None:
        raise ConnectionError("database away")

    h.bot.outbox.enqueue = broken  # type: ignore[method-assign]
    await h.bot._enqueue_reply("cmd:x", Reply(text="still answered"), channel="C1", thread_of=None,
                               hints={}, attempts=2)
    assert [m.text for m in h.fake.messages] == ["still answered"]
