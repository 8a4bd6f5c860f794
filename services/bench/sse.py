"""Cheap reading of OpenAI-compatible SSE streams for the benchmark client.

Owns the hot path of the load generator: splitting raw response bytes into SSE events and
deciding, per event, only what the measurement needs — does it carry generated text, does it
carry `usage.completion_tokens`, is it the `[DONE]` marker or an in-stream error. Nothing here
decodes a whole event with a JSON parser except the (one per request) usage event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import orjson

# A non-empty string value for `content` (chat; also matches `reasoning_content`) or `text`
# (completions). `[^"]` after the opening quote means the string is not empty; an escaped
# first character (`\"`, `\n`) still counts as text.
_TEXT = re.compile(rb'(?:content|"text)"\s*:\s*"[^"]')
_ERROR_OBJ = re.compile(rb'^\s*\{\s*"error"|"object"\s*:\s*"error"')


@dataclass(slots=True)
class StreamState:
    """What one request's stream has shown so far; timestamps are `perf_counter()` seconds."""

    first_text: float | None = None
    last_text: float | None = None
    text_events: int = 0
    max_gap: float = 0.0
    completion_tokens: int | None = None
    done: bool = False
    error: str | None = None
    _buf: bytes = field(default=b"", repr=False)

    def feed(self, data: bytes, now: float) -> None:
        """Take the next raw bytes read at `now`; every complete event in them is stamped `now`."""
        buf = self._buf + data if self._buf else data
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n")
        end = buf.rfind(b"\n\n")
        if end < 0:
            self._buf = buf
            return
        self._buf = buf[end + 2:]
        for event in buf[:end].split(b"\n\n"):
            self._event(event, now)

    def _event(self, event: bytes, now: float) -> None:
        if event.startswith(b"data:") and b"\n" not in event:
            payload = event[5:]
        else:
            lines = [ln[5:] for ln in event.split(b"\n") if ln.startswith(b"data:")]
            if not lines:
                return  # comment, `event:` or `id:` lines only
            payload = b"\n".join(lines)
        payload = payload.strip()
        if payload[:1] != b"{":
            if payload == b"[DONE]":
                self.done = True
            return
        if _TEXT.search(payload) is not None:
            if self.first_text is None:
                self.first_text = now
            elif self.last_text is not None and now - self.last_text > self.max_gap:
                self.max_gap = now - self.last_text
            self.last_text = now
            self.text_events += 1
        u = payload.find(b'"usage"')
        if u >= 0 and payload[u + 7:u + 13].lstrip(b" \t:")[:1] == b"{":
            self.completion_tokens = _completion_tokens(payload)
        elif b"error" in payload[:48] and _ERROR_OBJ.search(payload[:48]) is not None:
            self.error = _error_text(payload)


def _completion_tokens(payload: bytes) -> int | None:
    try:
        usage = orjson.loads(payload).get("usage")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    if not isinstance(usage, dict):
        return None
    value = usage.get("completion_tokens")
    return value if isinstance(value, int) and value >= 0 else None


def _error_text(payload: bytes) -> str:
    try:
        doc = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return "error event in stream"
    err = doc.get("error", doc) if isinstance(doc, dict) else doc
    msg = err.get("message") if isinstance(err, dict) else None
    return f"error event in stream: {str(msg)[:200]}" if msg else "error event in stream"
