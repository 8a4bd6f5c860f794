"""Duration mode, the JSON document, server probes and client health figures."""

from __future__ import annotations

from services.bench.probes import MetricsProbe, parse_prometheus
from services.bench.runner import BenchSpec, run_benchmark
from services.bench.stats import percentile
from services.engines import engine_named

LEVEL_KEYS = {"concurrency", "requests", "failed", "output_tokens", "duration_s", "output_tok_s",
              "request_per_s", "achieved_concurrency", "steady_tok_s", "steady_s", "steady_span_s", "tokens_per_chunk",
              "chunk_counted", "ttft_ms", "tpot_ms", "decode_tok_s_per_request", "e2e_ms", "server", "client",
              "warnings", "decode_tok_s_ci95", "decode_tok_s_samples"}
DIST_KEYS = {"mean", "p50", "p90", "p95", "p99", "max"}


async def test_duration_mode_json_document_and_sglang_probe(truth) -> None:
    srv = await truth("--rate", "200", "--ttft", "0.01", "--tokens-per-chunk", "5.5", "--first-chunk",
                      "pattern")
    spec = BenchSpec(url=srv.url + "/v1", concurrency=(2,), requests_per_level=None, duration_s=0.8,
                     warmup=1, output_len=22, timeout_s=5.0)
    res = await run_benchmark(spec, probe=MetricsProbe(srv.url, engine_named("sglang")))
    doc = res.to_json()
    assert set(doc) == {"url", "model", "started_at", "levels"}
    lv = doc["levels"][0]
    assert set(lv) == LEVEL_KEYS
    for key in ("ttft_ms", "tpot_ms", "decode_tok_s_per_request", "e2e_ms"):
        assert set(lv[key]) == DIST_KEYS
    assert set(lv["server"]) == {"accept_len", "accept_rate", "gen_throughput"}
    assert set(lv["client"]) == {"cpu_s_per_1k_tokens", "loop_lag_ms_p99", "cpu_s"}
    assert lv["requests"] >= 6 and lv["tokens_per_chunk"] == 5.5
    assert lv["server"]["accept_len"] == 5.5 and lv["server"]["accept_rate"] is None
    assert lv["server"]["gen_throughput"] is not None and lv["server"]["gen_throughput"] > 100
    assert lv["client"]["cpu_s_per_1k_tokens"] is not None and lv["client"]["loop_lag_ms_p99"] is not None
    assert lv["duration_s"] >= 0.7


async def test_vllm_probe_counters(truth) -> None:
    srv = await truth("--rate", "400", "--ttft", "0.005", "--tokens-per-chunk", "3")
    probe = MetricsProbe(srv.url, engine_named("vllm"))
    res = await run_benchmark(BenchSpec(url=srv.url, concurrency=(2,), requests_per_level=4, warmup=0,
                                        output_len=31, timeout_s=5.0), probe=probe)
    server = res.levels[0].server
    assert server.accept_len == 3.0  # 1 + accepted/drafts: 30 decode tokens in 10 chunks per request
    assert server.accept_rate == 0.5  # 2 accepted of 4 drafted per chunk
    assert server.gen_throughput is not None


def test_prometheus_parse_and_percentiles() -> None:
    m = parse_prometheus('# HELP x\nsglang:spec_accept_length{tp_rank="0"} 4.5\nfoo_total 3\nbad line x\n')
    assert m == {"sglang:spec_accept_length": [4.5], "foo_total": [3.0]}
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5 and percentile([5.0], 99) == 5.0
