"""pitcrew's benchmark client side by side with peers, against the same known-truth server, in one run.

Peers: aiperf (NVIDIA, from PyPI, in its own venv: it is NOT a project dependency) when found,
a plain aiohttp loop (`ClientSession`, one line per event from `resp.content`, `json.loads` per event),
and a naive httpx loop (httpx default transport, `aiter_lines`, `json.loads` per event: what a
first attempt looks like). Every client runs as a child process; CPU is the children's CPU
(`getrusage(RUSAGE_CHILDREN)`), measured at two request counts so the start-up cost cancels:
marginal CPU seconds per 1000 output tokens = ΔCPU / Δtokens. Accuracy: TTFT against the
server's own record of each request's first chunk (same machine, same clock) and decode tok/s
per request against the configured rate.

    .venv/bin/python benchmarks/bench_peer.py [--concurrency 16] [--tpc 1] [--output-len 256]
        [--aiperf /tmp/peer-aiperf/bin/aiperf --tokenizer /tmp/toy-tokenizer]

aiperf setup used here: `python3 -m venv /tmp/peer-aiperf && /tmp/peer-aiperf/bin/pip install aiperf`;
offline it needs a local tokenizer directory (its `builtin` one downloads tiktoken data): any
`tokenizer.json` works since `--use-server-token-count` takes N from usage. The one used here, made
with the aiperf venv's python:

    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"[UNK]": 0, "[PAD]": 1, "<s>": 2, "</s>": 3, **{f"w{i}": i + 4 for i in range(2000)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", bos_token="<s>",
                            eos_token="</s>").save_pretrained("/tmp/toy-tokenizer")
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))  # the test doubles in tests/support
from support.truth_launch import TruthServer, truth_server

TTFT_S = 0.05
RATE = 100.0
ROOT = Path(__file__).resolve().parent.parent


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


async def run_child(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    before = children_cpu()
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT, env=env, cwd=ROOT)
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({proc.returncode}): {out.decode()[-2000:]}")
    return children_cpu() - before, out.decode()


# -- the naive client (run as a child: `bench_peer.py --naive URL C N OUT`) ------------------------


async def naive(url: str, c: int, n: int, out_len: int) -> None:
    import httpx

    ttfts: list[float] = []
    decs: list[float] = []
    tokens = 0
    left = n

    async def one(client: httpx.AsyncClient, i: int) -> None:
        nonlocal tokens
        body = {"model": "truth", "messages": [{"role": "user", "content": f"Request {i} hello"}],
                "max_tokens": out_len, "stream": True, "stream_options": {"include_usage": True},
                "ignore_eos": True, "temperature": 0}
        t0 = time.perf_counter()
        first = last = None
        usage = 0
        async with client.stream("POST", "/v1/chat/completions", json=body) as resp:
            async for line in resp.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                doc = json.loads(line[6:])
                if doc.get("usage"):
                    usage = doc["usage"]["completion_tokens"]
                for ch in doc.get("choices", []):
                    if ch.get("delta", {}).get("content"):
                        now = time.perf_counter()
                        first = first or now
                        last = now
        if first is not None and last is not None and usage > 1:
            ttfts.append(first - t0)
            decs.append((usage - 1) / (last - first))
            tokens += usage

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await one(client, left)

    async with httpx.AsyncClient(base_url=url, timeout=60, limits=httpx.Limits(max_connections=c)) as client:
        await asyncio.gather(*(worker(client) for _ in range(c)))
    print(json.dumps({"ttft_ms": statistics.mean(ttfts) * 1000, "dec": statistics.mean(decs), "tokens": tokens}))


async def plain_aiohttp(url: str, c: int, n: int, out_len: int) -> None:
    import aiohttp

    ttfts: list[float] = []
    decs: list[float] = []
    tokens = 0
    left = n

    async def one(session: aiohttp.ClientSession, i: int) -> None:
        nonlocal tokens
        body = {"model": "truth", "messages": [{"role": "user", "content": f"Request {i} hello"}],
                "max_tokens": out_len, "stream": True, "stream_options": {"include_usage": True},
                "ignore_eos": True, "temperature": 0}
        t0 = time.perf_counter()
        first = last = None
        usage = 0
        async with session.post(url + "/v1/chat/completions", json=body) as resp:
            async for raw in resp.content:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                doc = json.loads(line[6:])
                if doc.get("usage"):
                    usage = doc["usage"]["completion_tokens"]
                for ch in doc.get("choices", []):
                    if ch.get("delta", {}).get("content"):
                        now = time.perf_counter()
                        first = first or now
                        last = now
        if first is not None and last is not None and usage > 1:
            ttfts.append(first - t0)
            decs.append((usage - 1) / (last - first))
            tokens += usage

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await one(session, left)

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c),
                                     timeout=aiohttp.ClientTimeout(total=600)) as session:
        await asyncio.gather(*(worker(session) for _ in range(c)))
    print(json.dumps({"ttft_ms": statistics.mean(ttfts) * 1000, "dec": statistics.mean(decs), "tokens": tokens}))


# -- one client, two sizes ----------------------------------------------------------------------------


async def server_ttft(srv: TruthServer, first_tag: float = -1.0) -> float:
    """Mean server TTFT over the complete requests tagged `first_tag` or later (pitcrew: its measured ones)."""
    recs = (await srv.truth())["records"]
    return statistics.mean((r[1] - r[0]) * 1000 for r in recs if r[5] == 1.0 and r[6] >= first_tag)


async def measure(name: str, srv: TruthServer, c: int, out_len: int, small: int, big: int,
                  args: argparse.Namespace) -> dict[str, Any]:
    runs = []
    for n in (small, big):
        await srv.reset()
        if name == "pitcrew":
            argv = [str(Path(sys.executable).with_name("pitcrew")), "bench", "--url", srv.url, "--concurrency",
                    str(c), "--requests", str(n), "--warmup", str(c), "--output-len", str(out_len),
                    "--input-len", "64", "--json"]
            cpu, out = await run_child(argv)
            lv = json.loads(out)["levels"][0]
            fig = {"ttft_ms": lv["ttft_ms"]["mean"], "dec": lv["decode_tok_s_per_request"]["mean"],
                   "tokens": lv["output_tokens"] * (n + c) / n, "own_cpu": lv["client"]["cpu_s_per_1k_tokens"]}
        elif name in ("naive-httpx", "plain-aiohttp"):
            flag = "--naive" if name == "naive-httpx" else "--plain-aiohttp"
            cpu, out = await run_child([sys.executable, __file__, flag, srv.url, str(c), str(n + c),
                                        str(out_len)])
            fig = json.loads(out.strip().splitlines()[-1])
        else:
            outdir = tempfile.mkdtemp(prefix="aiperf-")
            argv = [args.aiperf, "profile", "--model", "truth", "--url", srv.url, "--endpoint-type", "chat",
                    "--streaming", "--tokenizer", args.tokenizer, "--concurrency", str(c), "--request-count",
                    str(n), "--warmup-request-count", str(c), "--prompt-input-tokens-mean", "64",
                    "--prompt-output-tokens-mean", str(out_len), "--extra-inputs", "ignore_eos:true",
                    "--use-server-token-count", "--ui", "none", "--output-artifact-dir", outdir,
                    "--no-server-metrics", "--no-gpu-telemetry"]
            cpu, _ = await run_child(argv, env={**os.environ, "NO_COLOR": "1"})
            doc = json.loads((Path(outdir) / "profile_export_aiperf.json").read_text())
            shutil.rmtree(outdir, ignore_errors=True)
            fig = {"ttft_ms": doc["time_to_first_token"]["avg"],
                   "dec": 1000.0 / doc["inter_token_latency"]["avg"],
                   "tokens": doc["total_osl"]["avg"] * (n + c) / n}
        fig["cpu"] = cpu
        fig["server_ttft_ms"] = await server_ttft(srv, 1_000_000 + c if name == "pitcrew" else -1.0)
        runs.append(fig)
    a, b = runs
    marginal = (b["cpu"] - a["cpu"]) / max(b["tokens"] - a["tokens"], 1) * 1000
    return {"name": name, **b, "marginal_cpu_per_1k": marginal}


def _exists(path: str) -> bool:
    return Path(path).exists()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--tpc", type=float, default=1.0)
    ap.add_argument("--output-len", type=int, default=256)
    ap.add_argument("--small", type=int, default=16)
    ap.add_argument("--big", type=int, default=96)
    ap.add_argument("--aiperf", default="/tmp/peer-aiperf/bin/aiperf")
    ap.add_argument("--tokenizer", default="/tmp/toy-tokenizer")
    ap.add_argument("--naive", nargs=4, metavar=("URL", "C", "N", "OUT"))
    ap.add_argument("--plain-aiohttp", nargs=4, metavar=("URL", "C", "N", "OUT"))
    a = ap.parse_args()
    if a.naive:
        await naive(a.naive[0], int(a.naive[1]), int(a.naive[2]), int(a.naive[3]))
        return
    if a.plain_aiohttp:
        u, cc, nn, oo = a.plain_aiohttp
        await plain_aiohttp(u, int(cc), int(nn), int(oo))
        return
    clients = ["pitcrew", "plain-aiohttp", "naive-httpx"]
    if _exists(a.aiperf) and _exists(a.tokenizer):
        clients.append("aiperf")
    else:
        print(f"aiperf not found at {a.aiperf} (or no tokenizer at {a.tokenizer}): skipped")
    c = a.concurrency
    print(f"truth: TTFT {TTFT_S * 1000:.0f} ms, {RATE:.0f} tok/s per stream, {a.tpc} tokens per chunk, "
          f"{a.output_len} tokens, C={c}; requests {a.small} and {a.big} (+{c} warmup)")
    async with truth_server("--ttft", str(TTFT_S), "--rate", str(RATE), "--tokens-per-chunk", str(a.tpc)) as srv:
        for name in clients:
            r = await measure(name, srv, c, a.output_len, a.small, a.big, a)
            own = f"  (own figure {r['own_cpu']:.3f})" if r.get("own_cpu") is not None else ""
            print(f"{name:>12}: TTFT {r['ttft_ms']:7.2f} ms (server wrote its first chunk at "
                  f"{r['server_ttft_ms']:.2f}: error {r['ttft_ms'] - r['server_ttft_ms']:+6.2f} ms)  "
                  f"decode/request {r['dec']:7.2f} tok/s ({(r['dec'] - RATE) / RATE * 100:+.2f}%)  "
                  f"CPU {r['marginal_cpu_per_1k']:.3f} s/1k tokens{own}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
