"""Each definition of issue 4 against the known-truth server (a separate process, loopback)."""

from __future__ import annotations

from bench_kit import rel_slack, slack_ms
from support.truth_plan import TruthParams, truth_for

from services.bench.runner import BenchSpec, run_benchmark


def _spec(url: str, **kw: object) -> BenchSpec:
    base: dict[str, object] = {"concurrency": (1,), "requests_per_level": 3, "warmup": 1, "output_len": 40,
                               "input_len": 16, "timeout_s": 10.0}
    base.update(kw)
    return BenchSpec(url=url, **base)  # type: ignore[arg-type]


async def test_one_token_per_chunk_ttft_tpot_n(truth) -> None:
    srv = await truth("--ttft", "0.05", "--rate", "100", "--tokens-per-chunk", "1")
    res = await run_benchmark(_spec(srv.url))
    lv = res.levels[0]
    assert res.model == "truth"
    assert lv.requests == 3 and lv.failed == 0
    assert lv.output_tokens == 3 * 40  # N exactly, from usage
    assert not lv.chunk_counted
    assert lv.tokens_per_chunk == 1.0
    # the role chunk is not the first token; TTFT never reads below the truth
    assert lv.ttft_ms.mean is not None and 50.0 <= lv.ttft_ms.mean <= 50.0 + slack_ms(lv)
    assert lv.tpot_ms.mean is not None and abs(lv.tpot_ms.mean - 10.0) / 10.0 < rel_slack(lv, 390)
    d = lv.decode_tok_s_per_request.mean
    assert d is not None and abs(d - 100.0) / 100.0 < rel_slack(lv, 390)
    assert lv.e2e_ms.mean is not None and abs(lv.e2e_ms.mean - (50 + 390)) < 2 + slack_ms(lv)
    assert lv.icl_ms.mean is not None and abs(lv.icl_ms.mean - 10.0) < 10.0 * rel_slack(lv, 390)


async def test_fractional_tokens_per_chunk_is_exact(truth) -> None:
    srv = await truth("--ttft", "0.05", "--rate", "100", "--tokens-per-chunk", "5.5",
                      "--first-chunk", "pattern")
    res = await run_benchmark(_spec(srv.url, output_len=55))
    lv = res.levels[0]
    t = truth_for(55, TruthParams(ttft_s=0.05, rate=100.0, tokens_per_chunk=5.5, first_chunk="pattern"))
    assert t.chunks == 10 and t.tokens_per_chunk == 5.5
    assert lv.tokens_per_chunk == 5.5 and lv.output_tokens == 3 * 55
    assert lv.ttft_ms.mean is not None and 50.0 <= lv.ttft_ms.mean <= 50.0 + slack_ms(lv)
    assert t.decode_tok_s is not None and t.tpot_s is not None
    d = lv.decode_tok_s_per_request.mean
    assert d is not None and abs(d - t.decode_tok_s) / t.decode_tok_s < rel_slack(lv, 490)
    icl_truth = (t.e2e_s - t.ttft_s) / (t.chunks - 1) * 1000
    assert lv.icl_ms.mean is not None and abs(lv.icl_ms.mean - icl_truth) / icl_truth < rel_slack(lv, 490)


async def test_sglang_like_first_token_then_chunks_decode_rate(truth) -> None:
    """First chunk = the prefill token, then 5.5 tokens per chunk: TPOT is exactly 1/rate."""
    srv = await truth("--ttft", "0.05", "--rate", "200", "--tokens-per-chunk", "5.5")
    res = await run_benchmark(_spec(srv.url, output_len=100, api="completions"))
    lv = res.levels[0]
    t = truth_for(100, TruthParams(rate=200.0, tokens_per_chunk=5.5))
    assert lv.output_tokens == 300 and lv.tokens_per_chunk == t.tokens_per_chunk
    d = lv.decode_tok_s_per_request.mean
    assert d is not None and abs(d - 200.0) / 200.0 < rel_slack(lv, 495)


async def test_usage_on_last_content_chunk(truth) -> None:
    srv = await truth("--usage", "last", "--tokens-per-chunk", "2", "--rate", "200")
    lv = (await run_benchmark(_spec(srv.url, output_len=21))).levels[0]
    assert lv.output_tokens == 63 and not lv.chunk_counted and lv.failed == 0


async def test_no_usage_falls_back_to_chunk_count_and_says_so(truth) -> None:
    srv = await truth("--usage", "off", "--tokens-per-chunk", "5.5", "--first-chunk", "pattern",
                      "--rate", "400")
    res = await run_benchmark(_spec(srv.url, output_len=55))
    lv = res.levels[0]
    assert lv.chunk_counted
    assert lv.output_tokens == 3 * 10  # chunks, a lower bound of the 165 tokens
    assert lv.tokens_per_chunk == 1.0
    assert any("chunk-counted (lower bound)" in w for w in lv.warnings)
    assert res.to_json()["levels"][0]["chunk_counted"] is True


async def test_closed_loop_keeps_exactly_c_in_flight_and_steady_state(truth) -> None:
    srv = await truth("--ttft", "0.02", "--rate", "100")
    res = await run_benchmark(_spec(srv.url, concurrency=(8,), requests_per_level=16, output_len=30))
    lv = res.levels[0]
    facts = await srv.truth()
    assert facts["max_concurrency"] == 8
    assert lv.requests == 16 and lv.failed == 0
    assert lv.achieved_concurrency is not None and lv.achieved_concurrency >= 0.9 * 8
    steady = 8 * 30 / (0.02 + 29 / 100)  # all 8 slots busy throughout: 8 x N / E2E, prefill included
    assert lv.steady_tok_s is not None and lv.steady_s is not None and lv.steady_s > 0.5
    assert abs(lv.steady_tok_s - steady) / steady < rel_slack(lv, 290)
    assert lv.output_tok_s is not None and lv.request_per_s is not None


async def test_capacity_bound_server_steady_state_and_per_request_rate(truth) -> None:
    srv = await truth("--ttft", "0.02", "--rate", "100", "--capacity", "400")
    lv = (await run_benchmark(_spec(srv.url, concurrency=(8,), requests_per_level=8, output_len=30))).levels[0]
    # one round of 8: all slots busy until the first stream ends, when the other 7 can each be a token short
    assert lv.steady_tok_s is not None and lv.steady_s is not None
    low = 400.0 - 7 / lv.steady_s
    assert low * (1 - rel_slack(lv, 580)) < lv.steady_tok_s < 400.0 * (1 + rel_slack(lv, 580))
    d = lv.decode_tok_s_per_request.mean
    assert d is not None and abs(d - 50.0) / 50.0 < rel_slack(lv, 580)


async def test_server_queueing_shows_in_ttft(truth) -> None:
    srv = await truth("--ttft", "0.02", "--rate", "200", "--max-running", "2")
    lv = (await run_benchmark(_spec(srv.url, concurrency=(4,), requests_per_level=8, output_len=20))).levels[0]
    # half of the streams wait one whole request (20 ms + 95 ms) before their TTFT starts
    assert lv.ttft_ms.max is not None and lv.ttft_ms.max > 100.0
    assert lv.ttft_ms.p50 is not None and lv.ttft_ms.p50 < lv.ttft_ms.max
