"""The benchmark's HTTP/1.1 connections: one keep-alive connection per closed-loop slot.

Owns `SlotConnection`, which sends one streaming request at a time on its own socket and reads
the response inside the event loop's data callback (`asyncio.Protocol.data_received`): each read
is stamped with `perf_counter()` the moment the loop hands it over and fed straight to the
request's `services.bench.sse.StreamState`, with no coroutine wake-up, no client library and no copy per
SSE event. A request is sent with one `transport.write` of pre-built bytes, stamped just before
it, so t0 is when the bytes leave and 64 requests starting at once cost the loop ~1 ms, not the
tens of ms a general client spends (which delayed the reading of other streams' chunks and
showed as TTFT and E2E error; see docs/PERFORMANCE.md). It speaks the subset of HTTP/1.1 that
OpenAI-compatible servers answer with: `Content-Length`, chunked or close-delimited bodies.
Also `run_client_loop`: the benchmark's processes run on uvloop, whose wake-up per socket read
costs about half of asyncio's own loop (at C=1 and one token per event that is most of the CPU);
and `get`, the benchmark's plain reads (the server's `/metrics` and `/v1/models`) on the same reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast
from urllib.parse import urlsplit

import uvloop

T = TypeVar("T")
MAX_ERROR_BODY = 64 * 1024
MAX_HEAD = 64 * 1024
MAX_GET_BODY = 16 * 1024 * 1024  # a `get`'s body (a large server's /metrics is ~100s of KB)


def run_client_loop(main: Coroutine[Any, Any, T]) -> T:
    """Run a benchmark process's main coroutine on a uvloop event loop."""
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


class Sink(Protocol):
    """What reads a 200 response's body as it arrives: `StreamState` (a stream's SSE events) or `get`'s whole body. An
    `error` it sets ends the response for the client."""

    error: str | None

    def feed(self, data: bytes, now: float) -> None: ...


class ConnectFailed(Exception):
    """The connection could not be opened (refused, unreachable, name not resolved)."""


class Dropped(Exception):
    """The connection ended before the response did."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the slots connect: host, port, TLS and the path prefix of the base URL."""

    host: str
    port: int
    tls: bool
    prefix: str

    @classmethod
    def from_url(cls, base_url: str) -> Endpoint:
        u = urlsplit(base_url)
        tls = u.scheme == "https"
        return cls(host=u.hostname or "localhost", port=u.port or (443 if tls else 80), tls=tls,
                   prefix=u.path.rstrip("/"))

    def _line_and_host(self, method: bytes, path: str) -> bytes:
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return b"%s %s HTTP/1.1\r\nHost: %s:%d\r\n" % (method, (self.prefix + path).encode(), host.encode(), self.port)

    def get(self, path: str) -> bytes:
        """A GET of `path` (after the base URL's path) on a connection that closes after it."""
        return self._line_and_host(b"GET", path) + b"Accept: */*\r\nConnection: close\r\n\r\n"

    def request(self, path: str, body: bytes) -> bytes:
        return (self._line_and_host(b"POST", path) + b"Content-Type: application/json\r\n"
                b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body)) + body


@dataclass(slots=True)
class Response:
    status: int
    t0: float  # perf_counter() just before the request bytes were written
    body: bytes  # non-200 responses only (the first MAX_ERROR_BODY bytes)


class _Proto(asyncio.Protocol):
    """Parses one response at a time; SSE bytes of a 200 response go to `state.feed`."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.waiter: asyncio.Future[Response] | None = None
        self.state: Sink | None = None
        self.t0 = 0.0
        self._head = b""
        self._in_body = False
        self._status = 0
        self._mode = ""  # "chunked" | "length" | "close"
        self._left = 0  # length mode: body bytes left; chunked: bytes of chunk data + CRLF left
        self._line = b""  # chunked: a partial size or trailer line
        self._trailer = False
        self._err = bytearray()
        self.keep_alive = True
        self.got_bytes = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not an asyncio.Transport subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._in_body and self._mode == "close":
            self._finish()
        elif self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(Dropped(str(exc) if exc else "connection closed"))

    def start(self, data: bytes, state: Sink) -> asyncio.Future[Response]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.state = state
        self._head, self._in_body, self._err, self._line, self._trailer = b"", False, bytearray(), b"", False
        self.got_bytes = False
        self.t0 = time.perf_counter()
        self.transport.write(data)
        return self.waiter

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        self.got_bytes = True
        if self.waiter is None or self.waiter.done():
            return  # bytes after a finished response: ignored (the slot closes such a connection)
        if not self._in_body:
            head = self._head + data
            end = head.find(b"\r\n\r\n")
            if end < 0:
                if len(head) > MAX_HEAD:
                    self._fail("response head too large")
                self._head = head
                return
            self._head = b""
            if not self._parse_head(head[:end]):
                return
            data = head[end + 4:]
            if self._mode == "length" and self._left == 0:
                self._finish()
                return
            if not data:
                return
        if self._mode == "chunked":
            self._chunked(data, now)
        elif self._mode == "length":
            take = data[:self._left]
            self._left -= len(take)
            self._body(take, now)
            if self._left == 0:
                self._finish()
        else:
            self._body(data, now)

    def _parse_head(self, head: bytes) -> bool:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        try:
            self._status = int(parts[1])
        except (IndexError, ValueError):
            self._fail("not an HTTP response")
            return False
        self._mode, self._left = "close", 0
        self.keep_alive = not lines[0].startswith(b"HTTP/1.0")
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"transfer-encoding" and b"chunked" in value.lower():
                self._mode = "chunked"
            elif name == b"content-length" and self._mode != "chunked":
                try:
                    self._mode, self._left = "length", int(value.strip())
                except ValueError:
                    self._fail("bad content-length")
                    return False
            elif name == b"connection" and b"close" in value.lower():
                self.keep_alive = False
        if self._mode == "close":
            self.keep_alive = False
        self._in_body = True
        return True

    def _chunked(self, data: bytes, now: float) -> None:
        pos, n = 0, len(data)
        out: list[bytes] = []
        while pos < n:
            if self._left > 0:
                take = min(self._left, n - pos)
                payload = min(take, self._left - 2)  # the last two bytes of each chunk are its CRLF
                if payload > 0:
                    out.append(data[pos:pos + payload])
                pos += take
                self._left -= take
                continue
            nl = data.find(b"\n", pos)
            if nl < 0:
                self._line += data[pos:]
                break
            line = (self._line + data[pos:nl]).rstrip(b"\r")
            self._line = b""
            pos = nl + 1
            if self._trailer:
                if not line:
                    if out:
                        self._body(b"".join(out), now)
                    self._finish()
                    return
                continue
            try:
                size = int(line.split(b";", 1)[0], 16)
            except ValueError:
                self._fail("bad chunk size")
                return
            if size == 0:
                self._trailer = True
            else:
                self._left = size + 2
        if out:
            self._body(out[0] if len(out) == 1 else b"".join(out), now)

    def _body(self, data: bytes, now: float) -> None:
        if self._status == 200:
            state = self.state
            assert state is not None
            state.feed(data, now)
            if state.error is not None:  # an error event: the response is over for the client
                self.keep_alive = False
                self._finish()
        elif len(self._err) < MAX_ERROR_BODY:
            self._err += data[:MAX_ERROR_BODY - len(self._err)]

    def _finish(self) -> None:
        self._in_body = False
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(Response(self._status, self.t0, bytes(self._err)))

    def _fail(self, why: str) -> None:
        self.keep_alive = False
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(Dropped(why))
        if self.transport is not None:
            self.transport.abort()


@functools.cache
def _tls() -> ssl.SSLContext:
    """The process's one TLS context for https servers (the system's CAs, certificates verified): building one parses
    the CA store, ~20 ms of CPU, which every slot and every `get` did before."""
    return ssl.create_default_context()


class _Body:
    """A 200 response's whole body, for `get` (what `StreamState` is for a stream): past `limit` bytes it is an
    error, which ends the response for the reader."""

    def __init__(self, limit: int) -> None:
        self.data = bytearray()
        self.limit = limit
        self.error: str | None = None

    def feed(self, data: bytes, now: float) -> None:
        self.data += data
        if len(self.data) > self.limit:
            self.error = f"a body larger than {self.limit} bytes"


async def get(url: str, *, timeout_s: float, limit: int = MAX_GET_BODY) -> tuple[int, bytes]:
    """GET `url` on a connection of its own: the status and the body (a non-200's first `MAX_ERROR_BODY` bytes).

    The benchmark child's reads of the server's `/metrics` and `/v1/models`: with these it imports no HTTP client
    library (httpx was ~70 ms of CPU of the child's ~200 ms start, in every benchmark). Raises `ConnectFailed`,
    `Dropped` (also for a body past `limit` bytes) or `TimeoutError` past `timeout_s`."""
    ep = Endpoint.from_url(url)
    body = _Body(limit)
    conn = SlotConnection(ep, connect_timeout_s=timeout_s)
    try:
        async with asyncio.timeout(timeout_s):
            resp = await conn.stream(ep.get(""), body)
    finally:
        conn.close()
    if body.error is not None:
        raise Dropped(body.error)
    return resp.status, bytes(body.data) if resp.status == 200 else resp.body


class SlotConnection:
    """One slot's keep-alive connection, opened on first use and again after it was closed."""

    def __init__(self, endpoint: Endpoint, *, connect_timeout_s: float) -> None:
        self._ep = endpoint
        self._connect_timeout = connect_timeout_s
        self._proto: _Proto | None = None
        self._ssl: ssl.SSLContext | None = _tls() if endpoint.tls else None

    async def _connect(self) -> _Proto:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, proto = await loop.create_connection(
                    _Proto, self._ep.host, self._ep.port, ssl=self._ssl,
                    server_hostname=self._ep.host if self._ssl is not None else None)
        except (OSError, TimeoutError) as exc:
            raise ConnectFailed(str(exc) or type(exc).__name__) from None
        return proto

    async def stream(self, request: bytes, state: Sink) -> Response:
        """Send `request` (from `Endpoint.request`) and read its response into `state`.

        A reused keep-alive connection that turns out to be closed before any byte came back is
        replaced once (the server may close idle connections). On cancellation or an error the
        connection is aborted, so the server sees the client go away.
        """
        for attempt in (0, 1):
            proto = self._proto
            reused = proto is not None and not proto.closed
            if not reused:
                proto = self._proto = await self._connect()
            assert proto is not None
            try:
                resp = await proto.start(request, state)
            except Dropped:
                self.close()
                if reused and attempt == 0 and not proto.got_bytes:
                    continue
                raise
            except BaseException:
                self.close()
                raise
            if not proto.keep_alive:
                self.close()
            return resp
        raise Dropped("connection closed")  # not reached

    def close(self) -> None:
        proto, self._proto = self._proto, None
        if proto is not None and proto.transport is not None:
            with contextlib.suppress(Exception):
                proto.transport.abort()
