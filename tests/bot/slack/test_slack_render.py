"""The renderer against Block Kit's limits: every message of a corpus of replies (big tables, wide
tables, long logs, many buttons, long text) is checked; tables are never cut mid-row; secrets
never reach a block."""

from __future__ import annotations

import json

import pytest
from slack_sdk.models.blocks import Block

from bot.render import (
    MAX_BLOCKS,
    MAX_TABLE_ROWS,
    SlackMessage,
    check_message,
    render_click_receipt,
    render_reply,
)
from handlers.contract import Button, Reply, Table


def _table(rows: int, cols: int, width: int = 6, title: str | None = "T") -> Table:
    return Table(columns=tuple(f"c{j}" for j in range(cols)),
                 rows=tuple(tuple(f"{i}:{j}".ljust(width, "x") for j in range(cols)) for i in range(rows)),
                 title=title)


CORPUS: dict[str, Reply] = {
    "small": Reply(text="Job 4 *done*", tables=(_table(3, 3),), tone="success"),
    "empty": Reply(text=""),
    "table_100": Reply(text="t", tables=(_table(100, 5),)),
    "table_99": Reply(text="t", tables=(_table(99, 5),)),
    "table_1000": Reply(text="big", tables=(_table(1000, 8),)),
    "wide_25_cols": Reply(text="wide", tables=(_table(40, 25),)),
    "huge_cells": Reply(text="cells", tables=(_table(30, 4, width=2500),)),
    "fat_rows": Reply(text="fat", tables=(_table(500, 20, width=60),)),
    "two_tables": Reply(text="two", tables=(_table(10, 3), _table(10, 3, title="second"))),
    "many_tables": Reply(text="many", tables=tuple(_table(5, 2, title=f"t{i}") for i in range(60))),
    "long_text": Reply(text="\n".join(f"line {i} " + "word " * 30 for i in range(400))),
    "one_long_line": Reply(text="z" * 20_000),
    "long_log": Reply(text="logs", code="\n".join(f"Nov 29 12:00:{i % 60:02d} sglang[1]: decode batch {i}"
                                                  for i in range(5000))),
    "short_log": Reply(text="logs", code="line\n" * 30),
    "many_buttons": Reply(text="pick", buttons=tuple(Button(f"Option {i} " + "y" * 80, f"cmd {i}")
                                                     for i in range(60))),
    "everything": Reply(text="all " * 2000, tables=(_table(250, 6), _table(30, 22)),
                        buttons=tuple(Button(f"b{i}", f"c{i}") for i in range(30)),
                        code="x\n" * 4000, tone="warning"),
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_every_rendered_message_respects_block_kit_limits(name: str) -> None:
    messages = render_reply(CORPUS[name])
    assert messages
    for i, msg in enumerate(messages):
        assert check_message(msg) == [], (name, i, check_message(msg))
        assert len(msg.blocks) <= MAX_BLOCKS
        json.dumps(msg.blocks)  # serialisable


def _table_rows(messages: list[SlackMessage]) -> list[list[str]]:
    rows: list[list[str]] = []
    for m in messages:
        for b in m.blocks:
            if b["type"] == "table":
                assert len(b["rows"]) <= MAX_TABLE_ROWS
                rows.extend([c["text"] for c in r] for r in b["rows"][1:])  # skip header
    return rows


def test_big_table_is_split_across_messages_never_mid_row() -> None:
    table = _table(1000, 8)
    messages = render_reply(Reply(text="big", tables=(table,)))
    assert len(messages) >= 11
    assert all(sum(b["type"] == "table" for b in m.blocks) <= 1 for m in messages)
    assert _table_rows(messages) == [list(r) for r in table.rows]  # every row, whole, in order


def test_wide_table_falls_back_to_preformatted_with_whole_rows() -> None:
    table = _table(300, 25)
    messages = render_reply(Reply(text="wide", tables=(table,)))
    texts = [el["elements"][0]["text"] for m in messages for b in m.blocks if b["type"] == "rich_text"
             for el in b["elements"]]
    body_lines = [ln for t in texts for ln in t.split("\n")[2:]]  # each chunk repeats the header
    assert len(body_lines) == 300
    for i, line in enumerate(body_lines):
        assert line.split() == list(table.rows[i])


def test_table_too_wide_for_a_block_is_attached_whole() -> None:
    table = _table(30, 4, width=2500)
    messages = render_reply(Reply(text="cells", tables=(table,)))
    attached = [f for m in messages for f in m.files if f.filename.startswith("table-")]
    assert attached and all(cell in attached[0].content.decode() for row in table.rows for cell in row)


def test_long_log_shows_the_tail_and_attaches_the_whole() -> None:
    reply = CORPUS["long_log"]
    messages = render_reply(reply)
    assert messages[0].files and messages[0].files[0].content.decode() == reply.code
    shown = "".join(el["elements"][0]["text"] for m in messages for b in m.blocks if b["type"] == "rich_text"
                    for el in b["elements"])
    assert shown.endswith("decode batch 4999")


def test_buttons_carry_the_command_on_the_first_message() -> None:
    messages = render_reply(CORPUS["everything"])
    actions = [b for b in messages[0].blocks if b["type"] == "actions"]
    values = [e["value"] for b in actions for e in b["elements"]]
    assert values == [f"c{i}" for i in range(30)]
    assert not any(b["type"] == "actions" for m in messages[1:] for b in m.blocks)


def test_secrets_are_redacted_everywhere() -> None:
    token = "xoxb-1234567890-abcdefghijkl"
    reply = Reply(text=f"token {token}", code=f"Authorization: Bearer {token}",
                  tables=(Table(columns=("k",), rows=((f"key={token}",),)),))
    dumped = json.dumps([(m.text, m.blocks) for m in render_reply(reply)])
    assert token not in dumped and "[REDACTED]" in dumped


def test_mrkdwn_is_escaped_so_user_text_cannot_ping_everyone() -> None:
    msg = render_reply(Reply(text="<!channel> & <@U1>"))[0]
    assert msg.blocks[0]["text"]["text"] == "&lt;!channel&gt; &amp; &lt;@U1&gt;"


def test_click_receipt_replaces_buttons() -> None:
    msg = render_reply(Reply(text="ok?", buttons=(Button("Yes", "confirm 1"),)))[0]
    blocks = render_click_receipt(list(msg.blocks), "<@U2>", "Yes <now>")
    assert not any(b["type"] == "actions" for b in blocks)
    assert blocks[-1]["elements"][0]["text"] == "<@U2> chose *Yes &lt;now&gt;*"


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_every_block_passes_slack_sdks_own_block_kit_validation(name: str) -> None:
    """Checked against Slack's published limits as slack_sdk encodes them (`Block.parse(...).validate_json()`:
    section text 3,000, header 150, context elements 10, actions elements 25, button text 75, action_id 255),
    not against the renderer's own constants. slack_sdk does not check the table block's sizes, so those come
    from Slack's reference (https://docs.slack.dev/reference/block-kit/blocks/table-block: at most 100 rows,
    20 cells a row): written here, not imported from the renderer."""
    for msg in render_reply(CORPUS[name]):
        assert len(msg.blocks) <= 50  # https://docs.slack.dev/reference/block-kit/blocks: up to 50 in a message
        for block in msg.blocks:
            parsed = Block.parse(block)
            assert parsed is not None and parsed.type == block["type"], block["type"]
            parsed.validate_json()  # raises SlackObjectFormationError on any broken limit
            if block["type"] == "table":
                assert len(block["rows"]) <= 100
                assert all(len(row) <= 20 for row in block["rows"])
