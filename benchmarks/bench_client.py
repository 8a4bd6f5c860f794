"""pitcrew's benchmark client as the bot runs it, against the known-truth server: accuracy and cost.

For 1 and 5.5 tokens per SSE chunk and C = 1, 16, 64, runs the benchmark the way the experiment
pipeline does (`services.bench.process.run_benchmark_isolated`: a child process, SGLang metrics
probe on) against a `support.truth_server` process (tests/support), and compares with the server's own record of
the same measured requests (same monotonic clock):

- output tok/s error: the client's figure vs the server's tokens / (last chunk written - first
  arrival) of the measured requests (the window holds nothing else; tests/bench/test_bench_window.py);
- TTFT error: client mean TTFT - server mean (first chunk written - arrival), same requests;
- CPU s per 1000 output tokens: the child's own figure (process CPU over the measurement window,
  what `pitcrew bench` shows) and the marginal cost from the children's rusage at two request counts
  (start-up and imports cancel).

With `--wire` the larger run of each case is also captured on the loopback interface (`tcpdump`, a capture
filter on the truth server's port only, bounded in time, packets and bytes: `benchmarks/wire_referee.py`), and
the same per-level figures are recomputed from the wire per measured request (first request byte on the wire to
the packets that completed its first and last text events) and printed next to pitcrew's: the wire referee.
Needs tcpdump (Debian: `apt-get install -y tcpdump`) and the right to capture (root or CAP_NET_RAW).

    .venv/bin/python benchmarks/bench_client.py [--levels 1,16,64] [--tpc 1,5.5] [--output-len 256]
        [--repeat 1] [--wire]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from services.bench import BenchSpec, run_benchmark_isolated

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))  # the test doubles in tests/support
from support.truth_launch import TruthServer, truth_server  # noqa: E402
from wire_referee import capture, level_figures, pitcrew_figures, read_pcap, wire_requests  # noqa: E402

TTFT_S = 0.05
RATE = 100.0
FIRST_INDEX = 1_000_000  # the first level's request numbers start here (services.bench.runner)
GOALS = {"tok_s_pct": 0.5, "ttft_ms": 2.0, "cpu_c1": 0.13}
WIRE_GOALS = {"ttft_ms": 2.0, "tpot_pct": 1.0, "tok_s_pct": 0.5}  # pitcrew vs the wire
WIRE_ROWS: list[str] = []


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


async def one_run(srv: TruthServer, c: int, n: int, output_len: int, wire: Path | None = None) -> dict[str, Any]:
    await srv.reset()
    spec = BenchSpec(url=srv.url, concurrency=(c,), requests_per_level=n, warmup=c, output_len=output_len,
                     input_len=64, timeout_s=120.0)
    first = FIRST_INDEX + c  # the C warmups (one per slot) come first, then the n measured requests
    before = children_cpu()
    if wire is None:
        res = await run_benchmark_isolated(spec, probe="sglang")
        cpu = children_cpu() - before
    else:
        async with capture(srv.port, wire, max_s=300.0, max_packets=2_000_000, max_bytes=256 * 1024 * 1024) as cap:
            res = await run_benchmark_isolated(spec, probe="sglang")
            cpu = children_cpu() - before  # the benchmark child, ended; tcpdump is not (its CPU is not counted)
    lv = res.levels[0]
    recs = [r for r in (await srv.truth())["records"] if first <= r[6] < first + n]
    assert len(recs) == n and all(r[5] == 1.0 for r in recs), "server record does not match the run"
    window = max(r[2] for r in recs) - min(r[0] for r in recs)
    return {"cpu": cpu, "tokens": lv["output_tokens"], "tok_s": lv["output_tok_s"],
            "srv_tok_s": sum(r[3] for r in recs) / window, "ttft": lv["ttft_ms"]["mean"],
            "srv_ttft": statistics.mean((r[1] - r[0]) * 1000 for r in recs),
            "own_cpu": lv["client"]["cpu_s_per_1k_tokens"], "lag": lv["client"]["loop_lag_ms_p99"],
            "warnings": lv["warnings"], "doc": lv,
            "wire": None if wire is None else referee(wire, srv.port, first, n, cap)}


def referee(path: Path, port: int, first: int, n: int, cap: Any) -> dict[str, Any]:
    """The measured requests' figures from the capture; an incomplete capture is not scored."""
    if cap.truncated or cap.dropped:
        path.unlink()
        seen = (cap.packets or 0) + (cap.dropped or 0)
        return {"incomplete": f"capture incomplete: {cap.dropped or 0:,} of {seen:,} packets dropped by the kernel"
                              f"{', truncated' if cap.truncated else ''}; not scored"}
    reqs = [r for r in wire_requests(read_pcap(path.read_bytes()), port)
            if r.index is not None and first <= r.index < first + n]
    assert len(reqs) == n and all(r.status == 200 for r in reqs), f"{len(reqs)} of {n} measured requests on the wire"
    figures = level_figures(reqs)
    figures["packets"] = float(cap.packets or 0)
    path.unlink()
    return figures


def wire_row(tpc: float, c: int, run: dict[str, Any]) -> bool:
    ours, wire = pitcrew_figures(run["doc"]), run["wire"]
    if "incomplete" in wire:
        WIRE_ROWS.append(f"| {tpc:g} | {c} | {run['doc']['requests']} | {wire['incomplete']} | | | | | | MISSED |")
        return False
    err = {k: ours[k] - wire[k] for k in ("ttft_mean", "ttft_p99")}
    rel = {k: (ours[k] - wire[k]) / wire[k] * 100 for k in ("tpot_p50", "dec_p50", "out_tok_s")}
    ok = (abs(err["ttft_mean"]) <= WIRE_GOALS["ttft_ms"] and abs(err["ttft_p99"]) <= WIRE_GOALS["ttft_ms"]
          and abs(rel["tpot_p50"]) <= WIRE_GOALS["tpot_pct"] and abs(rel["dec_p50"]) <= WIRE_GOALS["tpot_pct"]
          and abs(rel["out_tok_s"]) <= WIRE_GOALS["tok_s_pct"])
    WIRE_ROWS.append(
        f"| {tpc:g} | {c} | {int(wire['requests'])} | {int(wire['packets']):,} | "
        f"{ours['ttft_mean']:.2f} / {wire['ttft_mean']:.2f} ({err['ttft_mean']:+.2f}) | "
        f"{ours['ttft_p99']:.2f} / {wire['ttft_p99']:.2f} ({err['ttft_p99']:+.2f}) | "
        f"{ours['tpot_p50']:.3f} / {wire['tpot_p50']:.3f} ({rel['tpot_p50']:+.2f} %) | "
        f"{ours['dec_p50']:.2f} / {wire['dec_p50']:.2f} ({rel['dec_p50']:+.2f} %) | "
        f"{ours['out_tok_s']:,.1f} / {wire['out_tok_s']:,.1f} ({rel['out_tok_s']:+.3f} %) | "
        f"{'ok' if ok else 'MISSED'} |")
    return ok


async def case(srv: TruthServer, tpc: float, c: int, output_len: int, wire_dir: Path | None) -> dict[str, Any]:
    small, big = (2, 8) if c == 1 else (c, 3 * c)
    a = await one_run(srv, c, small, output_len)
    b = await one_run(srv, c, big, output_len, wire_dir / f"c{c}.pcap" if wire_dir else None)
    marginal = (b["cpu"] - a["cpu"]) / max(b["tokens"] - a["tokens"], 1) * 1000
    err = (b["tok_s"] - b["srv_tok_s"]) / b["srv_tok_s"] * 100
    ttft_err = b["ttft"] - b["srv_ttft"]
    ok = abs(err) <= GOALS["tok_s_pct"] and abs(ttft_err) <= GOALS["ttft_ms"] and (
        c != 1 or (b["own_cpu"] <= GOALS["cpu_c1"] and marginal <= GOALS["cpu_c1"]))
    print(f"| {tpc:g} | {c} | {big} | {b['tok_s']:,.1f} | {b['srv_tok_s']:,.1f} | {err:+.3f} % | "
          f"{b['ttft']:.2f} | {b['srv_ttft']:.2f} | {ttft_err:+.2f} | {b['own_cpu']:.3f} | {marginal:.3f} | "
          f"{b['lag']:.1f} | {'ok' if ok else 'MISSED'} |", flush=True)
    return {"ok": ok, "wire_ok": wire_row(tpc, c, b) if wire_dir else None}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", default="1,16,64")
    ap.add_argument("--tpc", default="1,5.5")
    ap.add_argument("--output-len", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--wire", action="store_true", help="Also score pitcrew's figures against a tcpdump capture.")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pitcrew-wire-") as tmp:
        await run(a, Path(tmp) if a.wire else None)


async def run(a: argparse.Namespace, wire_dir: Path | None) -> None:
    print(f"truth: TTFT {TTFT_S * 1000:.0f} ms, {RATE:.0f} tok/s per stream, {a.output_len} tokens, first chunk "
          f"1 token; goals: output tok/s within {GOALS['tok_s_pct']} %, TTFT within {GOALS['ttft_ms']} ms, "
          f"C=1 CPU <= {GOALS['cpu_c1']} s/1k tokens")
    print("| tok/chunk | C | requests | out tok/s | server | error | TTFT ms | server | error ms | "
          "CPU s/1k (own) | CPU s/1k (marginal) | lag p99 ms | |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    results = []
    for _ in range(a.repeat):
        for tpc in (float(x) for x in a.tpc.split(",")):
            async with truth_server("--ttft", str(TTFT_S), "--rate", str(RATE), "--tokens-per-chunk",
                                    str(tpc)) as srv:
                for c in (int(x) for x in a.levels.split(",")):
                    results.append(await case(srv, tpc, c, a.output_len, wire_dir))
    print(f"{sum(r['ok'] for r in results)}/{len(results)} cases within the goals")
    if wire_dir is not None:
        print("\nwire referee (tcpdump on lo, port filter; the measured requests only; pitcrew / wire "
              f"(pitcrew - wire)); goals: TTFT within {WIRE_GOALS['ttft_ms']} ms, TPOT and decode tok/s within "
              f"{WIRE_GOALS['tpot_pct']} %, output tok/s within {WIRE_GOALS['tok_s_pct']} %")
        print("| tok/chunk | C | requests | packets | TTFT mean ms | TTFT p99 ms | TPOT p50 ms | "
              "decode tok/s/req p50 | output tok/s | |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(WIRE_ROWS))
        print(f"{sum(bool(r['wire_ok']) for r in results)}/{len(results)} cases within the wire goals")


if __name__ == "__main__":
    asyncio.run(main())
