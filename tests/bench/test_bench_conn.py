"""The slot connection's HTTP/1.1 reading, against a real loopback server writing exact bytes."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable

import pytest

from services.bench.conn import ConnectFailed, Dropped, Endpoint, SlotConnection, get
from services.bench.sse import StreamState

TEXT = b'data: {"choices":[{"delta":{"content":" hi"}}],"usage":null}\n\n'
USAGE = b'data: {"choices":[],"usage":{"completion_tokens":2}}\n\n'
DONE = b"data: [DONE]\n\n"
SSE = TEXT + TEXT + USAGE + DONE


def chunked(*events: bytes) -> bytes:
    return b"".join(b"%x;ext=1\r\n" % len(e) + e + b"\r\n" for e in events) + b"0\r\nX-Trailer: 1\r\n\r\n"


HEAD_CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], "asyncio.Future[None] | object"]


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., object]]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> Endpoint:
        srv = await asyncio.start_server(handler, "127.0.0.1", 0)  # type: ignore[arg-type]
        servers.append(srv)
        port = srv.sockets[0].getsockname()[1]
        return Endpoint.from_url(f"http://127.0.0.1:{port}/prefix")

    yield start
    for srv in servers:
        srv.close()


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    return head + await reader.readexactly(length)


async def test_chunked_response_split_at_every_byte_and_keep_alive(serve) -> None:
    seen: list[bytes] = []
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            try:
                seen.append(await _read_request(reader))
            except asyncio.IncompleteReadError:
                return
            blob = HEAD_CHUNKED + chunked(TEXT, TEXT, USAGE, DONE)
            for i in range(len(blob)):  # one byte per write: every split point
                writer.write(blob[i:i + 1])
                await writer.drain()
                await asyncio.sleep(0)

    ep = await serve(handler)
    conn = SlotConnection(ep, connect_timeout_s=2.0)
    for _ in range(2):
        state = StreamState()
        resp = await conn.stream(ep.request("/v1/completions", b'{"x":1}'), state)
        assert resp.status == 200
        assert (state.text_events, state.completion_tokens, state.done) == (2, 2, True)
    conn.close()
    assert connections == 1  # the second request reused the connection
    assert seen[0].startswith(b"POST /prefix/v1/completions HTTP/1.1\r\n") and seen[0].endswith(b'{"x":1}')


async def test_error_status_with_length_body_then_close_delimited_body(serve) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 503 X\r\nContent-Length: 11\r\n\r\nbusy server")
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + SSE)
        await writer.drain()
        writer.close()

    ep = await serve(handler)
    conn = SlotConnection(ep, connect_timeout_s=2.0)
    resp = await conn.stream(ep.request("/v1/completions", b"{}"), StreamState())
    assert (resp.status, resp.body) == (503, b"busy server")
    state = StreamState()
    resp = await conn.stream(ep.request("/v1/completions", b"{}"), state)
    assert resp.status == 200 and state.done and state.text_events == 2
    conn.close()


async def test_stale_keep_alive_is_replaced_once_and_a_mid_stream_drop_is_reported(serve) -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await _read_request(reader)
        writer.write(HEAD_CHUNKED + chunked(TEXT, USAGE, DONE))
        await writer.drain()
        await _read_request(reader)
        if connections == 2:
            writer.write(HEAD_CHUNKED + chunked(TEXT)[:-20])  # one event, then dropped mid-stream
            await writer.drain()
        writer.close()  # the first connection: closed with the next request unanswered

    ep = await serve(handler)
    conn = SlotConnection(ep, connect_timeout_s=2.0)
    assert (await conn.stream(ep.request("/v1/completions", b"{}"), StreamState())).status == 200
    assert (await conn.stream(ep.request("/v1/completions", b"{}"), StreamState())).status == 200
    assert connections == 2
    state = StreamState()
    with pytest.raises(Dropped):
        await conn.stream(ep.request("/v1/completions", b"{}"), state)
    assert state.text_events == 1 and connections == 2  # no retry once bytes came back
    conn.close()


async def test_refused_connection_is_a_connect_failure() -> None:
    srv = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    srv.close()
    await srv.wait_closed()
    conn = SlotConnection(Endpoint.from_url(f"http://127.0.0.1:{port}"), connect_timeout_s=2.0)
    with pytest.raises(ConnectFailed):
        await conn.stream(b"GET / HTTP/1.1\r\n\r\n", StreamState())


async def test_get_reads_length_chunked_and_close_delimited_bodies_and_error_statuses(serve) -> None:
    """`get` (the /metrics and /v1/models reads of the benchmark child): one GET per connection, whatever framing
    the server chose, its status and whole body, the base URL's path kept."""
    metrics = b"# TYPE sglang:gen_throughput gauge\nsglang:gen_throughput 281.5\n" * 40
    answers = iter([
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(metrics) + metrics,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(metrics[:100], metrics[100:]),
        b"HTTP/1.0 200 OK\r\n\r\n" + metrics,  # close-delimited: the body ends with the connection
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found",
    ])
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        blob = next(answers)
        for i in range(0, len(blob), 7):  # split everywhere
            writer.write(blob[i:i + 7])
            await writer.drain()
        writer.close()

    ep = await serve(handler)
    url = f"http://127.0.0.1:{ep.port}/prefix/metrics"
    for _ in range(3):
        assert await get(url, timeout_s=5) == (200, metrics)
    assert await get(url, timeout_s=5) == (404, b"not found")
    assert len(seen) == 4 and all(h.startswith(b"GET /prefix/metrics HTTP/1.1\r\n") for h in seen), seen
    assert all(b"\r\nhost: 127.0.0.1:" in h.lower() and b"connection: close" in h.lower() for h in seen), seen


async def test_get_fails_on_a_refused_connection_a_silent_server_and_a_body_past_its_limit(serve) -> None:
    srv = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    srv.close()
    await srv.wait_closed()
    with pytest.raises(ConnectFailed):
        await get(f"http://127.0.0.1:{port}/metrics", timeout_s=2)

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(30)

    ep = await serve(silent)
    with pytest.raises(TimeoutError):
        await get(f"http://127.0.0.1:{ep.port}/metrics", timeout_s=0.3)

    async def huge(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100000)
        await writer.drain()

    ep = await serve(huge)
    with pytest.raises(Dropped, match="larger than 65536 bytes"):
        await get(f"http://127.0.0.1:{ep.port}/metrics", timeout_s=5, limit=65536)


def test_https_connections_share_one_tls_context_and_plain_http_has_none() -> None:
    """Building a TLS context parses the CA store (~20 ms of CPU): the slots of a C=64 run and every `get` share the
    process's one; a plain-http server's connections build none."""
    tls = Endpoint.from_url("https://gpu-1.example:8443/v1")
    a, b = SlotConnection(tls, connect_timeout_s=1), SlotConnection(tls, connect_timeout_s=1)
    assert a._ssl is not None and a._ssl is b._ssl and a._ssl.verify_mode == ssl.CERT_REQUIRED
    assert SlotConnection(Endpoint.from_url("http://127.0.0.1:1"), connect_timeout_s=1)._ssl is None
