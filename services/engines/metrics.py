"""Reading a `/metrics` snapshot (metric name -> values of its series): the figures engines take from it.

Owns `metric_mean` (a gauge over its series), `metric_total` (a counter summed over its series) and
`metric_delta` (a counter's growth between two snapshots; None when either lacks it or it went back).
"""

from __future__ import annotations

from services.engines.protocol import Metrics

__all__ = ["metric_delta", "metric_mean", "metric_total"]


def metric_mean(metrics: Metrics | None, name: str) -> float | None:
    vals = (metrics or {}).get(name)
    return sum(vals) / len(vals) if vals else None


def metric_total(metrics: Metrics | None, name: str) -> float | None:
    vals = (metrics or {}).get(name)
    return sum(vals) if vals else None


def metric_delta(before: Metrics | None, after: Metrics | None, name: str) -> float | None:
    a, b = metric_total(before, name), metric_total(after, name)
    if a is None or b is None or b < a:
        return None
    return b - a
