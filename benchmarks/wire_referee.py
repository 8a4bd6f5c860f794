"""The wire referee: what the benchmark's requests looked like on the wire, from a `tcpdump` capture.

`capture(port, path)` runs `tcpdump` on the loopback interface with a capture filter on that port only, bounded in
time (`max_s`), packets (`max_packets`) and file size (`max_bytes`: the capture is stopped there and says so);
`--immediate-mode`, or libpcap holds packets in its ring until a block fills or times out and a capture stopped
right after a short run holds none of them.
`read_pcap` + `wire_requests` rebuild each TCP connection's two byte streams (sequence numbers, retransmitted bytes
dropped), split the client's stream into HTTP/1.1 requests and the server's into responses (chunked or
`Content-Length`), and stamp every SSE event with the capture time of the packet that completed it, the rule the
client follows for its reads. Per request: the time its first byte was on the wire, its first and last text-carrying
events, the text events and the usage's `completion_tokens`, the time the response's first byte was on the wire (its
status line: a server that answers only once it has the first token writes it with that token), the last `timings`
object an event carried (llama.cpp's per-request figures: `prompt_ms`, `predicted_n`, ...), and the prompt number of
a synthetic prompt (`Request N seed S:`), which tells warmups from measured requests. `score` recomputes pitcrew's
per-level figures from those and prints both.

Capture times are the kernel's (CLOCK_REALTIME, nanoseconds with `--time-stamp-precision nano`) and the client's
are `perf_counter()`: only durations are compared, never instants.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import re
import shutil
import signal
import statistics
import struct
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

_TEXT = re.compile(rb'(?:content|"text)"\s*:\s*"[^"]')  # as services.bench.sse: a non-empty text string
_PROMPT = re.compile(rb"Request (\d+) seed -?\d+:")


@dataclass
class CaptureInfo:
    path: Path
    packets: int | None = None  # as tcpdump reports on exit
    dropped: int | None = None  # dropped by the kernel: any drop makes the referee's figures incomplete
    truncated: bool = False  # stopped at max_bytes or max_packets


@contextlib.asynccontextmanager
async def capture(port: int, path: Path, *, max_s: float = 600.0, max_packets: int = 2_000_000,
                  max_bytes: int = 512 * 1024 * 1024, interface: str = "lo",
                  buffer_kib: int = 262_144) -> AsyncIterator[CaptureInfo]:
    """Capture loopback TCP traffic of `port` into `path` while the body runs (tcpdump must be installed).

    The kernel drops packets when tcpdump falls behind (a busy machine): `dropped` says how many, and a capture
    with drops or `truncated` must not be scored. The ring buffer is 256 MiB by default for that reason."""
    exe = shutil.which("tcpdump")
    if exe is None:
        raise RuntimeError("tcpdump is not installed (Debian: apt-get install -y tcpdump)")
    proc = await asyncio.create_subprocess_exec(
        "timeout", "-s", "INT", str(max_s), exe, "-i", interface, "-n", "-U", "--immediate-mode", "-B", str(buffer_kib),
        "--time-stamp-precision", "nano", "-c", str(max_packets), "-w", str(path), f"tcp port {port}",
        stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    line = await asyncio.wait_for(proc.stderr.readline(), 10)
    if b"listening on" not in line:
        proc.kill()
        raise RuntimeError(f"tcpdump did not start: {line.decode(errors='replace').strip()}")
    info = CaptureInfo(path)

    async def watch_size() -> None:
        while proc.returncode is None:
            await asyncio.sleep(0.2)
            if path.exists() and path.stat().st_size > max_bytes:
                info.truncated = True
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGINT)
                return

    watcher = asyncio.create_task(watch_size())
    try:
        yield info
    finally:
        await asyncio.sleep(0.3)  # the last packets reach the file (--immediate-mode, -U: one write per packet)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
        rest = (await asyncio.wait_for(proc.stderr.read(), 10)).decode(errors="replace")
        await proc.wait()
        watcher.cancel()
        if m := re.search(r"(\d+) packets captured", rest):
            info.packets = int(m.group(1))
            info.truncated = info.truncated or info.packets >= max_packets
        if m := re.search(r"(\d+) packets dropped by kernel", rest):
            info.dropped = int(m.group(1))


# -- pcap -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Segment:
    ts: float  # capture time, seconds
    src: int  # source port
    dst: int
    seq: int
    syn: bool
    payload: bytes


def read_pcap(data: bytes) -> list[Segment]:
    """TCP segments (IPv4 and IPv6) of a classic pcap file: Ethernet, Linux cooked v1/v2 or raw IP links."""
    magic = data[:4]
    endian = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",
              b"\xa1\xb2\x3c\x4d": ">"}.get(magic)
    if endian is None:
        raise ValueError("not a pcap file (pcapng is not read: write with tcpdump -w)")
    frac = 1e-9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
    link = struct.unpack(endian + "I", data[20:24])[0] & 0xFFFF
    rec = struct.Struct(endian + "IIII")
    out: list[Segment] = []
    pos = 24
    while pos + 16 <= len(data):
        sec, sub, incl, _ = rec.unpack_from(data, pos)
        frame = data[pos + 16:pos + 16 + incl]
        pos += 16 + incl
        if link == 1:  # Ethernet
            proto, ip = struct.unpack(">H", frame[12:14])[0], frame[14:]
        elif link == 113:  # Linux cooked capture v1
            proto, ip = struct.unpack(">H", frame[14:16])[0], frame[16:]
        elif link == 276:  # Linux cooked capture v2
            proto, ip = struct.unpack(">H", frame[0:2])[0], frame[20:]
        elif link in (101, 12):  # raw IP
            proto, ip = (0x0800 if frame[:1] and frame[0] >> 4 == 4 else 0x86DD), frame
        else:
            raise ValueError(f"link type {link} is not read")
        if proto == 0x0800:
            ihl = (ip[0] & 0x0F) * 4
            if ip[9] != 6:
                continue
            tcp = ip[ihl:struct.unpack(">H", ip[2:4])[0]]
        elif proto == 0x86DD:
            if ip[6] != 6:
                continue
            tcp = ip[40:40 + struct.unpack(">H", ip[4:6])[0]]
        else:
            continue
        src, dst, seq = struct.unpack(">HHI", tcp[:8])
        doff = (tcp[12] >> 4) * 4
        out.append(Segment(ts=sec + sub * frac, src=src, dst=dst, seq=seq, syn=bool(tcp[13] & 0x02),
                           payload=bytes(tcp[doff:])))
    return out


class _Stream:
    """One direction of a connection: the bytes in order and, for any offset, when it was on the wire."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.ends: list[int] = []  # offset after each piece
        self.times: list[float] = []
        self._next: int | None = None
        self._pending: dict[int, tuple[float, bytes]] = {}

    def add(self, seg: Segment) -> None:
        if seg.syn:
            self._next = (seg.seq + 1) & 0xFFFFFFFF
            return
        if not seg.payload:
            return
        if self._next is None:
            self._next = seg.seq
        self._pending[seg.seq] = (seg.ts, seg.payload)
        self._drain()

    def _drain(self) -> None:
        assert self._next is not None
        progressed = True
        while progressed:
            progressed = False
            for seq in list(self._pending):
                ts, payload = self._pending[seq]
                skip = (self._next - seq) & 0xFFFFFFFF
                if skip >= 0x80000000:  # starts after the next byte we need: a gap, wait
                    continue
                del self._pending[seq]
                if skip < len(payload):  # bytes already held (a retransmission) are dropped
                    self.data += payload[skip:]
                    self.ends.append(len(self.data))
                    self.times.append(ts)
                    self._next = (self._next + len(payload) - skip) & 0xFFFFFFFF
                    progressed = True

    def time_of(self, offset: int) -> float:
        """When the byte at `offset` was on the wire."""
        return self.times[bisect.bisect_right(self.ends, offset)]


@dataclass
class WireRequest:
    conn: tuple[int, int]  # (client port, server port)
    index: int | None  # the synthetic prompt's number
    sent: float  # first byte of the request on the wire
    status: int | None = None
    first_text: float | None = None
    last_text: float | None = None
    text_events: int = 0
    completion_tokens: int | None = None
    first_byte: float | None = None  # the response's first byte (its status line) on the wire
    timings: dict[str, Any] | None = None  # the last `timings` object of the response's events (llama.cpp)
    events: list[float] = field(default_factory=list, repr=False)

    @property
    def tokens(self) -> int:
        return self.completion_tokens if self.completion_tokens is not None else self.text_events

    @property
    def ttft(self) -> float | None:
        return None if self.first_text is None else self.first_text - self.sent

    @property
    def e2e(self) -> float | None:
        return None if self.last_text is None else self.last_text - self.sent

    @property
    def tpot(self) -> float | None:
        if self.ttft is None or self.e2e is None or self.tokens <= 1 or self.e2e <= self.ttft:
            return None
        return (self.e2e - self.ttft) / (self.tokens - 1)


def _requests(stream: _Stream) -> Iterable[tuple[int, bytes]]:
    """(offset of the first byte, body) of each HTTP request in a client stream."""
    data, pos = stream.data, 0
    while True:
        head_end = data.find(b"\r\n\r\n", pos)
        if head_end < 0:
            return
        head = bytes(data[pos:head_end]).lower()
        m = re.search(rb"\ncontent-length:\s*(\d+)", head)
        length = int(m.group(1)) if m else 0
        body_at = head_end + 4
        yield pos, bytes(data[body_at:body_at + length])
        pos = body_at + length


def _responses(stream: _Stream) -> Iterable[tuple[int, int | None, list[tuple[int, bytes]]]]:
    """(offset of its first byte, status, [(wire offset of its last byte, SSE event)]) of each HTTP response in a
    server stream."""
    data, pos = stream.data, 0
    while pos < len(data):
        head_end = data.find(b"\r\n\r\n", pos)
        if head_end < 0:
            return
        head = bytes(data[pos:head_end])
        status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else None
        low = head.lower()
        at = head_end + 4
        body = bytearray()
        body_starts: list[int] = []  # each piece of the body: where it starts in the body and on the wire
        wire_starts: list[int] = []
        if b"transfer-encoding: chunked" in low:
            while True:
                line_end = data.find(b"\r\n", at)
                if line_end < 0:
                    at = len(data)
                    break
                try:
                    size = int(bytes(data[at:line_end]).split(b";")[0].strip() or b"0", 16)
                except ValueError:  # not a chunk: the response was cut short (no last chunk)
                    break
                start = line_end + 2
                if size == 0:
                    trailer_end = data.find(b"\r\n\r\n", line_end)
                    at = len(data) if trailer_end < 0 else trailer_end + 4
                    break
                body_starts.append(len(body))
                wire_starts.append(start)
                body += data[start:start + size]
                at = start + size + 2
        else:
            m = re.search(rb"\ncontent-length:\s*(\d+)", low)
            end = at + int(m.group(1)) if m else len(data)
            body_starts.append(0)
            wire_starts.append(at)
            body += data[at:end]
            at = end

        sep = b"\r\n\r\n" if b"\r\n\r\n" in body else b"\n\n"
        events: list[tuple[int, bytes]] = []
        start = 0
        while (end := body.find(sep, start)) >= 0:
            last = end + len(sep) - 1  # the event's last byte, in the body and then on the wire
            k = bisect.bisect_right(body_starts, last) - 1
            events.append((wire_starts[k] + last - body_starts[k], bytes(body[start:end])))
            start = end + len(sep)
        yield pos, status, events
        pos = at


def wire_requests(segments: list[Segment], server_port: int) -> list[WireRequest]:
    """Every request to `server_port` in the capture, with its response's wire times."""
    streams: dict[tuple[int, int], _Stream] = {}
    for seg in segments:
        streams.setdefault((seg.src, seg.dst), _Stream()).add(seg)
    out: list[WireRequest] = []
    for (src, dst), up in streams.items():
        if dst != server_port:
            continue
        down = streams.get((dst, src), _Stream())
        reqs = list(_requests(up))
        resps = list(_responses(down))
        for i, (offset, body) in enumerate(reqs):
            m = _PROMPT.search(body)
            wr = WireRequest(conn=(src, dst), index=int(m.group(1)) if m else None, sent=up.time_of(offset))
            if i < len(resps):
                start, wr.status, events = resps[i]
                wr.first_byte = down.time_of(start)
                for end, event in events:
                    lines = event.replace(b"\r", b"").split(b"\n")
                    payload = b"\n".join(ln[5:] for ln in lines if ln.startswith(b"data:")).strip()
                    if payload[:1] != b"{":
                        continue
                    ts = down.time_of(end)
                    if _TEXT.search(payload):
                        wr.first_text = wr.first_text if wr.first_text is not None else ts
                        wr.last_text = ts
                        wr.text_events += 1
                        wr.events.append(ts)
                    if b'"timings"' in payload:
                        with contextlib.suppress(orjson.JSONDecodeError, AttributeError):
                            timings = orjson.loads(payload).get("timings")
                            if isinstance(timings, dict):
                                wr.timings = timings
                    if b'"usage"' in payload:
                        with contextlib.suppress(orjson.JSONDecodeError, AttributeError):
                            usage = orjson.loads(payload).get("usage")
                            if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                                wr.completion_tokens = usage["completion_tokens"]
            out.append(wr)
    out.sort(key=lambda r: r.sent)
    return out


# -- scoring ----------------------------------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    v = sorted(values)
    pos = (len(v) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def level_figures(reqs: list[WireRequest]) -> dict[str, float]:
    """pitcrew's per-level definitions (services.bench.stats) recomputed from the wire."""
    done = [r for r in reqs if r.ttft is not None and r.e2e is not None]
    ttft = [r.ttft * 1000 for r in done if r.ttft is not None]
    tpots = [t for t in (r.tpot for r in done) if t is not None]
    window = max(r.sent + (r.e2e or 0.0) for r in done) - min(r.sent for r in done)
    return {"requests": len(done), "ttft_mean": statistics.mean(ttft), "ttft_p50": _pct(ttft, 50),
            "ttft_p99": _pct(ttft, 99), "tpot_p50": _pct([t * 1000 for t in tpots], 50),
            "dec_p50": _pct([1 / t for t in tpots], 50),
            "out_tok_s": sum(r.tokens for r in done) / window}


def pitcrew_figures(level: dict[str, Any]) -> dict[str, float]:
    """The same figures from a level of pitcrew's JSON document."""
    return {"requests": level["requests"], "ttft_mean": level["ttft_ms"]["mean"], "ttft_p50": level["ttft_ms"]["p50"],
            "ttft_p99": level["ttft_ms"]["p99"], "tpot_p50": level["tpot_ms"]["p50"],
            "dec_p50": level["decode_tok_s_per_request"]["p50"], "out_tok_s": level["output_tok_s"]}
