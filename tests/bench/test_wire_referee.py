"""The wire referee (benchmarks/wire_referee.py) on a capture written here byte by byte, with known times: TCP
reassembly (a request in two segments, a retransmitted segment, keep-alive), chunked SSE with an event split
across packets (stamped by the packet that completes it), the prompt number, usage, and the per-request
figures; and, where tcpdump can capture, on a real benchmark's loopback traffic, where each request's TTFT as
pitcrew measured it must hold the wire's (its t0 is before the bytes leave, its read after the packet arrives)."""

from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path

import orjson
import pytest
from bench_kit import slack_ms

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from wire_referee import capture, level_figures, read_pcap, wire_requests  # noqa: E402

CLIENT, SERVER = 40000, 30000


def _frame(src: int, dst: int, seq: int, payload: bytes = b"", syn: bool = False) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", src, dst, seq, 0, 5 << 4, 0x02 if syn else 0x18, 65535, 0, 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, b"\x7f\0\0\1", b"\x7f\0\0\1") + tcp
    return b"\0" * 12 + b"\x08\x00" + ip  # Ethernet, as tcpdump -i lo writes


def _pcap(packets: list[tuple[float, bytes]]) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)  # nanosecond pcap, Ethernet
    for ts, frame in packets:
        sec = int(ts)
        out += struct.pack("<IIII", sec, round((ts - sec) * 1e9), len(frame), len(frame)) + frame
    return out


def _request(index: int) -> bytes:
    body = orjson.dumps({"messages": [{"role": "user", "content": f"Request {index} seed 0: river engine"}],
                         "stream": True})
    return b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def _chunk(event: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(event), event)


def _text(word: str) -> bytes:
    return b'data: {"choices":[{"delta":{"content":"%s"}}]}\n\n' % word.encode()


def test_a_hand_written_capture_reads_as_written() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    role = _chunk(b'data: {"choices":[{"delta":{"role":"assistant"}}]}\n\n')  # no text: not the first token
    usage = (_chunk(b'data: {"choices":[],"usage":{"completion_tokens":7},"timings":{"prompt_ms":41.5}}\n\n')
             + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    split = _chunk(_text("b") + _text("c"))
    r1, r2 = _request(1_000_004), _request(1_000_005)
    up, down = 1001, 5001  # initial sequence numbers
    pk: list[tuple[float, bytes]] = [
        (100.0, _frame(CLIENT, SERVER, up - 1, syn=True)),
        (100.0, _frame(SERVER, CLIENT, down - 1, syn=True)),
        (100.010, _frame(CLIENT, SERVER, up, r1[:30])),  # the request in two segments: sent = the first
        (100.011, _frame(CLIENT, SERVER, up + 30, r1[30:])),
        (100.020, _frame(SERVER, CLIENT, down, head + role)),
        (100.060, _frame(SERVER, CLIENT, down + len(head + role), _chunk(_text("a")))),  # first text: 50 ms
    ]
    off = down + len(head + role + _chunk(_text("a")))
    pk += [
        (100.070, _frame(SERVER, CLIENT, off, split[:20])),  # two events split across packets
        (100.075, _frame(SERVER, CLIENT, off, split[:20])),  # ... a retransmission of the same bytes
        (100.080, _frame(SERVER, CLIENT, off + 20, split[20:])),  # completes both: stamped 100.080
        (100.090, _frame(SERVER, CLIENT, off + len(split), usage)),
    ]
    off += len(split + usage)
    pk += [  # keep-alive: the next request on the same connection
        (100.200, _frame(CLIENT, SERVER, up + len(r1), r2)),
        (100.230, _frame(SERVER, CLIENT, off, head + _chunk(_text("z")) + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")),
    ]
    reqs = wire_requests(read_pcap(_pcap(pk)), SERVER)
    assert [r.index for r in reqs] == [1_000_004, 1_000_005]
    first, second = reqs
    assert first.status == 200 and first.text_events == 3 and first.completion_tokens == 7 and first.tokens == 7
    assert first.sent == pytest.approx(100.010) and first.ttft == pytest.approx(0.050)
    assert first.first_byte == pytest.approx(100.020) and first.timings == {"prompt_ms": 41.5}
    assert first.e2e == pytest.approx(0.070) and first.events == [pytest.approx(t) for t in (100.06, 100.08, 100.08)]
    assert first.tpot == pytest.approx(0.020 / 6)
    assert second.tokens == 1 and second.ttft == pytest.approx(0.030) and second.tpot is None  # no usage: events
    assert second.first_byte == pytest.approx(100.230) and second.timings is None
    figures = level_figures([first])
    assert figures["ttft_mean"] == pytest.approx(50.0) and figures["out_tok_s"] == pytest.approx(7 / 0.070)


def _can_capture() -> bool:
    import os

    return shutil.which("tcpdump") is not None and os.geteuid() == 0


@pytest.mark.skipif(not _can_capture(), reason="needs tcpdump and root (apt-get install -y tcpdump)")
async def test_a_real_capture_matches_the_servers_record(truth, tmp_path: Path) -> None:
    from services.bench.runner import BenchSpec, run_benchmark

    srv = await truth("--rate", "200", "--ttft", "0.03", "--tokens-per-chunk", "2")
    spec = BenchSpec(url=srv.url, concurrency=(4,), requests_per_level=8, warmup=4, output_len=20, input_len=8,
                     timeout_s=10.0)
    path = tmp_path / "c4.pcap"
    async with capture(srv.port, path, max_s=60.0, max_packets=100_000, max_bytes=16 * 1024 * 1024) as cap:
        res = await run_benchmark(spec)
    assert cap.dropped == 0 and not cap.truncated
    first = 1_000_000 + 4  # level 1's prompt numbers; its 4 warmups first
    every = wire_requests(read_pcap(path.read_bytes()), srv.port)
    reqs = [r for r in every if r.index is not None and r.index >= first]
    assert len(reqs) == 8  # 20 tokens: the first alone, then 19 in 2-token chunks
    assert all(r.status == 200 and r.tokens == 20 and r.text_events == 11 for r in reqs)
    lv = res.levels[0]
    ours = {r.index: r for r in lv.records}
    for r in reqs:  # the client stamps t0 before its bytes reach the wire and reads the first text after it
        assert r.ttft is not None and r.ttft >= 0.030 - 0.0005  # the server's TTFT: nothing is sent earlier
        assert -0.0002 <= ours[r.index].ttft - r.ttft <= slack_ms(lv) / 1000, (ours[r.index].ttft, r.ttft)
    wire = level_figures(reqs)
    assert lv.ttft_ms.mean is not None and 0 <= lv.ttft_ms.mean - wire["ttft_mean"] < slack_ms(lv)
