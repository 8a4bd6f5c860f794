"""Files and fallbacks: a sweep chart (PNG) goes into the job's thread with files_upload_v2 (upload
URL, upload, complete); a message Slack rejects as invalid blocks is sent as plain text."""

from __future__ import annotations

from slack_kit import Harness

from handlers.contract import Attachment, ChatMessage, Reply, Table

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 2048


async def echo(h: Harness, msg: ChatMessage) -> Reply:
    return Reply(text=msg.text)


async def test_chart_is_uploaded_into_the_thread(make_harness) -> None:
    h: Harness = await make_harness(echo)
    await h.bot.outbox.send("job:7", Reply(text="Sweep 7 running"), channel="C1")
    chart = Attachment(filename="sweep-7.png", content=PNG, title="tok/s by steps", mime="image/png")
    table = Table(columns=("steps", "tok/s"), rows=(("1", "700"), ("2", "820")))
    await h.bot.outbox.send("job:7:chart", Reply(text="Sweep 7 results", tables=(table,), attachments=(chart,)),
                            channel="C1", thread_of="job:7")
    await h.fake.wait_for(lambda f: any(c.method == "files.completeUploadExternal" and c.ok for c in f.calls))
    parent = next(m for m in h.fake.messages if m.thread_ts is None)
    (rec,) = h.fake.files.values()
    assert rec["data"] == PNG and rec["filename"] == "sweep-7.png" and rec["shared"]
    assert rec["channel"] == "C1" and rec["thread_ts"] == parent.ts and rec["title"] == "tok/s by steps"
    methods = [c.method for c in h.fake.calls]
    assert methods.index("files.getUploadURLExternal") < methods.index("upload") < methods.index(
        "files.completeUploadExternal")


async def test_invalid_blocks_fall_back_to_plain_text(make_harness) -> None:
    h: Harness = await make_harness(echo)
    h.fake.fail("chat.postMessage", "error", error="invalid_blocks")
    table = Table(columns=("a", "b"), rows=(("1", "2"),))
    await h.bot.outbox.send("r:1", Reply(text="Results", tables=(table,)), channel="C1")
    await h.fake.wait_for(lambda f: len(f.messages) == 1)
    msg = h.fake.messages[0]
    assert msg.blocks == [] and "Results" in msg.text and "a  b" in msg.text
