"""vLLM's start-up capacity lines, spec-decoding and throughput lines (FORMATS b.1-b.3), and the results note."""

from __future__ import annotations

from datetime import UTC, datetime

from handlers import views
from services.engines import engine_named
from services.engines.vllm import parse_vllm_spec, parse_vllm_throughput
from services.experiments import LevelFigures, RunSummary

SGLANG, VLLM = engine_named("sglang"), engine_named("vllm")

E = "(EngineCore_DP0 pid=4310) INFO 12-01 21:03:{:02d} [{}] {}"
A = "(APIServer pid=4120) INFO 12-01 21:04:{:02d} [{}] {}"
START_0_11 = [
    A.format(1, "api_server.py:1839", "vLLM API server version 0.11.0"),
    A.format(2, "model.py:1510", "Using max model len 32768"),
    E.format(30, "gpu_worker.py:298", "Available KV cache memory: 10.79 GiB"),
    E.format(30, "kv_cache_utils.py:1087", "GPU KV cache size: 1,234,560 tokens"),
    E.format(30, "kv_cache_utils.py:1091", "Maximum concurrency for 32,768 tokens per request: 37.68x"),
    E.format(45, "gpu_model_runner.py:3480", "Graph capturing finished in 12 secs, took 0.52 GiB"),
    "(APIServer pid=4120) INFO:     Application startup complete.",
]


def test_vllm_0_11_capacity_is_gathered_from_its_lines() -> None:
    reader = VLLM.capacity_reader()
    completed = [reader.feed(line) for line in START_0_11]
    assert completed == [False, False, False, True, False, False, False]
    c = reader.capacity
    assert c is not None
    assert (c.max_total_num_tokens, c.context_len, c.max_concurrency, c.concurrency_tokens, c.kv_cache_gib) == (
        1234560, 32768, 37.68, 32768, 10.79)
    assert c.max_running_requests is None  # vLLM does not log it
    assert VLLM.is_ready_line(START_0_11[-1]) and not SGLANG.is_ready_line(START_0_11[-1])


def test_vllm_0_33_one_line_capacity() -> None:
    reader = VLLM.capacity_reader()
    assert reader.feed("(EngineCore pid=77) INFO 12-01 21:03:30 [kv_cache_utils.py:1147] GPU KV cache size: "
                       "98,304 tokens, Maximum concurrency for 8,192 tokens per request: 12.00x")
    c = reader.capacity
    assert c is not None and (c.max_total_num_tokens, c.max_concurrency, c.context_len) == (98304, 12.0, 8192)


def test_sglang_capacity_still_reads_its_one_line() -> None:
    reader = SGLANG.capacity_reader()
    assert reader.feed("[2026-03-09 14:03:20 TP0] max_total_num_tokens=180000, chunked_prefill_size=8192, "
                       "max_prefill_tokens=16384, max_running_requests=48, context_len=32768, "
                       "available_gpu_mem=9.12 GB")
    assert reader.capacity is not None and reader.capacity.max_running_requests == 48
    assert not SGLANG.capacity_reader().feed(START_0_11[3])  # vLLM's line is not SGLang's


def test_spec_decoding_and_throughput_lines() -> None:
    spec = parse_vllm_spec(A.format(10, "metrics.py:97", "SpecDecoding metrics: Mean acceptance length: 2.95, "
                                    "Accepted throughput: 95.10 tokens/s, Drafted throughput: 150.00 tokens/s, "
                                    "Accepted: 951 tokens, Drafted: 1500 tokens, Per-position acceptance rate: "
                                    "0.812, 0.640, 0.450, Avg Draft acceptance rate: 63.4%"))
    assert spec is not None
    assert (spec.mean_accept_len, spec.accepted, spec.drafted, spec.draft_accept_rate) == (2.95, 951, 1500, 0.634)
    tput = parse_vllm_throughput(A.format(10, "loggers.py:127", "Engine 000: Avg prompt throughput: 812.3 "
                                          "tokens/s, Avg generation throughput: 245.1 tokens/s, Running: 4 reqs, "
                                          "Waiting: 0 reqs, GPU KV cache usage: 3.2%, Prefix cache hit rate: 0.0%"))
    assert tput is not None and (tput.gen_throughput, tput.running, tput.waiting, tput.kv_cache_usage) == (
        245.1, 4, 0, 0.032)
    assert parse_vllm_spec(START_0_11[0]) is None and parse_vllm_throughput(START_0_11[0]) is None


def _run(capacity: dict[str, object], accept: float | None) -> RunSummary:
    lv = LevelFigures(concurrency=1, requests=8, failed=0, decode_tok_s=250.0, output_tok_s=250.0,
                      ttft_p50_ms=40.0, ttft_p99_ms=60.0, tpot_p50_ms=4.0, accept_len=accept, accept_rate=None,
                      tokens_per_chunk=None, reliable=True, warnings=())
    return RunSummary(1, "gpu-1", "m", "spec tokens 5", None, None, True, datetime.now(UTC), dict(capacity), {},
                      (lv,))


def test_the_results_note_says_what_an_engine_does_not_report() -> None:
    cap = {"engine": "vllm", "max_total_num_tokens": 1234560, "max_concurrency": 37.68, "concurrency_tokens": 32768}
    note = views.engine_note(_run(cap, 2.9))
    assert note == ("max running: vLLM logs no such figure (its cap is --max-num-seqs); its KV cache of 1,234,560 "
                    "tokens holds 37.68x requests of 32,768 tokens.")
    assert "no speculative-decoding counters" in views.engine_note(_run(cap, None))
    assert views.engine_note(_run({"engine": "sglang"}, 5.5)) == ""
    assert "--enable-metrics" in views.engine_note(_run({"engine": "sglang"}, None))
    table = views.results_table(_run(cap, 2.9), None)
    assert table.columns == views.results_table(_run({"engine": "sglang"}, 5.5), None).columns  # same columns
    assert table.rows[0][6] == "2.90" and table.rows[0][8] == "—"
