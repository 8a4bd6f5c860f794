"""Parsers for SGLang's log lines (FORMATS a).

`parse_decode` reads every known `Decode batch` shape (0.4.6 `Decode batch.` with no trailing comma,
0.5.2/0.5.5 with a trailing `,`, 0.5.9/0.5.23 without; `Decode batch [N]` heads; hybrid-model
`full token usage`; `cpu graph`/`npu graph`) with one regex per field, as FORMATS a.1 recommends.
`parse_prefill` and `parse_capacity` cover the other lines pitcrew reads; the ready line is `READY_TEXT`.
The error signatures diagnosis matches on are its own tables (`services.diagnosis.signatures`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.engines.protocol import Capacity

__all__ = ["READY_TEXT", "DecodeStats", "PrefillStats", "parse_capacity", "parse_decode", "parse_prefill",
           "strip_prefix"]

_PREFIX = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)((?: [A-Z_]+\d+)*)\] ")

_DECODE_HEAD = re.compile(r"Decode batch(?: \[\d+\])?[.,] ")
_RUNNING = re.compile(r"#running-req: (\d+)")
_TOKENS = re.compile(r"#(?:full )?token: (\d+)")
_USAGE = re.compile(r"token usage: ([\d.]+)")
_ACCEPT_LEN = re.compile(r"accept len: ([\d.]+)")
_ACCEPT_RATE = re.compile(r"accept rate: ([\d.]+)")
_GRAPH = re.compile(r"(?:cuda|cpu|npu|\w+) graph: (True|False)")
_GEN_TPUT = re.compile(r"gen throughput \(token/s\): ([\d.]+)")
_QUEUE = re.compile(r"#queue-req: (\d+)")

_PREFILL_HEAD = re.compile(r"Prefill batch(?: \[\d+\])?[.,] ")
_NEW_SEQ = re.compile(r"#new-seq: (\d+)")
_NEW_TOKEN = re.compile(r"#new-token: (\d+)")
_CACHED = re.compile(r"#cached-token: (\d+)")

_CAPACITY = re.compile(r"max_total_num_tokens=(\d+)")
_CAP_FIELDS = {
    "chunked_prefill_size": re.compile(r"chunked_prefill_size=(-?\d+)"),
    "max_prefill_tokens": re.compile(r"max_prefill_tokens=(\d+)"),
    "max_running_requests": re.compile(r"max_running_requests=(\d+)"),
    "context_len": re.compile(r"context_len=(\d+)"),
}
_AVAIL_MEM = re.compile(r"available_gpu_mem=([\d.]+) GB")

READY_TEXT = "The server is fired up and ready to roll!"


@dataclass(frozen=True, slots=True)
class DecodeStats:
    """One `Decode batch` line."""

    running_req: int
    tokens: int | None
    token_usage: float | None
    accept_len: float | None
    accept_rate: float | None
    cuda_graph: bool | None
    gen_throughput: float | None
    queue_req: int | None


@dataclass(frozen=True, slots=True)
class PrefillStats:
    """One `Prefill batch` line."""

    new_seq: int
    new_token: int | None
    cached_token: int | None
    token_usage: float | None
    running_req: int | None
    queue_req: int | None


def strip_prefix(message: str) -> tuple[str | None, str, str]:
    """Split `[ts TPn] text` into (timestamp or None, rank tags like `TP0`, text)."""
    m = _PREFIX.match(message)
    if m is None:
        return None, "", message
    return m.group(1), m.group(2).strip(), message[m.end():]


def _i(rx: re.Pattern[str], text: str) -> int | None:
    m = rx.search(text)
    return int(m.group(1)) if m else None


def _f(rx: re.Pattern[str], text: str) -> float | None:
    m = rx.search(text)
    if not m:
        return None
    try:
        return float(m.group(1))
    except ValueError:
        return None


def parse_decode(message: str) -> DecodeStats | None:
    """Parse a `Decode batch` line of any known SGLang version; None for other lines."""
    if "Decode batch" not in message:
        return None
    head = _DECODE_HEAD.search(message)
    if head is None:
        return None
    body = message[head.end():]
    running = _i(_RUNNING, body)
    if running is None:
        return None
    graph = _GRAPH.search(body)
    return DecodeStats(
        running_req=running,
        tokens=_i(_TOKENS, body),
        token_usage=_f(_USAGE, body),
        accept_len=_f(_ACCEPT_LEN, body),
        accept_rate=_f(_ACCEPT_RATE, body),
        cuda_graph=(graph.group(1) == "True") if graph else None,
        gen_throughput=_f(_GEN_TPUT, body),
        queue_req=_i(_QUEUE, body),
    )


def parse_prefill(message: str) -> PrefillStats | None:
    """Parse a `Prefill batch` line; None for other lines."""
    if "Prefill batch" not in message:
        return None
    head = _PREFILL_HEAD.search(message)
    if head is None:
        return None
    body = message[head.end():]
    new_seq = _i(_NEW_SEQ, body)
    if new_seq is None:
        return None
    return PrefillStats(new_seq, _i(_NEW_TOKEN, body), _i(_CACHED, body), _f(_USAGE, body),
                        _i(_RUNNING, body), _i(_QUEUE, body))


def parse_capacity(message: str) -> Capacity | None:
    """Parse the scheduler's capacity line; None for other lines."""
    if "max_total_num_tokens=" not in message:
        return None
    total = _i(_CAPACITY, message)
    if total is None:
        return None
    values = {k: _i(rx, message) for k, rx in _CAP_FIELDS.items()}
    return Capacity(total, values["chunked_prefill_size"], values["max_prefill_tokens"],
                    values["max_running_requests"], values["context_len"], _f(_AVAIL_MEM, message))
