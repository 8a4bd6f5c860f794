"""The chat contract: the only seam between a chat transport and the domain.

A transport builds a `ChatMessage` from what a person typed (or clicked), hands it to the router
and renders the `Reply` it gets back. Messages that come later (progress, results, incidents) are
sent through an `Outbox` under a *logical key*, e.g. ``job:42`` for a job's parent message: the
outbox remembers which transport message a key became, so later updates edit it in place and
thread replies go under it, even after a restart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

Tone = Literal["info", "success", "warning", "error", "progress"]
ButtonStyle = Literal["primary", "danger", "default"]


@dataclass(frozen=True)
class Actor:
    """Who sent a message: transport user id, display name, groups (for roles)."""

    user_id: str
    name: str
    transport: str = "console"
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChatMessage:
    """One command as typed (or a button click translated into command text)."""

    text: str
    actor: Actor
    channel: str
    thread_key: str | None = None  # logical key of the thread the message was typed in, if any
    received_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    via_button: bool = False


@dataclass(frozen=True)
class Table:
    """A table of strings; renderers never cut a row in half."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    title: str | None = None
    # per column: "left" or "right"; None = numbers right, text left
    align: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "rows": [list(r) for r in self.rows],
                "title": self.title, "align": list(self.align) if self.align else None}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Table:
        return cls(columns=tuple(d["columns"]), rows=tuple(tuple(r) for r in d["rows"]),
                   title=d.get("title"), align=tuple(d["align"]) if d.get("align") else None)


@dataclass(frozen=True)
class Button:
    """A choice; clicking it sends `command` as if the clicker had typed it."""

    label: str
    command: str
    style: ButtonStyle = "default"

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "command": self.command, "style": self.style}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Button:
        return cls(label=d["label"], command=d["command"], style=d.get("style", "default"))


@dataclass(frozen=True)
class Attachment:
    """A file posted with the message (e.g. a sweep chart PNG)."""

    filename: str
    content: bytes
    title: str = ""
    mime: str = "application/octet-stream"

    def to_json(self) -> dict[str, Any]:
        return {"filename": self.filename, "content_hex": self.content.hex(), "title": self.title,
                "mime": self.mime}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Attachment:
        return cls(filename=d["filename"], content=bytes.fromhex(d["content_hex"]),
                   title=d.get("title", ""), mime=d.get("mime", "application/octet-stream"))


@dataclass(frozen=True)
class Reply:
    """What the bot says: text (light markdown: *bold*, `code`), tables, buttons, files."""

    text: str
    tables: tuple[Table, ...] = ()
    buttons: tuple[Button, ...] = ()
    attachments: tuple[Attachment, ...] = ()
    tone: Tone = "info"
    ephemeral: bool = False  # only the asker sees it (refusals, help)
    code: str | None = None  # preformatted block (logs, diffs)

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "tables": [t.to_json() for t in self.tables],
                "buttons": [b.to_json() for b in self.buttons],
                "attachments": [a.to_json() for a in self.attachments],
                "tone": self.tone, "ephemeral": self.ephemeral, "code": self.code}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Reply:
        return cls(text=d["text"], tables=tuple(Table.from_json(t) for t in d.get("tables", [])),
                   buttons=tuple(Button.from_json(b) for b in d.get("buttons", [])),
                   attachments=tuple(Attachment.from_json(a) for a in d.get("attachments", [])),
                   tone=d.get("tone", "info"), ephemeral=bool(d.get("ephemeral", False)),
                   code=d.get("code"))


class Outbox(Protocol):
    """Durable delivery of messages that are not the direct answer to a command.

    ``key`` names a logical message (``job:42``, ``incident:7``, ``job:42:table``). Sending
    with a key that was already sent edits that message in place (progress); ``thread_of``
    posts under the message with that key. Delivery is at-most-once per (key, version).
    """

    async def send(self, key: str, reply: Reply, *, channel: str,
                   thread_of: str | None = None) -> None: ...


def render_plain(reply: Reply) -> str:
    """A transport-neutral plain-text rendering (logs, tests, the simplest console)."""
    parts = [reply.text]
    for t in reply.tables:
        parts.append(format_table(t))
    if reply.code:
        parts.append(reply.code)
    if reply.buttons:
        parts.append("  ".join(f"[{i}] {b.label}" for i, b in enumerate(reply.buttons, 1)))
    for a in reply.attachments:
        parts.append(f"(file: {a.filename})")
    return "\n".join(p for p in parts if p)


def format_table(table: Table) -> str:
    """Monospace table with aligned columns (used by console and Slack's preformatted fallback)."""
    cols = list(table.columns)
    rows = [list(r) for r in table.rows]
    widths = [max([len(c)] + [len(r[i]) if i < len(r) else 0 for r in rows]) for i, c in enumerate(cols)]
    align = list(table.align) if table.align else [
        "right" if rows and all(is_numeric_cell(r[i]) for r in rows if i < len(r)) else "left"
        for i in range(len(cols))]

    def fmt(cells: Sequence[str]) -> str:
        out = []
        for i, w in enumerate(widths):
            cell = cells[i] if i < len(cells) else ""
            out.append(cell.rjust(w) if align[i] == "right" else cell.ljust(w))
        return "  ".join(out).rstrip()

    lines = []
    if table.title:
        lines.append(table.title)
    lines.append(fmt(cols))
    lines.append("  ".join("-" * w for w in widths))
    lines.extend(fmt(r) for r in rows)
    return "\n".join(lines)


def is_numeric_cell(cell: str) -> bool:
    """Whether a table cell reads as a number (right-aligned): `1,360.8`, `+15 %`, `−1.0`."""
    s = cell.strip().replace(",", "").replace("%", "").replace("+", "").replace("−", "-")
    s = s.split(" ")[0]
    if s in ("", "-", "—", "n/a"):
        return True
    try:
        float(s)
    except ValueError:
        return False
    return True
