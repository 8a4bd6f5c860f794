"""The known-truth streaming server's parameters, stream plans, pre-encoded bytes and its truth.

Owns `TruthParams` (what the server is told), `Faults` (what it does wrong on purpose),
`stream_plan` (which tokens each SSE chunk carries and when, in decode-time tokens after the
first chunk), `Truth` (TTFT, E2E, N, TPOT, decode tok/s per request, tokens per chunk as a
correct client must read them for one uncontended stream) and the HTTP-chunked SSE frames the
server writes, encoded once.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

import orjson


@dataclass(frozen=True)
class TruthParams:
    ttft_s: float = 0.05  # from admission to the first text chunk
    rate: float = 100.0  # decode tokens per second per stream
    tokens_per_chunk: float = 1.0  # mean tokens per decode chunk; fractional values alternate sizes
    first_chunk: str = "one"  # "one": the first chunk carries 1 token (prefill, like SGLang); "pattern"
    capacity: float | None = None  # aggregate decode tokens/s shared by decoding streams
    max_running: int | None = None  # admitted at once; the rest queue (FIFO)
    usage: str = "on"  # "on": usage chunk when asked; "last": on the last content chunk; "off"
    role_chunk: bool = True  # chat: send {"role": "assistant", "content": ""} on admission
    num_draft_tokens: int = 4  # only for the vLLM-style counters in /metrics
    eos_spread: float = 0.0  # 0: every answer is max_tokens long; f: "EOS" cuts up to that fraction off

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Faults:
    """Fault knobs (mutable at run time through `POST /control` with `fault_<name>` keys)."""

    kind: str | None = None  # "error" | "drop" | "hang" | "die"
    start: int = 0  # first request index the fault applies to
    every: int = 1
    status: int = 500
    drop_after: int = 3  # chunks written before a "drop"

    def applies(self, idx: int) -> bool:
        return self.kind is not None and idx >= self.start and (idx - self.start) % max(self.every, 1) == 0


def chunk_sizes(n: int, k: float, first_chunk: str) -> list[int]:
    """Tokens per SSE chunk for an `n`-token answer; sizes alternate so their mean is `k`."""
    sizes: list[int] = []
    left = n
    if first_chunk == "one":
        sizes.append(1)
        left -= 1
    j = 0
    while left > 0:
        size = math.floor((j + 1) * k + 0.5) - math.floor(j * k + 0.5)
        size = max(1, min(size, left))
        sizes.append(size)
        left -= size
        j += 1
    return sizes


def answer_len(max_tokens: int, tag: int, spread: float) -> int:
    """Tokens of the answer to prompt number `tag`: `max_tokens` less a fraction in [0, spread)
    drawn from the prompt number alone (deterministic, so a test can predict it)."""
    if spread <= 0:
        return max(max_tokens, 1)
    u = ((tag * 2654435761) % 4_294_967_296) / 4_294_967_296.0
    return max(1, max_tokens - math.floor(max_tokens * min(spread, 1.0) * u))


@lru_cache(maxsize=256)
def stream_plan(n: int, p: TruthParams) -> list[tuple[float, int]]:
    """(decode tokens after the first chunk when the chunk is due, chunk size) for each chunk.

    Token i (0-based) of the decode is due at i/rate after the first chunk; a chunk goes out when
    its last token is due. Cached: callers must not modify the list.
    """
    sizes = chunk_sizes(n, p.tokens_per_chunk, p.first_chunk)
    plan: list[tuple[float, int]] = []
    cum = 0
    for size in sizes:
        cum += size
        plan.append((float(cum - sizes[0]), size))
    return plan


@dataclass(frozen=True)
class Truth:
    """What a correct client reads for one stream without contention or queueing."""

    ttft_s: float
    e2e_s: float
    tokens: int
    chunks: int
    tpot_s: float | None
    decode_tok_s: float | None
    tokens_per_chunk: float


def truth_for(n: int, p: TruthParams, rate: float | None = None) -> Truth:
    r = rate if rate is not None else p.rate
    plan = stream_plan(n, p)
    decode_s = plan[-1][0] / r
    tpot = decode_s / (n - 1) if n > 1 and decode_s > 0 else None
    return Truth(ttft_s=p.ttft_s, e2e_s=p.ttft_s + decode_s, tokens=n, chunks=len(plan), tpot_s=tpot,
                 decode_tok_s=1.0 / tpot if tpot else None, tokens_per_chunk=n / len(plan))


# -- pre-encoded bytes (HTTP/1.1 chunked transfer encoding around SSE events) --------------------------


def _frame(payload: bytes) -> bytes:
    event = b"data: " + payload + b"\n\n"
    return b"%x\r\n" % len(event) + event + b"\r\n"


_WORD = " tok"


@lru_cache(maxsize=256)
def text_frame(api: str, size: int, last: bool, usage_n: int | None = None) -> bytes:
    text = _WORD * size
    finish = "length" if last else None
    choice: dict[str, Any]
    if api == "chat":
        choice = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
        obj = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": text, "finish_reason": finish}
        obj = "text_completion"
    doc: dict[str, Any] = {"id": "truth", "object": obj, "created": 0, "model": "truth", "choices": [choice]}
    if usage_n is not None:
        doc["usage"] = {"prompt_tokens": 8, "completion_tokens": usage_n, "total_tokens": usage_n + 8}
    else:
        doc["usage"] = None
    return _frame(orjson.dumps(doc))


@lru_cache(maxsize=64)
def usage_frame(api: str, n: int) -> bytes:
    obj = "chat.completion.chunk" if api == "chat" else "text_completion"
    doc = {"id": "truth", "object": obj, "created": 0, "model": "truth", "choices": [],
           "usage": {"prompt_tokens": 8, "completion_tokens": n, "total_tokens": n + 8}}
    return _frame(orjson.dumps(doc))


ROLE_FRAME = _frame(orjson.dumps({
    "id": "truth", "object": "chat.completion.chunk", "created": 0, "model": "truth",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
    "usage": None}))
DONE_FRAME = _frame(b"[DONE]") + b"0\r\n\r\n"
STREAM_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
               b"transfer-encoding: chunked\r\n\r\n")
