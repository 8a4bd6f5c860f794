"""A known-truth OpenAI-compatible streaming server, to measure benchmark clients against.

Run as its own process: `python -m support.truth_server --port 0 [--ttft 0.05 --rate 100
--tokens-per-chunk 5.5 --capacity 3000 --max-running 16 --usage on|last|off --eos-spread 0.5 ...]`; it prints
`{"port": N, "pid": P}` on one line once it listens on 127.0.0.1. It serves
`/v1/chat/completions` and `/v1/completions` (streaming), `/v1/models`, `/metrics`, `/truth`
(parameters, max observed concurrency, and per request `[arrival (the kernel's receive time of the
request's first bytes), first chunk written, last chunk
written, N, chunks, complete 1/0, prompt number or -1]` in `time.monotonic()` seconds), `POST /truth/reset` and
`POST /control` (change parameters and fault knobs at run time).

Cheap on CPU by construction: a bare asyncio HTTP/1.1 protocol, SSE frames encoded once, and one
timer for all decoding streams (processor sharing on a virtual token clock: every decoding stream
advances at min(rate, capacity / decoding streams) tokens/s).
Faults for tests: `error` (HTTP status), `drop` (close after k chunks), `hang` (never answer),
`die` (the process exits), applied to requests from index `--fault-from` every `--fault-every`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import heapq
import os
import re
import socket
import struct
import sys
import time
from collections import deque

import orjson

from support.truth_plan import (
    DONE_FRAME,
    ROLE_FRAME,
    STREAM_HEAD,
    Faults,
    TruthParams,
    answer_len,
    stream_plan,
    text_frame,
    usage_frame,
)

_TAG = re.compile(rb"Request (\d+) ")
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; Python does not name it


class Stream:
    __slots__ = ("admitted", "api", "arrival", "chunks", "closed", "conn", "drop_after", "first_write", "i",
                 "last_write", "n", "plan", "tag", "usage", "v0")

    def __init__(self, conn: Conn, api: str, n: int, usage: str, plan: list[tuple[float, int]],
                 drop_after: int | None) -> None:
        self.conn, self.api, self.n, self.usage, self.plan = conn, api, n, usage, plan
        self.arrival = time.monotonic()
        self.first_write = self.last_write = 0.0
        self.i = 0
        self.chunks = 0
        self.v0 = 0.0
        self.closed = False
        self.admitted = False
        self.drop_after = drop_after
        self.tag = -1.0


class Server:
    def __init__(self, params: TruthParams, faults: Faults) -> None:
        self.p = params
        self.faults = faults
        self.loop = asyncio.get_running_loop()
        self.queue: deque[Stream] = deque()
        self.running = 0  # admitted (in TTFT or decoding)
        self.in_server = 0  # admitted + queued
        self.max_seen = 0
        self.requests = 0
        self.gen_tokens = 0
        self.decode_chunks = 0
        self.decode_tokens = 0
        self.records: list[list[float]] = []
        # the virtual token clock
        self.v = 0.0
        self.t_last = self.loop.time()
        self.decoding = 0
        self.heap: list[tuple[float, int, Stream]] = []
        self.seq = 0
        self.timer: asyncio.TimerHandle | None = None

    # -- admission ---------------------------------------------------------------------------

    def submit(self, s: Stream) -> None:
        self.in_server += 1
        self.max_seen = max(self.max_seen, self.in_server)
        if self.p.max_running is not None and self.running >= self.p.max_running:
            self.queue.append(s)
        else:
            self._admit(s)

    def _admit(self, s: Stream) -> None:
        s.admitted = True
        self.running += 1
        if s.api == "chat" and self.p.role_chunk:
            s.conn.write(ROLE_FRAME)
        self.loop.call_later(self.p.ttft_s, self._first, s)

    def _first(self, s: Stream) -> None:
        if s.closed:
            return
        self._emit(s)
        if not s.closed:
            self._advance()
            self.decoding += 1
            s.v0 = self.v
            self._push(s)
            self._reschedule()

    def finish(self, s: Stream, decoding: bool) -> None:
        """The stream ended (completed or the client went away)."""
        if s.closed:
            return
        s.closed = True
        self.in_server -= 1
        if s.i > 0:
            complete = 1.0 if s.i == len(s.plan) else 0.0
            self.records.append([s.arrival, s.first_write, s.last_write, float(s.n), float(s.chunks),
                                 complete, s.tag])
        if decoding:
            self._advance()
            self.decoding -= 1
            self._reschedule()
        if not s.admitted:
            return  # left while queued; the queue skips closed streams
        self.running -= 1
        while self.queue and (self.p.max_running is None or self.running < self.p.max_running):
            nxt = self.queue.popleft()
            if not nxt.closed:
                self._admit(nxt)

    # -- decoding ----------------------------------------------------------------------------

    def _rate(self) -> float:
        if self.p.capacity is None or self.decoding == 0:
            return self.p.rate
        return min(self.p.rate, self.p.capacity / self.decoding)

    def _advance(self) -> None:
        now = self.loop.time()
        self.v += (now - self.t_last) * self._rate()
        self.t_last = now

    def _push(self, s: Stream) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (s.v0 + s.plan[s.i][0], self.seq, s))

    def _reschedule(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        while self.heap and self.heap[0][2].closed:
            heapq.heappop(self.heap)
        if self.heap:
            wait = max(self.heap[0][0] - self.v, 0.0) / self._rate()
            self.timer = self.loop.call_at(self.t_last + wait, self._fire)

    def _fire(self) -> None:
        self.timer = None
        self._advance()
        eps = 1e-6
        while self.heap and self.heap[0][0] <= self.v + eps:
            _, _, s = heapq.heappop(self.heap)
            if s.closed:
                continue
            self._emit(s)
            if not s.closed:
                self._push(s)
        self._reschedule()

    def _emit(self, s: Stream) -> None:
        """Write chunk `s.i`; the last one also writes usage and [DONE] and ends the stream."""
        size = s.plan[s.i][1]
        last = s.i == len(s.plan) - 1
        frame = text_frame(s.api, size, last, s.n if last and s.usage == "last" else None)
        if last and s.usage == "on":
            frame += usage_frame(s.api, s.n)
        if last:
            frame += DONE_FRAME
        # stamped before the write: a stamp taken after it could land after the client had read the chunk and sent
        # its next request (the process preempted between the two on a busy machine), so a request would seem
        # to end after the next one arrived (test_bench_window's "others", 4 of 11 cases at load 15)
        now = time.monotonic()
        s.conn.write(frame)
        if s.i == 0:
            s.first_write = now
        s.last_write = now
        s.i += 1
        s.chunks += 1
        self.gen_tokens += size
        if s.i > 1:
            self.decode_chunks += 1
            self.decode_tokens += size
        if last:
            self.finish(s, decoding=s.i > 1)
            s.conn.stream_done()
        elif s.drop_after is not None and s.chunks >= s.drop_after:
            s.conn.abort()

    # -- reports -----------------------------------------------------------------------------

    def metrics(self) -> bytes:
        p = self.p
        accepted = self.decode_tokens - self.decode_chunks
        lines = [
            f"truth_max_concurrency {self.max_seen}", f"truth_in_server {self.in_server}",
            f"truth_requests_total {self.requests}",
            f"sglang:generation_tokens_total {self.gen_tokens}",
            f"sglang:num_running_reqs {self.running}", f"sglang:num_queue_reqs {len(self.queue)}",
            f"sglang:gen_throughput {self.decoding * self._rate():.3f}",
            f"sglang:spec_accept_length {p.tokens_per_chunk}",
            f"vllm:generation_tokens_total {self.gen_tokens}",
            f"vllm:spec_decode_num_drafts_total {self.decode_chunks}",
            f"vllm:spec_decode_num_draft_tokens_total {self.decode_chunks * p.num_draft_tokens}",
            f"vllm:spec_decode_num_accepted_tokens_total {max(accepted, 0)}",
        ]
        return ("\n".join(lines) + "\n").encode()

    def truth(self) -> bytes:
        return orjson.dumps({"params": self.p.to_json(), "max_concurrency": self.max_seen,
                             "in_server": self.in_server, "requests": self.requests,
                             "records": self.records})


class Conn(asyncio.Protocol):
    def __init__(self, server: Server) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.stream: Stream | None = None
        self.busy = False
        self.arrived = 0.0
        self.rsock: socket.socket | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is None:
            return
        # Read through our own descriptor of the same connection with recvmsg, so that each read
        # carries the kernel's receive time: a request's arrival is when its bytes reached this
        # host, not when this process was next scheduled (under load that was 3-10 ms later, and
        # counted as the client's TTFT error). The transport keeps writing.
        rsock = socket.socket(fileno=os.dup(sock.fileno()))
        try:
            rsock.setblocking(False)
            rsock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        except OSError:
            rsock.close()
            return
        self.rsock = rsock
        transport.pause_reading()
        self.server.loop.add_reader(rsock.fileno(), self._readable)

    def _readable(self) -> None:
        assert self.rsock is not None
        try:
            data, anc, _, _ = self.rsock.recvmsg(65536, 64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data, anc = b"", []
        if not data:
            self._close_reader()
            if self.transport is not None:
                self.transport.close()
            return
        stamp = None
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= 16:
                sec, nsec = struct.unpack("qq", raw[:16])
                stamp = sec + nsec * 1e-9 - (time.time() - time.monotonic())
        self.data_received(data, stamp)

    def _close_reader(self) -> None:
        if self.rsock is not None:
            self.server.loop.remove_reader(self.rsock.fileno())
            self.rsock.close()
            self.rsock = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._close_reader()
        s = self.stream
        if s is not None and not s.closed:
            self.server.finish(s, decoding=s.i > 0)
        self.stream = None
        self.transport = None

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def stream_done(self) -> None:
        self.stream = None
        self.busy = False
        if self.buf:
            self._parse()

    def data_received(self, data: bytes, kernel_stamp: float | None = None) -> None:
        if not self.buf:  # the request's arrival: the kernel's receive time, else now (before parsing)
            self.arrived = min(kernel_stamp, time.monotonic()) if kernel_stamp else time.monotonic()
        self.buf += data
        if not self.busy:
            self._parse()

    def _parse(self) -> None:
        head_end = self.buf.find(b"\r\n\r\n")
        if head_end < 0:
            return
        head = self.buf[:head_end].decode("latin-1").split("\r\n")
        length = 0
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip() or 0)
        if len(self.buf) < head_end + 4 + length:
            return
        body = self.buf[head_end + 4:head_end + 4 + length]
        self.buf = self.buf[head_end + 4 + length:]
        parts = head[0].split(" ")
        method, path = (parts[0], parts[1].split("?")[0]) if len(parts) >= 2 else ("", "")
        self.busy = True
        self._handle(method, path, body)

    def _reply(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.write(b"HTTP/1.1 %d X\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n"
                   % (status, ctype.encode(), len(body)) + body)
        self.busy = False
        if self.buf:
            self._parse()

    def _handle(self, method: str, path: str, body: bytes) -> None:
        srv = self.server
        if path in ("/v1/chat/completions", "/v1/completions") and method == "POST":
            self._completion("chat" if path == "/v1/chat/completions" else "completions", body)
        elif path == "/v1/models":
            self._reply(200, b'{"object":"list","data":[{"id":"truth","object":"model"}]}')
        elif path == "/metrics":
            self._reply(200, srv.metrics(), "text/plain; version=0.0.4")
        elif path == "/truth":
            self._reply(200, srv.truth())
        elif path == "/truth/reset" and method == "POST":
            srv.max_seen, srv.records = srv.in_server, []
            self._reply(200, b"{}")
        elif path == "/control" and method == "POST":
            self._control(body)
        elif path == "/health":
            self._reply(200, b"{}")
        else:
            self._reply(404, b'{"error":{"message":"not found"}}')

    def _control(self, body: bytes) -> None:
        srv = self.server
        try:
            doc = orjson.loads(body or b"{}")
            pfields = {k: v for k, v in doc.items() if k in TruthParams.__dataclass_fields__}
            ffields = {k[6:]: v for k, v in doc.items() if k.startswith("fault_")}
            srv.p = dataclasses.replace(srv.p, **pfields)
            srv.faults = dataclasses.replace(srv.faults, **ffields)
        except (orjson.JSONDecodeError, TypeError, AttributeError) as exc:
            self._reply(400, orjson.dumps({"error": {"message": str(exc)}}))
            return
        self._reply(200, orjson.dumps({"params": srv.p.to_json(), "faults": dataclasses.asdict(srv.faults)}))

    def _completion(self, api: str, body: bytes) -> None:
        srv = self.server
        try:
            req = orjson.loads(body)
            n = int(req.get("max_completion_tokens") or req.get("max_tokens") or 16)
        except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError):
            self._reply(400, b'{"error":{"message":"bad request body"}}')
            return
        if not req.get("stream"):
            self._reply(400, b'{"error":{"message":"only stream=true is served"}}')
            return
        idx = srv.requests
        srv.requests += 1
        f = srv.faults
        if f.applies(idx):
            if f.kind == "die":
                os._exit(3)
            if f.kind == "hang":
                return
            if f.kind == "error":
                self._reply(f.status, b'{"error":{"message":"injected failure","code":%d}}' % f.status)
                return
        opts = req.get("stream_options") or {}
        usage = srv.p.usage
        if usage == "on" and not opts.get("include_usage"):
            usage = "off"
        drop = f.drop_after if f.kind == "drop" and f.applies(idx) else None
        tag = _TAG.search(body, 0, 600)
        number = int(tag.group(1)) if tag is not None else idx
        n = answer_len(n, number, srv.p.eos_spread)
        s = Stream(self, api, n, usage, stream_plan(n, srv.p), drop)
        s.arrival = self.arrived or s.arrival
        if tag is not None:
            s.tag = float(number)
        self.stream = s
        self.write(STREAM_HEAD)
        srv.submit(s)


async def serve(params: TruthParams, faults: Faults, port: int) -> None:
    server = Server(params, faults)
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(lambda: Conn(server), "127.0.0.1", port, backlog=1024)
    bound = srv.sockets[0].getsockname()[1]
    sys.stdout.write(orjson.dumps({"port": bound, "pid": os.getpid()}).decode() + "\n")
    sys.stdout.flush()
    async with srv:
        await srv.serve_forever()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="support.truth_server", description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--ttft", type=float, default=0.05)
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--tokens-per-chunk", type=float, default=1.0)
    ap.add_argument("--first-chunk", choices=("one", "pattern"), default="one")
    ap.add_argument("--capacity", type=float, default=None)
    ap.add_argument("--max-running", type=int, default=None)
    ap.add_argument("--eos-spread", type=float, default=0.0,
                    help="variable output lengths: EOS cuts up to this fraction off each answer")
    ap.add_argument("--usage", choices=("on", "last", "off"), default="on")
    ap.add_argument("--no-role-chunk", action="store_true")
    ap.add_argument("--fault", choices=("error", "drop", "hang", "die"), default=None)
    ap.add_argument("--fault-from", type=int, default=0)
    ap.add_argument("--fault-every", type=int, default=1)
    ap.add_argument("--fault-status", type=int, default=500)
    ap.add_argument("--drop-after", type=int, default=3)
    a = ap.parse_args(argv)
    params = TruthParams(ttft_s=a.ttft, rate=a.rate, tokens_per_chunk=a.tokens_per_chunk,
                         first_chunk=a.first_chunk, capacity=a.capacity, max_running=a.max_running,
                         usage=a.usage, role_chunk=not a.no_role_chunk,
                         eos_spread=a.eos_spread)
    faults = Faults(kind=a.fault, start=a.fault_from, every=a.fault_every, status=a.fault_status,
                    drop_after=a.drop_after)
    try:
        asyncio.run(serve(params, faults, a.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
