"""Signed requests to the running HTTP-mode app: slash command, forgery, stale requests, buttons,
thread replies and mentions; the answers land on the fake Slack Web API."""

from __future__ import annotations

import asyncio
import time

from slack_kit import Harness, sign

from handlers.contract import Button, ChatMessage, Reply, Table


async def job_dispatch(h: Harness, msg: ChatMessage) -> Reply:
    """Stands in for the router: a `try` queues job 1 with a parent, progress and a thread table."""
    if msg.text.startswith("try"):
        out = h.bot.outbox

        async def job() -> None:
            cancel = (Button("Cancel", "cancel 1", "danger"),)
            await out.send("job:1", Reply(text="Job 1: deploying", tone="progress", buttons=cancel),
                           channel=msg.channel)
            for pct in (30, 70):
                await out.send("job:1", Reply(text=f"Job 1: benchmarking {pct}%", tone="progress"),
                               channel=msg.channel)
            rows = (("3", "812.5", "2.61"), ("4", "901.0", "3.02"))
            table = Table(columns=("steps", "tok/s", "accept"), rows=rows, title="Results")
            await out.send("job:1:table", Reply(text="Results", tables=(table,)), channel=msg.channel,
                           thread_of="job:1")
            await out.send("job:1", Reply(text="Job 1: done", tone="success"), channel=msg.channel)

        asyncio.get_running_loop().create_task(job())
        return Reply(text=f"Queued job 1 for {msg.actor.name}: `{msg.text}`")
    return Reply(text=f"you said {msg.text!r} in thread {msg.thread_key}")


async def test_slash_command_ack_parent_progress_thread_table(make_harness) -> None:
    h: Harness = await make_harness(job_dispatch)
    status, body, took = await h.slash("try 4 steps")
    assert status == 200 and took < 3.0, (status, body, took)
    fake = h.fake
    await fake.wait_for(lambda f: any(m.blocks and any(b["type"] == "table" for b in m.blocks)
                                      for m in f.messages), timeout=10)
    await fake.wait_for(lambda f: any("done" in m.text for m in f.messages), timeout=10)
    parent = next(m for m in fake.messages if m.metadata["event_payload"]["key"] == "job:1")
    assert parent.thread_ts is None and "done" in parent.text
    # progress edits coalesce once the parent is posted (only the newest pending edit is sent);
    # the final state always lands, on the same message
    assert 1 <= parent.edits <= 3
    table_msg = next(m for m in fake.messages if m.metadata["event_payload"]["key"] == "job:1:table")
    assert table_msg.thread_ts == parent.ts
    table = next(b for b in table_msg.blocks if b["type"] == "table")
    assert [c["text"] for c in table["rows"][0]] == ["steps", "tok/s", "accept"]
    direct = next(m for m in fake.messages if m.metadata["event_payload"]["key"].startswith("cmd:"))
    assert "Queued job 1 for alice" in direct.text and direct.thread_ts is None
    assert h.seen[0].actor.user_id == "U1" and h.seen[0].actor.transport == "slack"
    assert not fake.duplicates()
    assert await h.store.ref_for("slack", "job:1") is not None


async def test_forged_and_stale_requests_get_401_and_dispatch_nothing(make_harness) -> None:
    h: Harness = await make_harness(job_dispatch)
    status, _, _ = await h.slash("try 4 steps", signature="v0=" + "0" * 64)
    assert status == 401
    old = int(time.time()) - 6 * 60
    body = "command=%2Fpitcrew&text=try+4+steps&user_id=U1&channel_id=C1&team_id=T0001&trigger_id=x"
    status, _, _ = await h.post(body, "application/x-www-form-urlencoded", ts=old, signature=sign(body, old))
    assert status == 401
    status, _, _ = await h.post(body, "application/x-www-form-urlencoded", ts=int(time.time()),
                                signature=sign(body, int(time.time()), secret="wrong-secret"))
    assert status == 401
    await asyncio.sleep(0.3)
    assert h.seen == []
    assert h.fake.calls_to("chat.postMessage") == []
    assert await h.store.depth() == 0


async def test_button_click_runs_the_command_and_marks_the_message(make_harness) -> None:
    h: Harness = await make_harness(job_dispatch)
    await h.bot.outbox.send("preview:9", Reply(text="Apply 10 steps on gpu-1?", buttons=(
        Button("Confirm", "confirm 9", "primary"), Button("Cancel", "cancel 9", "danger"))), channel="C1")
    await h.wait_ref("preview:9")
    msg = h.fake.messages[0]
    actions = next(b for b in msg.blocks if b["type"] == "actions")
    button = actions["elements"][0]
    message_json = {"type": "message", "ts": msg.ts, "text": msg.text, "blocks": msg.blocks}
    status, _, took = await h.click(message_json, {**button, "block_id": "b1", "action_ts": "1"})
    assert status == 200 and took < 3.0
    await h.fake.wait_for(lambda f: len(f.messages) == 2 and f.messages[0].edits == 1)
    assert len(h.seen) == 1
    seen = h.seen[0]
    assert seen.text == "confirm 9" and seen.via_button and seen.thread_key == "preview:9"
    assert seen.actor.user_id == "U2"
    marked = h.fake.messages[0]
    assert not any(b["type"] == "actions" for b in marked.blocks)
    assert "<@U2> chose *Confirm*" in str(marked.blocks)
    answer = h.fake.messages[1]
    assert answer.thread_ts == msg.ts and "confirm 9" in answer.text


async def test_thread_reply_and_mention(make_harness) -> None:
    h: Harness = await make_harness(job_dispatch)
    await h.bot.outbox.send("job:5", Reply(text="Job 5 running"), channel="C1")
    await h.wait_ref("job:5")
    parent = h.fake.messages[0]
    # a reply in our job's thread reaches dispatch with the job's key
    status, _, _ = await h.event({"type": "message", "channel": "C1", "user": "U1", "text": "again with 12",
                                  "ts": f"{time.time():.6f}", "thread_ts": parent.ts,
                                  "channel_type": "channel"}, event_id="Ev10")
    assert status == 200
    await h.fake.wait_for(lambda f: len(f.messages) == 2)
    assert h.seen[-1].text == "again with 12" and h.seen[-1].thread_key == "job:5"
    assert h.fake.messages[1].thread_ts == parent.ts
    # the same event delivered again (Slack retry) is not dispatched twice
    await h.event({"type": "message", "channel": "C1", "user": "U1", "text": "again with 12",
                   "ts": "1.0", "thread_ts": parent.ts, "channel_type": "channel"}, event_id="Ev10")
    # a message in a thread that is not ours is ignored
    await h.event({"type": "message", "channel": "C1", "user": "U1", "text": "lunch?", "ts": "2.0",
                   "thread_ts": "1.5", "channel_type": "channel"}, event_id="Ev11")
    # a mention at top level is answered in its thread, with the mention stripped
    mention_ts = f"{time.time():.6f}"
    h.fake.messages.append(type(parent)(channel="C1", ts=mention_ts, text="<@UBOT> status", blocks=[],
                                        thread_ts=None, metadata=None, user="U1"))
    await h.event({"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@UBOT> status",
                   "ts": mention_ts}, event_id="Ev12")
    await h.fake.wait_for(lambda f: any(m.thread_ts == mention_ts for m in f.messages))
    assert [m.text for m in h.seen] == ["again with 12", "status"]
    assert h.seen[1].thread_key is None


async def test_direct_message_is_a_command_answered_in_the_dm(make_harness) -> None:
    h: Harness = await make_harness(job_dispatch)
    h.fake.add_channel("D1", "dm-alice")
    status, _, _ = await h.event({"type": "message", "channel": "D1", "user": "U1", "text": "status",
                                  "ts": f"{time.time():.6f}", "channel_type": "im"}, event_id="EvDM")
    assert status == 200
    await h.fake.wait_for(lambda f: len(f.messages) == 1)
    assert h.seen[0].text == "status" and h.seen[0].channel == "D1"
    assert h.fake.messages[0].channel == "D1" and h.fake.messages[0].thread_ts is None
    # the bot's own messages and edits never trigger anything
    await h.event({"type": "message", "channel": "D1", "bot_id": "BBOT", "text": "x", "ts": "3.0",
                   "channel_type": "im"}, event_id="EvDM2")
    await h.event({"type": "message", "subtype": "message_changed", "channel": "D1", "ts": "3.1",
                   "channel_type": "im", "message": {"text": "y"}}, event_id="EvDM3")
    await asyncio.sleep(0.2)
    assert len(h.seen) == 1


async def test_click_on_an_ephemeral_message_is_marked_through_response_url(make_harness) -> None:
    h: Harness = await make_harness(job_dispatch)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "Confirm?"}},
              {"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Yes"},
                                                "value": "confirm 3", "action_id": "pitcrew_cmd:0:abc"}]}]
    message = {"type": "message", "ts": "9.9", "text": "Confirm?", "blocks": blocks}
    import json as _json
    import urllib.parse as _up
    payload = {"type": "block_actions", "team": {"id": "T0001"}, "user": {"id": "U1", "username": "alice"},
               "api_app_id": "A1", "trigger_id": "tr-e",
               "container": {"type": "message", "message_ts": "9.9", "channel_id": "C1", "is_ephemeral": True},
               "channel": {"id": "C1"}, "message": message, "response_url": h.fake.response_url("eph"),
               "actions": [{**blocks[1]["elements"][0], "block_id": "b", "action_ts": "1"}]}
    status, _, _ = await h.post(_up.urlencode({"payload": _json.dumps(payload)}),
                                "application/x-www-form-urlencoded")
    assert status == 200
    await h.fake.wait_for(lambda f: bool(f.responses) and len(f.messages) == 1)
    assert h.fake.responses[0]["replace_original"] is True
    assert "<@U1> chose *Yes*" in str(h.fake.responses[0]["blocks"])
    assert h.seen[0].text == "confirm 3" and h.seen[0].via_button


async def test_restarted_bot_edits_the_same_message(make_harness) -> None:
    first: Harness = await make_harness(job_dispatch)
    await first.bot.outbox.send("job:8", Reply(text="Job 8: deploying"), channel="C1")
    await first.wait_ref("job:8")
    await first.bot.aclose()
    second: Harness = await make_harness(job_dispatch)  # same database, new process state
    await second.bot.outbox.send("job:8", Reply(text="Job 8: done", tone="success"), channel="C1")
    await second.fake.wait_for(lambda f: f.messages[0].edits == 1)
    assert len(second.fake.messages) == 1 and second.fake.messages[0].text == "Job 8: done"


async def test_planted_secrets_never_reach_slack(make_harness) -> None:
    token = "xoxb-9876543210-plantedsecretvalue"
    key = "sk-proj-abcdefghijklmnopqrstuv"

    async def leaky(h: Harness, msg: ChatMessage) -> Reply:
        table = Table(columns=("line",), rows=((f"Authorization: Bearer {key}",),))
        return Reply(text=f"journal says token={token}", tables=(table,), code=f"api_key={key}\n{token}",
                     buttons=(Button("Show logs", "logs gpu-1"),))

    h: Harness = await make_harness(leaky)
    await h.slash(f"status {token}")
    await h.fake.wait_for(lambda f: len(f.messages) == 1)
    recorded = str([c.args for c in h.fake.calls]) + str([m.blocks for m in h.fake.messages])
    assert token not in recorded and key not in recorded
    assert "[REDACTED]" in recorded


async def test_actor_carries_slack_user_groups_and_display_name(make_harness) -> None:
    h: Harness = await make_harness(job_dispatch)
    h.fake.add_usergroup("gpu-oncall", ["U1", "U3"])
    h.fake.add_usergroup("ml-team", ["U1"])
    h.fake.add_user("U3", "carol", real_name="Carol C")
    mention_ts = f"{time.time():.6f}"
    await h.event({"type": "app_mention", "channel": "C1", "user": "U3", "ts": mention_ts,
                   "text": "<@UBOT> mute gpu-1 for <@U1>"}, event_id="EvG")
    await h.fake.wait_for(lambda f: len(f.messages) == 1)
    actor = h.seen[0].actor
    assert actor.groups == ("gpu-oncall",) and actor.name == "carol"
    assert h.seen[0].text == "mute gpu-1 for <@U1>"  # only the bot's own mention is stripped
