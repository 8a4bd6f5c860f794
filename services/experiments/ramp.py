"""The ramp: after a start, before the full benchmark, load the server up to the benchmark's highest concurrency
in steps, and stop at the first level where it errors or crashes.

A configuration that starts but cannot hold its load (the field notes' steps 10: ready, one request at 280 tok/s,
CUDA out of memory as soon as two decode together) is found within seconds at the level where it breaks,
instead of after the benchmark's full low levels. Each level sends ``c`` short generations at once (the
OpenAI-compatible ``/v1/completions``, greedy, ``max_tokens`` small but enough for the requests to decode
together) and waits for all of them. Levels: 1, 2, 4, ... up to the highest benchmark level (inclusive).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx

from services.httpclient import http_client

__all__ = ["RampResult", "ramp", "ramp_levels"]

Progress = Callable[[int], Awaitable[None]]


@dataclass
class RampResult:
    levels_ok: list[int] = field(default_factory=list)
    failed_at: int | None = None
    error: str = ""
    seconds: float = 0.0
    tok_s: dict[int, float] = field(default_factory=dict)  # level -> median per-request rate (tokens / wall)


def ramp_levels(top: int) -> tuple[int, ...]:
    """1, 2, 4, ... below `top`, then `top`."""
    levels: list[int] = []
    c = 1
    while c < top:
        levels.append(c)
        c *= 2
    levels.append(max(top, 1))
    return tuple(levels)


async def _one(client: httpx.AsyncClient, url: str, model: str, max_tokens: int, i: int) -> tuple[str | None, float]:
    """(error or None, tokens per second of this request)."""
    body = {"model": model, "prompt": f"Count from {i} upwards:", "max_tokens": max_tokens, "temperature": 0}
    t0 = time.monotonic()
    try:
        r = await client.post(f"{url}/v1/completions", json=body)
    except httpx.HTTPError as e:
        return (f"{type(e).__name__}: {str(e)[:120]}" if str(e) else type(e).__name__), 0.0
    if r.status_code != 200:
        return f"HTTP {r.status_code}: {r.text[:120]}", 0.0
    try:
        tokens = int(r.json()["usage"]["completion_tokens"])
    except (ValueError, KeyError, TypeError):
        tokens = 0
    return None, tokens / max(time.monotonic() - t0, 1e-6)


async def ramp(url: str, top: int, *, model: str = "default", max_tokens: int = 32, timeout_s: float = 60.0,
               progress: Progress | None = None) -> RampResult:
    """Load `url` level by level up to `top` concurrent requests; stop at the first level with an error."""
    result = RampResult()
    t0 = time.monotonic()
    async with http_client(url, timeout=timeout_s, limits=httpx.Limits(max_connections=top + 4)) as client:
        if model == "default":
            try:
                model = str((await client.get(f"{url}/v1/models")).json()["data"][0]["id"])
            except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
                model = "default"
        for c in ramp_levels(top):
            if progress is not None:
                await progress(c)
            answers = await asyncio.gather(*(_one(client, url, model, max_tokens, i) for i in range(c)))
            bad = [e for e, _ in answers if e]
            rates = sorted(r for e, r in answers if not e and r > 0)
            if rates:
                result.tok_s[c] = rates[len(rates) // 2]
            if bad:
                result.failed_at = c
                result.error = f"{len(bad)} of {c} requests failed ({bad[0]})"
                break
            result.levels_ok.append(c)
    result.seconds = time.monotonic() - t0
    return result
