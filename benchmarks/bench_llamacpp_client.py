"""pitcrew's benchmark client checked against a server nobody here wrote: llama.cpp's `llama-server`.

Starts the real engine (`make engine`'s build, SmolLM2-135M Q4_1, `-t 1 -np SLOTS`, no speculation, so one token
per SSE event), runs `run_benchmark` at C = 1, 4 and the slot count through a byte-for-byte TCP relay that keeps
each stream's last event — the server's own `timings` for that request — keyed by the prompt's request number,
and prints per level: token counts (client `usage` vs the server's `predicted_n`), decode rate per request (the
client's (N-1)/(e2e - TTFT) vs the server's, `server_decode`), and TTFT (the client's vs the server's `prompt_ms`:
the difference is what the server cannot see — HTTP, the relay hop, the wait for a free slot, sampling the first
token).

    .venv/bin/python benchmarks/bench_llamacpp_client.py [--slots 2] [--levels 1,4,2] [--output-len 64]
        [--input-len 64] [--requests 8]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from services.bench.runner import BenchSpec, run_benchmark
from simhost.llamacpp.build import built

_REQ = re.compile(rb"Request (\d+) seed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Relay:
    """A TCP relay that forwards bytes unchanged and records, per request number, the last `timings` it saw."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.timings: dict[int, dict[str, Any]] = {}
        self.server: asyncio.AbstractServer | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._conn, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _conn(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        sr, sw = await asyncio.open_connection("127.0.0.1", self.upstream)
        current: list[int | None] = [None]

        async def up() -> None:
            while data := await cr.read(65536):
                m = _REQ.search(data)
                if m:
                    current[0] = int(m.group(1))
                sw.write(data)
                await sw.drain()
            sw.close()

        async def down() -> None:
            tail = b""
            while data := await sr.read(65536):
                cw.write(data)
                await cw.drain()
                tail = (tail + data)[-65536:]
                if b'"timings"' in data and current[0] is not None:
                    for line in tail.split(b"\n"):
                        if line.startswith(b"data: {") and b'"timings"' in line:
                            with contextlib.suppress(ValueError):
                                self.timings[current[0]] = json.loads(line[6:])["timings"]
            cw.close()

        with contextlib.suppress(OSError, ConnectionError):
            await asyncio.gather(up(), down())


def server_decode(t: dict[str, Any]) -> float | None:
    """The server's decode rate of one request, as the client measures it: tokens after the first over the time
    after the first. llama.cpp starts `predicted_ms` when it samples the first token (at the end of the prompt) and
    counts that token in `predicted_n`, so its own `predicted_per_second` (n / predicted_ms) is one token high."""
    n, ms = t.get("predicted_n"), t.get("predicted_ms")
    if not n or not ms or n < 2:
        return None
    return (n - 1) / (ms / 1000.0)


async def http_rtt_ms(port: int, n: int = 30) -> float:
    """The mean round trip of a small HTTP request through the relay (`GET /health`): what the server cannot see."""
    times = []
    async with httpx.AsyncClient(timeout=5) as client:
        for _ in range(n):
            t0 = time.perf_counter()
            await client.get(f"http://127.0.0.1:{port}/health")
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


async def main(args: argparse.Namespace) -> None:
    b = built()
    port = _free_port()
    log = Path(tempfile.mkdtemp(prefix="llama-bench-")) / "server.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            str(b.server), "-m", str(b.model), "--host", "127.0.0.1", "--port", str(port), "-t", "1",
            "-np", str(args.slots), "--ctx-size", str(1024 * args.slots), "--metrics", "--no-webui",
            stdout=out, stderr=out)
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            for _ in range(300):
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"http://127.0.0.1:{port}/health")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
        relay = Relay(port)
        await relay.start()
        print(f"llama-server {b.server} -t 1 -np {args.slots}; model {b.model.name}; "
              f"input {args.input_len} output {args.output_len} tokens, greedy", flush=True)
        print(f"HTTP round trip through the relay (GET /health, median): {await http_rtt_ms(relay.port):.2f} ms",
              flush=True)
        for n, c in enumerate(args.levels):
            # a seed per level: the server's prompt cache must not serve one level's prompts to the next
            spec = BenchSpec(url=f"http://127.0.0.1:{relay.port}", concurrency=(c,), warmup=c, seed=100 + n,
                             requests_per_level=max(args.requests, c), input_len=args.input_len,
                             output_len=args.output_len, timeout_s=300.0)
            res = await run_benchmark(spec)
            lv = res.levels[0]
            rows = []
            for r in lv.records:
                t = relay.timings.get(r.index)
                if t is None:
                    continue
                client_dec = (r.tokens - 1) / (r.e2e - r.ttft) if r.tokens > 1 and r.e2e > r.ttft else None
                rows.append((r, t, client_dec, server_decode(t)))
            exact = sum(1 for r, t, _, _ in rows if r.tokens == t.get("predicted_n"))
            dec_err = [(cd - sd) / sd * 100 for _, _, cd, sd in rows if cd and sd]
            ttft_gap = [r.ttft * 1000 - float(t.get("prompt_ms") or 0.0) for r, t, _, _ in rows]
            f = lambda xs, d=2: f"{statistics.mean(xs):+.{d}f}" if xs else "-"  # noqa: E731
            mx = lambda xs: f"{max(xs, key=abs):+.2f}" if xs else "-"  # noqa: E731
            srv_dec = [sd for *_, sd in rows if sd]
            cached = sum(int(t.get("cache_n") or 0) for _, t, _, _ in rows)
            print(f"C={c:<2} requests {len(rows)}/{lv.requests} | tokens exact {exact}/{len(rows)} "
                  f"(prompt tokens from cache {cached}) | "
                  f"decode tok/s/req client {statistics.mean([cd for *_, cd, _ in rows if cd]):.2f} "
                  f"server {statistics.mean(srv_dec):.2f} diff mean {f(dec_err)} % max {mx(dec_err)} % | "
                  f"TTFT client {lv.ttft_ms.mean:.1f} ms, server prompt_ms "
                  f"{statistics.mean(float(t.get('prompt_ms') or 0) for _, t, _, _ in rows):.1f} ms, "
                  f"gap mean {f(ttft_gap)} ms max {mx(ttft_gap)} ms", flush=True)
    finally:
        proc.terminate()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 10)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--levels", default="1,4,2", help="comma-separated concurrency levels (default 1,4,slots)")
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--requests", type=int, default=8)
    a = ap.parse_args()
    a.levels = [int(x) for x in a.levels.split(",")]
    sys.exit(asyncio.run(main(a)))
