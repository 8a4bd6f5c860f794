"""The console transport: a chat in the terminal, rendering the same replies as Slack would.

Messages typed at the prompt (or read from a script) go through the router like Slack messages.
Outbox items are delivered to the terminal: new messages print in full (tables with rich), edits of
a message print as a one-line progress update, thread replies are indented under their parent's
key, and buttons become numbered choices — type the number to click.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from handlers.contract import Actor, Attachment, Button, ChatMessage, Reply, Table
from services.redact import redact
from services.store import MessageRef, OutboxItem

TRANSPORT = "console"
CONSOLE_USER = "console-user"  # the user id of whoever types at the console (the demo makes it admin)
EMOJI = {":rotating_light:": "🚨", ":white_check_mark:": "✅", ":warning:": "⚠️", ":mute:": "🔇",
         ":eyes:": "👀", ":electric_plug:": "🔌", ":arrows_counterclockwise:": "🔄"}
TONE_STYLE = {"success": "green", "error": "red", "warning": "yellow", "progress": "cyan", "info": ""}


def _emoji(text: str) -> str:
    for code, char in EMOJI.items():
        text = text.replace(code, char)
    return text


class ConsoleView:
    """Prints replies; remembers the buttons it showed so a number can click one."""

    def __init__(self, console: Console | None = None, *, files_dir: Path | None = None) -> None:
        self.console = console or Console(highlight=False, soft_wrap=False)
        self.files_dir = files_dir  # where posted files (charts) are written, if anywhere
        self.buttons: list[Button] = []
        self._last_text: dict[str, list[str]] = {}

    def _buttons(self, buttons: tuple[Button, ...]) -> None:
        if not buttons:
            return
        start = len(self.buttons) + 1
        self.buttons.extend(buttons)
        choices = "   ".join(f"[bold][{i}][/bold] {b.label}" for i, b in enumerate(buttons, start))
        self.console.print(f"    {choices}", highlight=False)

    def remember(self, key: str, reply: Reply) -> None:
        self._last_text[key] = [ln for ln in _emoji(redact(reply.text).replace("*", "")).splitlines() if ln.strip()]

    def table(self, t: Table) -> None:
        rt = RichTable(title=t.title, show_lines=False, header_style="bold", title_justify="left")
        align = t.align or ()
        for i, c in enumerate(t.columns):
            justify = (align[i] if i < len(align) else None) or ("left" if i == 0 else "right")
            rt.add_column(c, justify=justify)  # type: ignore[arg-type]
        for row in t.rows:
            rt.add_row(*[redact(c) for c in row])
        self.console.print(rt)

    def show(self, reply: Reply, *, prefix: str = "", indent: int = 0) -> None:
        style = TONE_STYLE.get(reply.tone, "")
        pad = " " * indent
        text = _emoji(redact(reply.text).replace("*", ""))
        for line in text.splitlines() or [""]:
            self.console.print(Text(pad + prefix + line, style=style + (" dim" if reply.ephemeral else "")))
            prefix = " " * len(prefix)
        if reply.code:
            for line in redact(reply.code).splitlines():
                self.console.print(Text(pad + "    " + line, style="dim"))
        for t in reply.tables:
            self.table(t)
        for a in reply.attachments:
            saved = self.save(a)
            where = f" → saved to {saved}" if saved else ""
            self.console.print(Text(f"{pad}    (file {a.filename}: {a.title}, {len(a.content):,} bytes){where}",
                                    style="dim"))
        self._buttons(reply.buttons)

    def save(self, a: Attachment) -> str | None:
        """Write a posted file into `files_dir` (its own name, no directories) and return its path."""
        if self.files_dir is None:
            return None
        name = Path(a.filename).name or "file"
        self.files_dir.mkdir(parents=True, exist_ok=True)
        target = self.files_dir / name
        target.write_bytes(a.content)
        return str(target)

    def progress(self, key: str, reply: Reply) -> None:
        """An edit of an earlier message: print, on one line, the first line that changed."""
        lines = [ln for ln in _emoji(redact(reply.text).replace("*", "")).splitlines() if ln.strip()]
        before = self._last_text.get(key, [])
        self._last_text[key] = lines
        changed = [ln for ln in lines if ln not in before]
        if not changed:
            return
        style = TONE_STYLE.get(reply.tone, "") or "cyan"
        self.console.print(Text(f"  ↻ {key} · {changed[-1] if reply.tone == 'progress' else changed[0]}",
                                style=style))


class ConsoleDeliverer:
    """Delivers outbox items to the terminal (the `Deliverer` protocol of `bot.delivery`)."""

    transport = TRANSPORT

    def __init__(self, view: ConsoleView, on_message: Callable[[OutboxItem, Reply], None] | None = None) -> None:
        self.view = view
        self._ts = itertools.count(1)
        self.on_message = on_message

    async def deliver(self, item: OutboxItem, *, existing: MessageRef | None,
                      parent: MessageRef | None) -> MessageRef:
        reply = Reply.from_json(item.payload)
        if self.on_message:
            self.on_message(item, reply)
        if existing is not None:
            final = item.key.startswith("job:") and reply.tone in ("success", "error", "warning")
            if final:
                self.view.show(reply, prefix=f"[{item.key}] ")
            else:
                self.view.progress(item.key, reply)
            return existing
        if parent is not None:
            self.view.show(reply, prefix=f"  └ [{item.thread_of}] ", indent=0)
        else:
            self.view.show(reply, prefix=f"[{item.key}] ")
        self.view.remember(item.key, reply)
        return MessageRef(TRANSPORT, item.channel, f"{next(self._ts)}", parent.ts if parent else None)


class ConsoleChat:
    """Reads lines, dispatches them as one console user, prints the answers."""

    def __init__(self, dispatch: Callable[[ChatMessage], Any], view: ConsoleView, *, channel: str = "console",
                 user: Actor | None = None) -> None:
        self.dispatch = dispatch
        self.view = view
        self.channel = channel
        self.user = user or Actor(CONSOLE_USER, "you", TRANSPORT)

    async def say(self, text: str, *, echo: bool = False) -> Reply | None:
        text = text.strip()
        if not text or text.startswith("#"):
            return None
        via_button = False
        if text.isdigit() and 1 <= int(text) <= len(self.view.buttons):
            button = self.view.buttons[int(text) - 1]
            text, via_button = button.command, True
            self.view.console.print(Text(f"  (clicked {button.label}: {text})", style="dim"))
        if echo:
            self.view.console.print(Text(f"> {text}", style="bold"))
        msg = ChatMessage(text=text, actor=self.user, channel=self.channel, via_button=via_button)
        reply: Reply = await self.dispatch(msg)
        self.view.show(reply)
        return reply


async def read_lines(stop: asyncio.Event) -> Any:
    """Lines from stdin without blocking the event loop; ends at EOF or when `stop` is set."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except (ValueError, OSError):
        while not stop.is_set():
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line:
                return
            yield line
        return
    while not stop.is_set():
        line = await reader.readline()
        if not line:
            return
        yield line.decode(errors="replace")
