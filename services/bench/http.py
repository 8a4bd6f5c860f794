"""The benchmark's one HTTP client, and the moment each request's bytes leave the client.

Owns `make_client` (one `httpx.AsyncClient`, pool sized to the largest level, explicit timeouts;
by default on the `httpx-aiohttp` transport, about a third of httpx's own CPU per SSE event) and
`SENT_AT`: with the aiohttp transport an aiohttp trace hook stamps `perf_counter()` just before
the request body is written to the socket, so t0 excludes the time the client itself spent
preparing the request when many start at once (that time is the client queue time instead).
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Any, Literal

import httpx

Transport = Literal["aiohttp", "httpx"]

# Each request sets a fresh list here; the trace hook appends the send time to it.
SENT_AT: ContextVar[list[float] | None] = ContextVar("pitcrew_bench_sent_at", default=None)


async def _on_chunk_sent(session: Any, ctx: Any, params: Any) -> None:
    holder = SENT_AT.get()
    if holder is not None and not holder:
        holder.append(time.perf_counter())


def make_client(base_url: str, *, pool: int, timeout_s: float, transport: Transport) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool, keepalive_expiry=60.0)
    timeout = httpx.Timeout(connect=min(10.0, timeout_s), read=timeout_s, write=min(30.0, timeout_s),
                            pool=timeout_s)
    if transport == "httpx":
        return httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits, trust_env=False)

    import aiohttp
    from httpx_aiohttp import AiohttpTransport

    tls = base_url.startswith("https://")  # no CA bundle loading (0.4 s of blocked loop) for http

    def session() -> aiohttp.ClientSession:
        trace = aiohttp.TraceConfig()
        trace.on_request_chunk_sent.append(_on_chunk_sent)
        connector = aiohttp.TCPConnector(limit=pool, keepalive_timeout=60.0, ssl=tls)
        return aiohttp.ClientSession(connector=connector, trace_configs=[trace], trust_env=False)

    return httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits, verify=tls,
                             transport=AiohttpTransport(limits=limits, trust_env=False, client=session,
                                                        verify=tls))
