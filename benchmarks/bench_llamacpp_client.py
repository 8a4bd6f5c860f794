"""pitcrew's benchmark client checked against a server nobody here wrote: llama.cpp's `llama-server`.

Starts the real engine (`make engine`'s build, SmolLM2-135M Q4_1, `-t 1 -np SLOTS`, no speculation, so one token
per SSE event), runs `run_benchmark` at C = 1, 4 and the slot count through a byte-for-byte TCP relay that keeps
each stream's last event — the server's own `timings` for that request — keyed by the prompt's request number,
and prints per level: token counts (client `usage` vs the server's `predicted_n`), decode rate per request (the
client's (N-1)/(e2e - TTFT) vs the server's, `server_decode`), and TTFT (the client's vs the server's `prompt_ms`:
the difference is what the server cannot see — HTTP, the relay hop, the wait for a free slot, and the server's own
work before the slot starts the prompt and after the first token is sampled).

With `--wire` there is no relay: the client talks to the server directly and the loopback traffic of the server's
port is captured (`tcpdump`, `benchmarks/wire_referee.py`); each measured request is scored three ways from the
capture: pitcrew's TTFT against the wire's (first request byte to the packet completing the first text event), the
wire's against the server's `prompt_ms` (read from the captured final event), and the response's first byte
against its first text (the server writes its response head when the slot starts the prompt, so the head splits
the time outside `prompt_ms` into before and after it). Needs tcpdump and the right to capture (root or CAP_NET_RAW).
With `--wire --log-verbosity 5` the server also traces, with microsecond stamps, its own steps before the slot
starts the prompt (the HTTP thread's chat template and tokenization, the main loop's slot choice and RAM prompt
cache update, the slot's launch); the script prints those intervals for the C=1 level beside the wire's split
(tracing costs the server time: score with the default verbosity, break down with 5). `--server-args` passes more
arguments to the server (`'--cache-ram 0'`: no RAM prompt cache).

    .venv/bin/python benchmarks/bench_llamacpp_client.py [--slots 2] [--levels 1,4,2] [--output-len 64]
        [--input-len 64] [--requests 8] [--wire [--keep-captures]] [--log-verbosity 5] [--server-args '--cache-ram 0']
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from services.bench.conn import run_client_loop
from services.bench.runner import BenchSpec, run_benchmark
from services.bench.stats import LevelResult
from simhost.llamacpp.build import built
from simhost.ports import claim_port, release_port

sys.path.append(str(Path(__file__).resolve().parent))
from wire_referee import WireRequest, capture, read_pcap, wire_requests  # noqa: E402

_REQ = re.compile(rb"Request (\d+) seed")


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
    counts that token in `predicted_n`; its own `predicted_per_second` is this same figure in this build
    (`n_gen_tps`: `n_gen_steps() = n_gen - 1` over `t_gen_ms()`, tools/server/server-common.h:430-449)."""
    n, ms = t.get("predicted_n"), t.get("predicted_ms")
    if not n or not ms or n < 2:
        return None
    return (n - 1) / (ms / 1000.0)


async def http_rtt_ms(port: int, n: int = 30) -> float:
    """The median round trip of a small HTTP request (`GET /health`): what the server cannot see."""
    times = []
    async with httpx.AsyncClient(timeout=5) as client:
        for _ in range(n):
            t0 = time.perf_counter()
            await client.get(f"http://127.0.0.1:{port}/health")
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _spec(port: int, args: argparse.Namespace, n: int, c: int) -> BenchSpec:
    # a seed per level: the server's prompt cache must not serve one level's prompts to the next
    return BenchSpec(url=f"http://127.0.0.1:{port}", concurrency=(c,), warmup=c, seed=100 + n,
                     requests_per_level=max(args.requests, c), input_len=args.input_len,
                     output_len=args.output_len, timeout_s=300.0)


def _mean(xs: list[float], d: int = 2) -> str:
    return f"{statistics.mean(xs):+.{d}f}" if xs else "-"


def _max(xs: list[float]) -> str:
    return f"{max(xs, key=abs):+.2f}" if xs else "-"


async def relay_levels(port: int, args: argparse.Namespace) -> None:
    """Every level through the relay: the server's `timings` per request, against the client's figures."""
    relay = Relay(port)
    await relay.start()
    print(f"HTTP round trip through the relay (GET /health, median): {await http_rtt_ms(relay.port):.2f} ms",
          flush=True)
    for n, c in enumerate(args.levels):
        lv = (await run_benchmark(_spec(relay.port, args, n, c))).levels[0]
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
        srv_dec = [sd for *_, sd in rows if sd]
        cached = sum(int(t.get("cache_n") or 0) for _, t, _, _ in rows)
        print(f"C={c:<2} requests {len(rows)}/{lv.requests} | tokens exact {exact}/{len(rows)} "
              f"(prompt tokens from cache {cached}) | "
              f"decode tok/s/req client {statistics.mean([cd for *_, cd, _ in rows if cd]):.2f} "
              f"server {statistics.mean(srv_dec):.2f} diff mean {_mean(dec_err)} % max {_max(dec_err)} % | "
              f"TTFT client {lv.ttft_ms.mean:.1f} ms, server prompt_ms "
              f"{statistics.mean(float(t.get('prompt_ms') or 0) for _, t, _, _ in rows):.1f} ms, "
              f"gap mean {_mean(ttft_gap)} ms max {_max(ttft_gap)} ms", flush=True)


def wire_row(c: int, lv: LevelResult, reqs: list[WireRequest]) -> str:
    """One level against the wire: pitcrew - wire, and the wire's TTFT split at the response's first byte.

    llama-server writes the response head (200, no event) when the slot starts the prompt (`send_partial_response`
    with `is_begin`, server-context.cpp:3404, just after `update_prompt_start`), so on the wire: request sent ->
    head = what happens before prompt_ms starts (HTTP read, chat template, tokenization, queue, slot launch, prompt
    cache), and head -> first text - prompt_ms = what happens after it ends (the first token's text, the result
    queue, the HTTP thread's JSON and write), plus the head's own write, which overlaps the prompt."""
    ours = {r.index: r for r in lv.records}
    pairs = [(ours[w.index], w) for w in reqs if w.index in ours and w.ttft is not None]
    timed = [(r, w, float(w.timings["prompt_ms"])) for r, w in pairs
             if w.timings is not None and "prompt_ms" in w.timings and w.first_byte is not None]
    client_wire = [(r.ttft - (w.ttft or 0.0)) * 1000 for r, w in pairs]
    outside = [(w.ttft or 0.0) * 1000 - pm for _, w, pm in timed]
    before = [((w.first_byte or 0.0) - w.sent) * 1000 for _, w, _ in timed]
    after = [((w.first_text or 0.0) - (w.first_byte or 0.0)) * 1000 - pm for _, w, pm in timed]
    exact = sum(1 for r, w, _ in timed if r.tokens == (w.timings or {}).get("predicted_n"))
    cached = sum(int((w.timings or {}).get("cache_n") or 0) for _, w, _ in timed)
    wire_ttft = [(w.ttft or 0.0) * 1000 for _, w in pairs]
    return (f"| {c} | {len(pairs)}/{lv.requests} | {exact}/{len(timed)} | {cached} | "
            f"{lv.ttft_ms.mean or 0:.2f} | {statistics.mean(wire_ttft):.2f} | "
            f"{statistics.mean(pm for *_, pm in timed):.2f} | "
            f"{_mean(client_wire)} (max {_max(client_wire)}) | {_mean(outside)} (max {_max(outside)}) | "
            f"{_mean(before)} | {_mean(after)} |")


async def wire_levels(port: int, args: argparse.Namespace, work: Path) -> tuple[list[WireRequest], set[int]]:
    """Every level straight to the server, captured on the wire and scored request by request; returns the C=1
    level's chat requests on the wire in order (warmups too) and its measured prompt numbers."""
    print(f"HTTP round trip (GET /health, median): {await http_rtt_ms(port):.2f} ms", flush=True)
    rows = []
    c1: tuple[list[WireRequest], set[int]] = ([], set())
    for n, c in enumerate(args.levels):
        pcap = work / f"c{c}.pcap"
        async with capture(port, pcap, max_s=600.0, max_packets=1_000_000, max_bytes=256 * 1024 * 1024) as cap:
            lv = (await run_benchmark(_spec(port, args, n, c))).levels[0]
        if cap.dropped or cap.truncated:
            rows.append(f"| {c} | capture incomplete (dropped {cap.dropped}, truncated {cap.truncated}) |")
            continue
        measured = {r.index for r in lv.records}
        every = wire_requests(read_pcap(pcap.read_bytes()), port)
        if not args.keep_captures:
            pcap.unlink()
        rows.append(wire_row(c, lv, [w for w in every if w.index in measured]))
        print(rows[-1], flush=True)
        if c == 1:
            # answered only: llama-server closes the connection after each streamed response, and a request the
            # client sent before the close arrived is dropped; the client sends it again on a new one (not timed)
            c1 = ([w for w in every if w.index is not None and w.status is not None], measured)
    return c1


_TS = re.compile(r"^(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) [IWEDT] ")
# one chat request's way through llama-server (the llama.cpp llama-cpp-python 0.3.36 vendors), as -lv 5 logs it
_TRACE = {
    "template": re.compile(r"common_chat_templates_apply_jinja: using"),  # HTTP thread: the chat template starts
    "post": re.compile(r"que +post: new task, id = (\d+)/"),  # HTTP thread: prompt tokenized, task queued
    "cache": re.compile(r"prompt cache update took ([\d.]+) ms"),  # main loop, get_available_slot
    "launch": re.compile(r"task (\d+) \| processing task"),  # launch_slot_with_task done
    "start": re.compile(r"task (\d+) \| new prompt,"),  # right after stats.update_prompt_start(): prompt_ms starts
    "eval": re.compile(r"task (\d+) \| prompt eval time = +([\d.]+) ms"),  # prompt_ms, at the request's end
}


def log_breakdown(text: str, chats: list[WireRequest], measured: set[int]) -> str:
    """Where each C=1 request's time outside `prompt_ms` goes: the wire splits it at the response head (written
    when the prompt starts), and the server's own -lv 5 trace (its clock, microseconds) splits the part before into
    the HTTP thread's and the main loop's work. Only intervals between two lines of one thread are taken from the
    trace (a line's stamp can be late when its thread was preempted after the work, on a busy machine). Requests
    are matched in order (the k-th task the HTTP threads queue is the k-th chat request on the wire): valid only
    when one request runs at a time (C=1)."""
    by_id: dict[int, dict[str, float]] = {}
    order: list[int] = []  # task ids in the order the HTTP threads queued them
    template = 0.0
    for line in text.splitlines():
        m = _TS.match(line)
        if m is None:
            continue
        t = int(m[1]) * 60 + int(m[2]) + int(m[3]) / 1e3 + int(m[4]) / 1e6
        for name, rx in _TRACE.items():
            hit = rx.search(line)
            if hit is None:
                continue
            if name == "template":
                template = t
            elif name == "post":
                order.append(int(hit[1]))
                by_id[int(hit[1])] = {"template": template, "post": t}
            elif name == "cache" and order:
                by_id[order[-1]]["cache_ms"] = float(hit[1])
            elif name == "eval" and int(hit[1]) in by_id:
                by_id[int(hit[1])]["prompt_ms"] = float(hit[2])
            elif name in ("launch", "start") and int(hit[1]) in by_id:
                by_id[int(hit[1])].setdefault(name, t)
            break
    tasks = [by_id[i] for i in order]
    rows = []
    for w, tk in zip(chats, tasks, strict=False):
        if w.index not in measured or w.ttft is None or w.first_byte is None or w.first_text is None:
            continue
        if not {"template", "post", "launch", "start", "prompt_ms"} <= tk.keys():
            continue
        ttft, head = w.ttft * 1000, (w.first_byte - w.sent) * 1000
        in_log = (tk["start"] - tk["template"]) * 1000
        rows.append({
            "wire TTFT": ttft, "prompt_ms": tk["prompt_ms"], "wire TTFT - prompt_ms": ttft - tk["prompt_ms"],
            "before prompt_ms: wire sent -> response head": head,
            "  HTTP thread: chat template -> task queued (template, its parser, tokens)":
                (tk["post"] - tk["template"]) * 1000,
            "  main loop: task queued -> slot launched": (tk["launch"] - tk["post"]) * 1000,
            "    of which the prompt cache update (save the slot's last prompt, look up)": tk.get("cache_ms", 0.0),
            "  main loop: slot launched -> prompt_ms starts": (tk["start"] - tk["launch"]) * 1000,
            "  the rest (read and JSON before the template, the head's wake-up and write)": head - in_log,
            "after prompt_ms: wire head -> first text - prompt_ms": (w.first_text - w.first_byte) * 1000
                - tk["prompt_ms"]})
    if not rows:
        return f"server trace: no complete request ({len(tasks)} traced, {len(chats)} on the wire)"
    out = [f"server trace (-lv 5) beside the wire, {len(rows)} measured C=1 requests, ms",
           "| interval | mean | min | max |", "|---|---|---|---|"]
    for key in rows[0]:
        xs = [r[key] for r in rows]
        out.append(f"| {key} | {statistics.mean(xs):.2f} | {min(xs):.2f} | {max(xs):.2f} |")
    return "\n".join(out)


async def main(args: argparse.Namespace) -> None:
    b = built()
    port = claim_port()
    work = Path(tempfile.mkdtemp(prefix="llama-bench-"))
    c1: tuple[list[WireRequest], set[int]] = ([], set())
    log = work / "server.log"
    extra = ["-lv", str(args.log_verbosity)] if args.log_verbosity is not None else []
    extra += shlex.split(args.server_args)
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            str(b.server), "-m", str(b.model), "--host", "127.0.0.1", "--port", str(port), "-t", "1",
            "-np", str(args.slots), "--ctx-size", str(1024 * args.slots), "--metrics", "--no-webui", *extra,
            stdout=out, stderr=out)
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            for _ in range(300):
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"http://127.0.0.1:{port}/health")).status_code == 200:
                        break
                await asyncio.sleep(0.1)
        print(f"llama-server {b.server} -t 1 -np {args.slots} {shlex.join(extra)}; "
              f"model {b.model.name}; input {args.input_len} output {args.output_len} tokens, greedy; "
              f"server log {log}", flush=True)
        if args.wire:
            print("| C | requests | tokens exact | prompt tokens from cache | TTFT pitcrew ms | TTFT wire ms | "
                  "prompt_ms | pitcrew - wire ms | wire - prompt_ms | of which before the prompt (sent -> head) | "
                  "after it (head -> first text - prompt_ms) |")
            print("|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
            c1 = await wire_levels(port, args, work)
        else:
            await relay_levels(port, args)
    finally:
        proc.terminate()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 10)
        release_port(port)
    if args.wire and args.log_verbosity is not None and args.log_verbosity >= 5:
        print(log_breakdown(log.read_text(errors="replace"), *c1), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--levels", default="1,4,2", help="comma-separated concurrency levels (default 1,4,slots)")
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--wire", action="store_true", help="no relay; score pitcrew and the server against a capture")
    ap.add_argument("--keep-captures", action="store_true", help="keep the .pcap files beside the server log")
    ap.add_argument("--server-args", default="", help="more llama-server arguments, e.g. '--cache-ram 0'")
    ap.add_argument("--log-verbosity", type=int, default=None,
                    help="the server's -lv (5: the per-request trace the breakdown reads)")
    a = ap.parse_args()
    a.levels = [int(x) for x in a.levels.split(",")]
    sys.exit(run_client_loop(main(a)))
