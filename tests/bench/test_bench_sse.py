"""The SSE reader: event splitting across reads, what counts as text, usage, [DONE], errors."""

from __future__ import annotations

from services.bench.sse import StreamState

ROLE = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":null}\n\n'
TEXT = b'data: {"choices":[{"index":0,"delta":{"content":" hi"}}],"usage":null}\n\n'
USAGE = b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":7,"total_tokens":10}}\n\n'
DONE = b"data: [DONE]\n\n"


def test_role_chunk_is_not_text_and_text_is_stamped_when_read() -> None:
    s = StreamState()
    s.feed(ROLE, 1.0)
    assert s.first_text is None
    s.feed(TEXT, 2.0)
    s.feed(TEXT + TEXT, 3.0)
    s.feed(USAGE + DONE, 4.0)
    assert (s.first_text, s.last_text, s.text_events, s.completion_tokens, s.done) == (2.0, 3.0, 3, 7, True)
    assert s.max_gap == 1.0


def test_events_split_across_reads_and_crlf() -> None:
    s = StreamState()
    blob = (ROLE + TEXT + TEXT + USAGE + DONE).replace(b"\n", b"\r\n")
    for i in range(0, len(blob), 7):
        s.feed(blob[i:i + 7], float(i))
    assert s.text_events == 2 and s.completion_tokens == 7 and s.done


def test_spaced_json_reasoning_content_and_completions_text() -> None:
    s = StreamState()
    s.feed(b'data: {"choices": [{"delta": {"reasoning_content": "think", "content": null}}]}\n\n', 1.0)
    s.feed(b'data: {"choices": [{"text": "x", "index": 0}], "usage": {"completion_tokens": 2}}\n\n', 2.0)
    assert s.text_events == 2 and s.completion_tokens == 2
    empty = StreamState()
    empty.feed(b'data: {"choices":[{"text":"","finish_reason":"length"}]}\n\n', 1.0)
    assert empty.text_events == 0


def test_usage_on_last_content_chunk_and_escaped_text() -> None:
    s = StreamState()
    s.feed(b'data: {"choices":[{"delta":{"content":"\\"q\\""}}],"usage":{"completion_tokens":1}}\n\n', 1.0)
    assert s.text_events == 1 and s.completion_tokens == 1


def test_error_event_in_stream() -> None:
    s = StreamState()
    s.feed(TEXT + b'data: {"error":{"message":"boom","code":500}}\n\n', 1.0)
    assert s.error is not None and "boom" in s.error
    v = StreamState()
    v.feed(b'data: {"object":"error","message":"bad","type":"x"}\n\n', 1.0)
    assert v.error is not None
