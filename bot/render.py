"""Reply -> Slack Block Kit: one or more messages that always respect Slack's limits.

`render_reply(reply)` returns a list of `SlackMessage` (the first is the one that is edited in
place and carries the buttons; the rest go in its thread, in order). Rules:

- text becomes mrkdwn sections of at most 3,000 characters, split at line boundaries;
- a table becomes Slack's ``table`` block when it fits (at most 100 rows counting the header,
  20 cells a row, one table per message) — a longer table is split across messages, never
  mid-row — otherwise a monospace ``rich_text_preformatted`` table, split at row boundaries
  with the header repeated;
- long code/log text is shown by its tail and attached in full as a file;
- buttons become ``actions`` blocks whose button ``value`` is the command text;
- at most 50 blocks per message; everything is passed through `services.redact.redact`.

`check_message()` lists every limit a rendered message breaks (the tests run it on a corpus).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from handlers.contract import Attachment, Button, Reply, Table, format_table, is_numeric_cell, render_plain
from services.redact import redact

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_TEXT = 3000
MAX_PRE_TEXT = 3000  # our own cap per preformatted block (keeps every text element small)
MAX_TABLE_ROWS = 100  # including the header row
MAX_TABLE_CELLS = 20
MAX_CELL_TEXT = 2000
MAX_ACTIONS_ELEMENTS = 25
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_ACTION_ID = 255
MAX_FALLBACK_TEXT = 3000  # the notification `text` (Slack allows 40k; keep it short)
MESSAGE_BUDGET = 12_000  # characters of block content per message, our own readability cap
CODE_INLINE_MAX = 6000  # longer code/logs: show the tail inline, attach the whole text
TABLE_CELL_BUDGET = 10_000  # characters in one table block

ACTION_PREFIX = "pitcrew_cmd"

_TONE_EMOJI = {"info": "", "success": ":white_check_mark: ", "warning": ":warning: ",
               "error": ":x: ", "progress": ":hourglass_flowing_sand: "}


@dataclass(frozen=True)
class SlackMessage:
    """One Slack message: notification text and blocks; ``files`` go in its thread."""

    text: str
    blocks: tuple[dict[str, Any], ...]
    files: tuple[Attachment, ...] = field(default=())


def escape_mrkdwn(text: str) -> str:
    """Escape the three characters Slack's mrkdwn reserves (``&``, ``<``, ``>``)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_reply(reply: Reply, *, lead: str | None = None) -> list[SlackMessage]:
    """Render a reply as one or more Slack messages, each within every Block Kit limit.

    ``lead`` is a small context line shown first (mrkdwn, e.g. who asked for what).
    """
    files: list[Attachment] = list(reply.attachments)
    pieces: list[list[dict[str, Any]]] = []  # each piece is kept together in one message
    if lead:
        pieces.append([_context(_clip(redact(lead), MAX_CONTEXT_TEXT))])
    text = redact(reply.text or "")
    prefix = _TONE_EMOJI.get(reply.tone, "")
    for chunk in _split_lines(escape_mrkdwn(text), MAX_SECTION_TEXT - len(prefix)):
        pieces.append([_section(prefix + chunk)])
        prefix = ""
    if reply.code:
        code = redact(reply.code)
        if len(code) > CODE_INLINE_MAX:
            tail = _tail_lines(code, CODE_INLINE_MAX)
            files.append(Attachment(filename="output.txt", content=code.encode(), title="Full output",
                                    mime="text/plain"))
            pieces.append([_context(f"Last {tail.count(chr(10)) + 1} lines shown; full output attached.")])
            code = tail
        for chunk in _split_lines(code, MAX_PRE_TEXT):
            pieces.append([_preformatted(chunk)])
    table_pieces: list[list[dict[str, Any]]] = []
    for n, table in enumerate(reply.tables):
        safe = _redact_table(table)
        pieces_for_table = _table_pieces(safe)
        table_pieces.extend(pieces_for_table)
        if any(b.get("type") == "rich_text" for p in pieces_for_table for b in p) and _too_wide(safe):
            files.append(Attachment(filename=f"table-{n + 1}.txt", content=format_table(safe).encode(),
                                    title=safe.title or f"Table {n + 1}", mime="text/plain"))
    button_blocks = _button_blocks(reply.buttons)
    messages = _pack(pieces + table_pieces, first_reserve=len(button_blocks))
    if not messages:
        messages = [[_section(_TONE_EMOJI.get(reply.tone, "") + "(empty)")]]
    messages[0] = messages[0] + button_blocks
    fallback = _fallback_text(reply)
    out = []
    for i, blocks in enumerate(messages):
        out.append(SlackMessage(text=fallback if i == 0 else f"{fallback[:200]} (continued)",
                                blocks=tuple(blocks), files=tuple(files) if i == 0 else ()))
    return out


def render_plain_fallback(reply: Reply) -> SlackMessage:
    """A blocks-free rendering, used when Slack rejects our blocks (never expected)."""
    body = redact(render_plain(reply))
    if len(body) > MAX_FALLBACK_TEXT:
        body = body[: MAX_FALLBACK_TEXT - 40] + "\n… (truncated)"
    return SlackMessage(text=body, blocks=(), files=reply.attachments)


def render_click_receipt(blocks: Sequence[dict[str, Any]], who: str, label: str) -> list[dict[str, Any]]:
    """The clicked message's blocks with its buttons replaced by "<who> chose <label>".

    ``who`` is mrkdwn (e.g. a ``<@U123>`` mention); ``label`` is plain text and escaped."""
    kept = [b for b in blocks if b.get("type") != "actions"]
    note = _context(f"{who} chose *{escape_mrkdwn(label)}*")
    kept = kept[: MAX_BLOCKS - 1]
    kept.append(note)
    return kept


def button_action_id(index: int, command: str) -> str:
    """A unique, stable action id for the button (Slack requires unique ids per message)."""
    digest = hashlib.sha1(command.encode()).hexdigest()[:10]
    return f"{ACTION_PREFIX}:{index}:{digest}"


def check_message(msg: SlackMessage) -> list[str]:
    """Every Block Kit limit this message breaks (an empty list means it is fine to send)."""
    errs: list[str] = []
    blocks = msg.blocks
    if len(blocks) > MAX_BLOCKS:
        errs.append(f"{len(blocks)} blocks > {MAX_BLOCKS}")
    if len(msg.text) > 40_000:
        errs.append("text longer than 40000")
    tables = [b for b in blocks if b.get("type") == "table"]
    if len(tables) > 1:
        errs.append(f"{len(tables)} table blocks in one message")
    action_ids: set[str] = set()
    total = 0
    for i, b in enumerate(blocks):
        kind = b.get("type")
        if kind == "section":
            n = len(b["text"]["text"])
            total += n
            if n > MAX_SECTION_TEXT:
                errs.append(f"block {i}: section text {n} > {MAX_SECTION_TEXT}")
            if n == 0:
                errs.append(f"block {i}: empty section text")
        elif kind == "header":
            n = len(b["text"]["text"])
            if n > MAX_HEADER_TEXT:
                errs.append(f"block {i}: header text {n} > {MAX_HEADER_TEXT}")
        elif kind == "context":
            for el in b["elements"]:
                n = len(el.get("text", ""))
                total += n
                if n > MAX_CONTEXT_TEXT:
                    errs.append(f"block {i}: context text {n} > {MAX_CONTEXT_TEXT}")
        elif kind == "rich_text":
            for el in b["elements"]:
                n = sum(len(t.get("text", "")) for t in el.get("elements", []))
                total += n
                if n > MAX_PRE_TEXT:
                    errs.append(f"block {i}: rich text {n} > {MAX_PRE_TEXT}")
        elif kind == "table":
            rows = b["rows"]
            if len(rows) > MAX_TABLE_ROWS:
                errs.append(f"block {i}: table rows {len(rows)} > {MAX_TABLE_ROWS}")
            if len(b.get("column_settings", [])) > MAX_TABLE_CELLS:
                errs.append(f"block {i}: column settings > {MAX_TABLE_CELLS}")
            for r in rows:
                if len(r) > MAX_TABLE_CELLS:
                    errs.append(f"block {i}: row of {len(r)} cells > {MAX_TABLE_CELLS}")
                for c in r:
                    total += len(c["text"])
                    if len(c["text"]) > MAX_CELL_TEXT:
                        errs.append(f"block {i}: cell text > {MAX_CELL_TEXT}")
        elif kind == "actions":
            els = b["elements"]
            if len(els) > MAX_ACTIONS_ELEMENTS:
                errs.append(f"block {i}: {len(els)} action elements > {MAX_ACTIONS_ELEMENTS}")
            for el in els:
                if len(el["text"]["text"]) > MAX_BUTTON_TEXT:
                    errs.append(f"block {i}: button text > {MAX_BUTTON_TEXT}")
                if len(el.get("value", "")) > MAX_BUTTON_VALUE:
                    errs.append(f"block {i}: button value > {MAX_BUTTON_VALUE}")
                aid = el.get("action_id", "")
                if len(aid) > MAX_ACTION_ID or aid in action_ids:
                    errs.append(f"block {i}: bad or duplicate action_id {aid!r}")
                action_ids.add(aid)
        elif kind == "divider":
            pass
        else:
            errs.append(f"block {i}: unexpected block type {kind!r}")
    if total > MESSAGE_BUDGET + MAX_SECTION_TEXT:
        errs.append(f"message content {total} chars > budget")
    return errs


# -- building blocks -----------------------------------------------------------------------------

def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:MAX_CONTEXT_TEXT]}]}


def _preformatted(text: str) -> dict[str, Any]:
    return {"type": "rich_text", "elements": [
        {"type": "rich_text_preformatted", "elements": [{"type": "text", "text": text}]}]}


def _block_size(block: dict[str, Any]) -> int:
    kind = block.get("type")
    if kind == "section":
        return len(block["text"]["text"])
    if kind == "context":
        return sum(len(e.get("text", "")) for e in block["elements"])
    if kind == "rich_text":
        return sum(len(t.get("text", "")) for el in block["elements"] for t in el.get("elements", []))
    if kind == "table":
        return sum(len(c["text"]) for r in block["rows"] for c in r)
    return 0


def _pack(pieces: list[list[dict[str, Any]]], *, first_reserve: int) -> list[list[dict[str, Any]]]:
    """Greedy packing of pieces into messages: block count, one table, character budget."""
    messages: list[list[dict[str, Any]]] = []
    cur: list[dict[str, Any]] = []
    cur_size = 0
    cur_has_table = False
    for piece in pieces:
        size = sum(_block_size(b) for b in piece)
        has_table = any(b.get("type") == "table" for b in piece)
        limit = MAX_BLOCKS - (first_reserve if not messages else 0)
        fits = (len(cur) + len(piece) <= limit and cur_size + size <= MESSAGE_BUDGET
                and not (has_table and cur_has_table))
        if cur and not fits:
            messages.append(cur)
            cur, cur_size, cur_has_table = [], 0, False
        cur.extend(piece)
        cur_size += size
        cur_has_table = cur_has_table or has_table
    if cur:
        messages.append(cur)
    return messages


def _button_blocks(buttons: Sequence[Button]) -> list[dict[str, Any]]:
    if not buttons:
        return []
    elements = []
    for i, b in enumerate(buttons[: MAX_ACTIONS_ELEMENTS * 4]):
        el: dict[str, Any] = {"type": "button",
                              "text": {"type": "plain_text", "text": _clip(b.label, MAX_BUTTON_TEXT),
                                       "emoji": True},
                              "value": b.command[:MAX_BUTTON_VALUE],
                              "action_id": button_action_id(i, b.command)}
        if b.style in ("primary", "danger"):
            el["style"] = b.style
        elements.append(el)
    return [{"type": "actions", "elements": elements[i:i + MAX_ACTIONS_ELEMENTS]}
            for i in range(0, len(elements), MAX_ACTIONS_ELEMENTS)]


def _table_pieces(table: Table) -> list[list[dict[str, Any]]]:
    """A table as pieces: native table blocks if it fits, else preformatted chunks."""
    fits_native = (len(table.columns) <= MAX_TABLE_CELLS
                   and all(len(c) <= MAX_CELL_TEXT for r in table.rows for c in r)
                   and all(len(c) <= MAX_CELL_TEXT for c in table.columns)
                   and all(len(r) <= len(table.columns) for r in table.rows))
    if fits_native:
        return _native_table_pieces(table)
    return _preformatted_table_pieces(table)


def _native_table_pieces(table: Table) -> list[list[dict[str, Any]]]:
    align = list(table.align) if table.align else _auto_align(table)
    settings = [{"align": a if a in ("left", "center", "right") else "left", "is_wrapped": False}
                for a in align[:MAX_TABLE_CELLS]]
    header = [{"type": "raw_text", "text": c or " "} for c in table.columns]
    ncols = len(table.columns)
    chunks: list[list[tuple[str, ...]]] = []
    cur: list[tuple[str, ...]] = []
    cur_chars = sum(len(c) for c in table.columns)
    head_chars = cur_chars
    for row in table.rows:
        row_chars = sum(len(c) for c in row)
        if cur and (len(cur) + 1 >= MAX_TABLE_ROWS or cur_chars + row_chars > TABLE_CELL_BUDGET):
            chunks.append(cur)
            cur, cur_chars = [], head_chars
        cur.append(row)
        cur_chars += row_chars
    if cur or not chunks:
        chunks.append(cur)
    pieces = []
    for n, chunk in enumerate(chunks):
        rows = [header] + [[{"type": "raw_text", "text": (row[i] if i < len(row) else "") or " "}
                            for i in range(ncols)] for row in chunk]
        block: dict[str, Any] = {"type": "table", "column_settings": settings, "rows": rows}
        piece: list[dict[str, Any]] = []
        title = _table_title(table, n, len(chunks))
        if title:
            piece.append(_context(title))
        piece.append(block)
        pieces.append(piece)
    return pieces


def _preformatted_table_pieces(table: Table) -> list[list[dict[str, Any]]]:
    text = format_table(Table(columns=table.columns, rows=table.rows, align=table.align))
    lines = text.split("\n")
    head, body = lines[:2], lines[2:]
    head = [_clip(h, MAX_PRE_TEXT // 4) for h in head]
    head_len = sum(len(h) + 1 for h in head)
    row_cap = MAX_PRE_TEXT - head_len - 1
    chunks: list[list[str]] = []
    cur: list[str] = []
    cur_len = head_len
    for line in body:
        line = _clip(line, row_cap)  # only rows wider than a block; the full table is attached
        if cur and cur_len + len(line) + 1 > MAX_PRE_TEXT:
            chunks.append(cur)
            cur, cur_len = [], head_len
        cur.append(line)
        cur_len += len(line) + 1
    if cur or not chunks:
        chunks.append(cur)
    pieces = []
    for n, chunk in enumerate(chunks):
        piece: list[dict[str, Any]] = []
        title = _table_title(table, n, len(chunks))
        if title:
            piece.append(_context(title))
        piece.append(_preformatted("\n".join(head + chunk)))
        pieces.append(piece)
    return pieces


def _too_wide(table: Table) -> bool:
    """True when a row of the monospace rendering would not fit in one block."""
    widths = [len(c) for c in table.columns]
    for r in table.rows:
        for i, c in enumerate(r[: len(widths)]):
            widths[i] = max(widths[i], len(c))
    return sum(widths) + 2 * len(widths) > min(MAX_PRE_TEXT // 4, MAX_PRE_TEXT - 1)


def _table_title(table: Table, n: int, total: int) -> str:
    title = escape_mrkdwn(table.title) if table.title else ""
    if total > 1:
        title = f"{title} ({n + 1}/{total})".strip()
    return f"*{title}*" if title else ""


def _auto_align(table: Table) -> list[str]:
    return ["right" if table.rows and all(is_numeric_cell(r[i]) for r in table.rows if i < len(r)) else "left"
            for i in range(len(table.columns))]


def _redact_table(table: Table) -> Table:
    return Table(columns=tuple(redact(c) for c in table.columns),
                 rows=tuple(tuple(redact(c) for c in r) for r in table.rows),
                 title=redact(table.title) if table.title else None, align=table.align)


def _split_lines(text: str, limit: int) -> list[str]:
    """Split text into chunks of at most ``limit`` chars, at line boundaries when possible."""
    if not text.strip():
        return []
    chunks: list[str] = []
    cur = ""
    for line in text.split("\n"):
        while len(line) > limit:  # a single overlong line: hard wrap
            if cur:
                chunks.append(cur)
                cur = ""
            chunks.append(line[:limit])
            line = line[limit:]
        candidate = f"{cur}\n{line}" if cur else line
        if len(candidate) > limit:
            chunks.append(cur)
            cur = line
        else:
            cur = candidate
    if cur.strip():
        chunks.append(cur)
    return [c for c in chunks if c.strip()]


def _tail_lines(text: str, limit: int) -> str:
    tail = text[-limit:]
    nl = tail.find("\n")
    return tail[nl + 1:] if 0 <= nl < len(tail) - 1 else tail


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fallback_text(reply: Reply) -> str:
    first = redact(reply.text or "").strip().split("\n")[0] if reply.text else ""
    if not first and reply.tables:
        first = reply.tables[0].title or "Table"
    return _clip(first or "pitcrew", MAX_FALLBACK_TEXT)
