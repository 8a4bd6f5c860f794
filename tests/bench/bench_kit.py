"""Timing tolerances shared by the benchmark tests."""

from __future__ import annotations

from services.bench.stats import LevelResult


def slack_ms(lv: LevelResult) -> float:
    """Timing tolerance: 4 ms plus the client's own event-loop lag p99 for that level.

    The machine is shared (2 cores, parallel test runs): a late wake-up of the client's loop
    delays its reading of an event by about the lag it reports, so the tests hold the figures
    to that bound (on a quiet machine the lag is 1-2 ms and the bound stays tight).
    """
    return 4.0 + (lv.client.loop_lag_ms_p99 or 0.0)


def rel_slack(lv: LevelResult, span_ms: float) -> float:
    """Relative tolerance of a rate measured over `span_ms`: 2 %, plus two lags over the span."""
    return 0.02 + 2 * (lv.client.loop_lag_ms_p99 or 0.0) / span_ms
