"""Steady tok/s: the output-token rate while all C slots were busy, on synthetic request timelines with a known
answer. A closed loop of C slots feeds a simulated server whose streams each decode at R / (1 + A (m - 1)) tok/s
when m are in flight (one token per event): a batch of m streams together is faster than one, each stream slower.
While all C slots are busy the server streams exactly C R / (1 + A (C - 1)) tok/s. Output lengths vary, so the
last streams run with fewer in flight, each faster: the previous definition (each request's whole-life mean
decode rate, summed over the all-busy time) read that faster tail into the steady figure and read high, and the
output tok/s of the whole window, which holds the tail, reads low.

Tokens are whole events, so over the all-busy time T the client can have received up to C - 1 tokens fewer than
the rate times T (the streams' partial progress when T ends): the known answer holds within (C - 1) / T below.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from services.bench.level import AllBusy
from services.bench.sse import StreamState
from services.bench.stats import LevelInputs, RequestRecord, ServerFigures, steady_rate, summarize

R = 100  # one stream alone, tok/s
A = Fraction(1, 2)  # each further stream in flight slows every stream by this much of R


def per_stream(m: int) -> Fraction:
    return R / (1 + A * (m - 1))


def steady_truth(c: int) -> float:
    return float(c * per_stream(c))


def simulate(c: int, lengths: list[int]) -> tuple[list[RequestRecord], AllBusy, Fraction]:
    """Run the closed loop exactly (rational time); returns the records, the tracker and when a slot first
    found no request left (the end of the all-busy time)."""
    now = Fraction(0)
    busy = AllBusy(c, clock=lambda: float(now))
    queue = list(lengths)
    active: list[tuple[StreamState, int, Fraction, list[Fraction]]] = []  # state, N, t0, [tokens received]
    records: list[RequestRecord] = []
    first_idle: Fraction | None = None

    def start() -> None:
        nonlocal first_idle
        if queue:
            state = StreamState()
            busy.started(state)
            active.append((state, queue.pop(0), now, [Fraction(0)]))
        elif first_idle is None:
            first_idle = now

    for _ in range(c):
        start()
    while active:
        share = per_stream(len(active))  # tok/s per stream
        step = min((1 - (got[0] % 1)) / share for _, _, _, got in active)  # to the next whole token
        now += step
        for entry in list(active):
            state, n, t0, got = entry
            got[0] += step * share
            if got[0].denominator == 1:  # a token (one SSE event) arrives
                state.text_events += 1
                state.first_text = state.first_text if state.first_text is not None else float(now)
                state.last_text = float(now)
                if state.text_events == n:
                    active.remove(entry)
                    inside = busy.ended(state)
                    records.append(RequestRecord(
                        index=len(records), t0=float(t0), queue_s=0.0, ttft=state.first_text - float(t0),
                        e2e=float(now - t0), tokens=n, chunks=n, chunk_counted=False, max_gap=0.0,
                        busy_chunks=inside))
                    start()
    assert first_idle is not None
    return records, busy, first_idle


def previous_definition(records: list[RequestRecord], concurrency: int) -> float | None:
    """The previous steady figure, verbatim: aggregate decode tok/s over the times when `concurrency` measured
    streams were all decoding.

    Each request decodes from t0+TTFT to t0+E2E at its own mean rate (N-1)/(E2E-TTFT); the figure
    is the sum of those rates weighted by their overlap with the all-decoding set, over its length.
    """
    edges: list[tuple[float, int]] = []
    spans: list[tuple[float, float, float]] = []
    for r in records:
        tpot = r.tpot
        if tpot is None:
            continue
        a, b = r.t0 + r.ttft, r.t0 + r.e2e
        spans.append((a, b, 1.0 / tpot))
        edges.append((a, 1))
        edges.append((b, -1))
    if not spans:
        return None
    edges.sort(key=lambda e: (e[0], e[1]))
    full: list[tuple[float, float]] = []
    running = 0
    start = 0.0
    for t, d in edges:
        prev = running
        running += d
        if prev < concurrency <= running:
            start = t
        elif running < concurrency <= prev and t > start:
            full.append((start, t))
    total = sum(b - a for a, b in full)
    if total <= 0:
        return None
    tokens = 0.0
    for a, b, rate in spans:
        for fa, fb in full:
            lo, hi = max(a, fa), min(b, fb)
            if hi > lo:
                tokens += rate * (hi - lo)
    return tokens / total



@pytest.mark.parametrize(("c", "lengths"), [
    (2, [30, 10, 10, 10, 50, 20]),
    (4, [64, 8, 16, 40, 8, 24, 100, 12, 30, 16, 70, 8]),
    (4, [40, 10, 40, 10, 40, 10, 40, 10, 200, 30, 30, 30]),
    (3, [20] * 9),  # equal lengths: no tail, the same figure
])
def test_steady_rate_is_the_capacity_while_all_slots_are_busy(c: int, lengths: list[int]) -> None:
    records, busy, first_idle = simulate(c, lengths)
    assert sum(r.tokens for r in records) == sum(lengths)
    assert busy.intervals[0][0] == 0.0 and busy.intervals[-1][1] == pytest.approx(float(first_idle))
    rate = steady_rate(records, busy.intervals)
    length = sum(b - a for a, b in busy.intervals)
    truth = steady_truth(c)
    assert rate is not None and truth - (c - 1) / length - 1e-9 <= rate <= truth + 1e-9, (rate, truth, length)
    whole = sum(r.tokens for r in records) / max(r.end for r in records)
    if len(set(lengths)) > 1:
        assert (previous_definition(records, c) or 0.0) > 1.05 * truth  # what the old figure read
        assert whole < 0.95 * truth  # output tok/s over the whole window holds the tail with fewer in flight


def test_the_level_reports_the_steady_window_and_its_rate() -> None:
    records, busy, first_idle = simulate(2, [30, 10, 10, 10, 50, 20])
    lv = summarize(LevelInputs(concurrency=2, records=records, failures={}, cpu_s=None, lag_samples_ms=[],
                               busy=busy.intervals, server=ServerFigures()))
    assert lv.steady_tok_s is not None and steady_truth(2) - 1 / float(first_idle) <= lv.steady_tok_s
    assert lv.steady_tok_s <= steady_truth(2) + 1e-9
    assert lv.steady_s == pytest.approx(float(first_idle))  # the gaps between requests are zero here
    assert lv.steady_span_s == (0.0, pytest.approx(float(first_idle), abs=1e-6))
    doc = lv.to_json()
    assert doc["steady_tok_s"] == lv.steady_tok_s and doc["steady_s"] == lv.steady_s
    assert doc["steady_span_s"] == list(lv.steady_span_s)


def test_tokens_spread_over_events_and_a_level_never_full() -> None:
    """Several tokens per event: a request's share is N x (its events in the time) / (its events). With fewer
    requests than slots there is no all-busy time and no figure."""
    rec = RequestRecord(index=0, t0=0.0, queue_s=0.0, ttft=0.1, e2e=1.1, tokens=100, chunks=25,
                        chunk_counted=False, max_gap=0.0, busy_chunks=10)
    assert steady_rate([rec], [(0.0, 0.5)]) == pytest.approx(100 * 10 / 25 / 0.5)
    records, busy, _ = simulate(4, [10, 20])
    assert busy.intervals == [] and steady_rate(records, busy.intervals) is None
