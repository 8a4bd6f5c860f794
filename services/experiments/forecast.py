"""Capacity forecast from a host's own history: KV cache tokens and max running requests of a configuration
that has not run yet, predicted from the configurations that did.

Every start logs its capacity (SGLang's `max_total_num_tokens`, `max_running_requests`; read by the engine's
`Engine.capacity_reader`, stored with each benchmark run). The KV pool is what is left of the static memory
after weights and the per-request buffers that grow with the draft tokens ``d``, so at one memory
fraction and context length ``1 / tokens`` is close to linear in ``d`` (the field notes: 377,207 at d=3 and
295,931 at d=4). `forecast` fits that line by least squares on the recorded points that share the new
configuration's mem-fraction and context length (falling back to the nearest mem-fraction, said so), and
derives max running requests from the tokens per request slot that every recorded point bounds
(``tokens / (mrr + 1) < slot <= tokens / mrr``), capped like the recorded ones. It says which points it used,
and when the new ``d`` is outside them the forecast is called an extrapolation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.engines import engine_for

# SGLang resets max_running_requests to 48 for speculative decoding unless it is given (ServerArgs 0.5.9)
SPEC_MAX_RUNNING = 48

__all__ = ["CapacityPoint", "Forecast", "config_point", "forecast", "forecast_error"]


@dataclass(frozen=True)
class CapacityPoint:
    """One configuration's features and (when it ran) its logged capacity."""

    draft_tokens: int
    mem_fraction: float | None
    context_length: int | None
    tokens: int | None = None
    max_running: int | None = None
    explicit_max_running: int | None = None
    label: str = ""


@dataclass(frozen=True)
class Forecast:
    tokens: int
    max_running: int | None
    used: tuple[CapacityPoint, ...]
    extrapolated: bool
    notes: tuple[str, ...]
    bound: str = ""  # "at most" / "at least" when one measured point gives only a bound

    def to_json(self) -> dict[str, Any]:
        return {"max_total_num_tokens": self.tokens, "max_running_requests": self.max_running, "bound": self.bound,
                "points": [p.label for p in self.used], "extrapolated": self.extrapolated, "notes": list(self.notes)}

    def line(self) -> str:
        approx = f"{self.bound} " if self.bound else "~"
        mrr = f", max running requests {approx}{self.max_running}" if self.max_running is not None else ""
        used = ", ".join(p.label for p in self.used)
        how = "from" if len(self.used) == 1 else "fit on"
        return f"forecast: KV cache {approx}{self.tokens:,} tokens{mrr} ({how} {used})"


def config_point(argv: Sequence[str], capacity: dict[str, Any] | None = None, label: str = "") -> CapacityPoint:
    """The forecast features of an ExecStart argv, in its own engine's defaults (`Engine.forecast_knobs`: on
    SGLang the topk-1 coupling applied; on vLLM spec tokens + 1 draft tokens, gpu-memory-utilization,
    max-model-len)."""
    knobs = engine_for(argv).forecast_knobs(argv, label)
    cap = capacity or {}
    tokens, mrr = cap.get("max_total_num_tokens"), cap.get("max_running_requests")
    return CapacityPoint(draft_tokens=knobs.draft_tokens, mem_fraction=knobs.mem_fraction,
                         context_length=knobs.context_length,
                         tokens=int(tokens) if isinstance(tokens, int) else None,
                         max_running=int(mrr) if isinstance(mrr, int) else None,
                         explicit_max_running=knobs.explicit_max_running, label=knobs.label)


def _fit(points: Sequence[CapacityPoint]) -> tuple[float, float]:
    """Least squares of 1/tokens = a + b*d."""
    xs = [float(p.draft_tokens) for p in points]
    ys = [1.0 / float(p.tokens or 1) for p in points]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - b * mx, b


def _slot(points: Sequence[CapacityPoint]) -> float | None:
    """Tokens per request slot consistent with every point whose max_running was not capped."""
    lo, hi = 0.0, math.inf
    for p in points:
        if not p.tokens or not p.max_running:
            continue
        lo = max(lo, p.tokens / (p.max_running + 1))
        hi = min(hi, p.tokens / p.max_running)
    if hi == math.inf:
        return None
    return (lo + hi) / 2 if lo < hi else hi


def forecast(target: CapacityPoint, history: Sequence[CapacityPoint]) -> Forecast | None:
    """Predict `target`'s capacity from recorded points (None when nothing comparable was recorded)."""
    measured = [p for p in history if p.tokens]
    if not measured:
        return None
    notes: list[str] = []
    same_ctx = [p for p in measured if p.context_length == target.context_length] or measured
    group = [p for p in same_ctx if p.mem_fraction == target.mem_fraction]
    if not group:
        nearest = min({p.mem_fraction for p in same_ctx},
                      key=lambda f: abs((f or 0.0) - (target.mem_fraction or 0.0)))
        group = [p for p in same_ctx if p.mem_fraction == nearest]
        notes.append(f"no measured point at mem-fraction {target.mem_fraction}; the fit uses mem-fraction "
                     f"{nearest} unscaled")
    # one point per draft-token count: the newest measurement wins
    by_d: dict[int, CapacityPoint] = {}
    for p in group:
        by_d[p.draft_tokens] = p
    used = tuple(sorted(by_d.values(), key=lambda p: p.draft_tokens))
    bound = ""
    if len(used) == 1:
        only = used[0]
        tokens = only.tokens or 0
        if only.draft_tokens != target.draft_tokens:
            # more draft tokens reserve more per request, so one point bounds the capacity from one side
            bound = "at most" if target.draft_tokens > only.draft_tokens else "at least"
            notes.append(f"one measured point ({only.label}): no trend to fit, only a bound")
    else:
        a, b = _fit(used)
        inv = a + b * target.draft_tokens
        tokens = int(1.0 / inv) if inv > 0 else 0
    d_lo, d_hi = used[0].draft_tokens, used[-1].draft_tokens
    extrapolated = not d_lo <= target.draft_tokens <= d_hi
    if extrapolated:
        edge = used[-1] if target.draft_tokens > d_hi else used[0]
        side = "beyond" if target.draft_tokens > d_hi else "below"
        notes.append(f"no measured point {side} {edge.draft_tokens} draft tokens ({edge.label}): "
                     "forecast is an extrapolation")
    cap = target.explicit_max_running or (SPEC_MAX_RUNNING if target.draft_tokens > 1 else None)
    slot = _slot([p for p in used if p.max_running not in (p.explicit_max_running, SPEC_MAX_RUNNING)])
    mrr: int | None = None
    if slot:
        mrr = int(tokens // slot)
        if cap:
            mrr = min(mrr, cap)
    return Forecast(tokens=max(tokens, 0), max_running=mrr, used=used, extrapolated=extrapolated, notes=tuple(notes),
                    bound=bound)


def forecast_error(fc: dict[str, Any], logged: dict[str, Any]) -> dict[str, Any]:
    """Forecast against the logged capacity after the start: values and relative errors (%)."""
    out: dict[str, Any] = {}
    for key in ("max_total_num_tokens", "max_running_requests"):
        f, v = fc.get(key), logged.get(key)
        if isinstance(f, int) and isinstance(v, int) and v:
            out[key] = {"forecast": f, "logged": v, "error_pct": round((f - v) / v * 100.0, 1)}
    return out
