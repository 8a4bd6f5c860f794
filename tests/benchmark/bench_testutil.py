"""Timing tolerances shared by the benchmark tests."""

from __future__ import annotations

from services.bench_stats import LevelResult


def slack_ms(lv: LevelResult) -> float:
    """Timing tolerance: 4 ms, plus the event-loop lag when the level says the client was starved.

    The machine is shared (2 cores, parallel test runs): when the level is flagged unreliable the
    benchmark has said its timings are off by about its loop lag, and the tests hold it to that.
    """
    lag = lv.client.loop_lag_ms_p99 or 0.0
    return 4.0 + (lag if lv.unreliable else 0.0)


def rel_slack(lv: LevelResult, span_ms: float) -> float:
    """Relative tolerance of a rate measured over `span_ms`: 2 %, plus the lag share when starved."""
    lag = lv.client.loop_lag_ms_p99 or 0.0
    return 0.02 + (2 * lag / span_ms if lv.unreliable else 0.0)
