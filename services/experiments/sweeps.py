"""Sweeps: one trial per value of a flag, in order, then a summary, the best value, and where to leave the host.

Each trial is a full try (deploy, wait until serving, benchmark). The fastest value is the one with
the highest median decode tok/s per request at the lowest swept concurrency; values whose change
against it is within the measured noise (`services.experiments.verdicts`) form the plateau; the value
that leaves the most KV cache wins unless the fastest beats it by `MIN_GAIN_PCT` with 95 % confidence
(fewer draft tokens: the field notes' plateau at 4-5 steps picks 4). When the noise is too wide to
tell values apart the choice says so.
The host is left on the best value or on the value it started with, by policy; a failed trial ends
the sweep and restores the start.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from services.engines import resolve_flag
from services.errors import DeployFailed, PitcrewError
from services.experiments.pipeline import Experiments
from services.experiments.plans import TrialOutcome, label_for
from services.experiments.verdicts import NOISY, Comparison, RunNoise, compare_samples, measure_noise, signed_pct
from services.jobs import JobContext, JobProgressed
from services.units import flag_label, unit_engine

MIN_GAIN_PCT = 2.0  # a faster value must be this much faster, with 95 % confidence, to cost KV cache


def best_value(rows: list[dict[str, Any]], level: int, noise: RunNoise, *,
               flag_short: str = "value") -> Choice:
    """The sweep's choice at concurrency `level`.

    The plateau is the values within noise of the fastest. The choice is the value that leaves the most KV
    cache (then the first in sweep order) among those the fastest does not beat by at least `MIN_GAIN_PCT`
    with 95 % confidence (the field notes' "+2 % over 4 — the plateau"): a small, barely measurable gain
    does not flip the choice from run to run."""
    scored = []
    for r in rows:
        lv = r["levels"].get(str(level), {}) if r.get("ok") else {}
        med = lv.get("decode_tok_s")
        if isinstance(med, int | float):
            scored.append((r, float(med), [float(x) for x in lv.get("samples") or ()]))
    if not scored:
        return Choice(None, "no trial finished", (), {}, False)
    top_row, top_med, top_samples = max(scored, key=lambda t: t[1])
    comparisons: dict[str, Comparison] = {}
    for r, med, samples in scored:
        if r is top_row:
            continue
        cmp = compare_samples(samples, top_samples, new_median=med, old_median=top_med, noise=noise,
                              concurrency=level)
        if cmp is not None:
            comparisons[str(r["value"])] = cmp
    top = str(top_row["value"])
    order = [str(r["value"]) for r, _, _ in scored]
    tied = [v for v in order if v == top or (v in comparisons and not comparisons[v].significant)]
    close = [v for v in order if v == top or (v in comparisons and comparisons[v].change_pct
                                              + comparisons[v].band_pct > -MIN_GAIN_PCT)]
    undecided = any(comparisons[v].outcome == NOISY for v in tied if v in comparisons)
    by_value = {str(r["value"]): r for r, _, _ in scored}
    med = {str(r["value"]): m for r, m, _ in scored}

    def kv(v: str) -> int:
        return int(by_value[v].get("capacity", {}).get("max_total_num_tokens") or 0)

    best = max(close, key=lambda v: (kv(v), -close.index(v)))
    parts = [f"fastest at C={level}: {flag_short} {top} ({top_med:.0f} tok/s per request)"]
    others = [v for v in tied if v != top]
    if others:
        figs = ", ".join(f"{v}: {comparisons[v].figure()}" for v in others)
        parts.append(f"{_and(tied)} are within noise of each other ({figs}); plateau from {tied[0]}")
    if best not in tied:
        c = comparisons[best]
        gain = (1.0 / (1.0 + c.change_pct / 100.0) - 1.0) * 100.0
        parts.append(f"{top} is measurably faster than {best} ({signed_pct(gain)} (±{c.band_pct:.0f} %)) but not "
                     f"by {MIN_GAIN_PCT:.0f} % with 95 % confidence")
    rivals = [v for v in close if v != best]
    if rivals:
        rival = top if best != top else max(rivals, key=lambda v: med[v])
        if kv(best) > kv(rival):
            drafts = any(w in flag_short for w in ("step", "draft", "spec tokens"))
            cheaper = "uses fewer draft tokens and leaves" if drafts else "leaves"
            cap_b, cap_r = by_value[best].get("capacity", {}), by_value[rival].get("capacity", {})
            detail = f"{kv(best):,} vs {kv(rival):,} KV tokens"
            if cap_b.get("max_running_requests") and cap_r.get("max_running_requests"):
                detail = (f"{cap_b['max_running_requests']} vs {cap_r['max_running_requests']} running requests, "
                          + detail)
            parts.append(f"{best} {cheaper} more KV cache than {rival}: {detail}")
    if undecided:
        parts.append("the noise is too large to tell some of them apart; `bench` again to narrow it")
    parts.append(noise.describe())
    return Choice(best, "; ".join(parts), tuple(tied), comparisons, undecided)


def _and(xs: list[str]) -> str:
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


@dataclass(frozen=True)
class Choice:
    """A sweep's pick and why: the values within noise of the fastest, and each value's comparison."""

    best: str | None
    why: str
    within_noise: tuple[str, ...]
    comparisons: dict[str, Comparison]
    undecided: bool

    def to_json(self) -> dict[str, Any]:
        return {"within_noise": list(self.within_noise), "undecided": self.undecided,
                "comparisons": {v: {"change_pct": round(c.change_pct, 2), "band_pct": round(c.band_pct, 2),
                                    "outcome": c.outcome, "sure_pct": round(c.sure_pct, 1)}
                                for v, c in self.comparisons.items()}}


async def run_sweep(exp: Experiments, ctx: JobContext) -> tuple[str, dict[str, Any]]:
    params = ctx.job.params
    flag = resolve_flag(str(params["flag"]))
    values = [str(v) for v in params["values"]]
    levels = tuple(params.get("concurrency") or exp.bench_defaults.concurrency)
    start = await exp.observe_live(ctx)
    short = flag_label(flag.name, unit_engine(start.text))  # "steps" on SGLang, "spec tokens" on vLLM
    rows: list[dict[str, Any]] = []
    failure: str | None = None
    for i, value in enumerate(values, 1):
        await exp.bus.publish(JobProgressed(ctx.job.ref(), f"trial {i}/{len(values)}: {short} {value}",
                                            "", tuple(ctx.steps_done)))
        row: dict[str, Any] = {"value": value, "ok": False, "levels": {}, "capacity": {}, "run_id": None}
        try:
            current = await exp.observe_live(ctx)
            outcome: TrialOutcome = await exp.trial(ctx, current, {flag.name: value}, levels,
                                                    restore_on_failure=False)
            row.update(_row(outcome))
            rows.append(row)
        except DeployFailed as e:
            row["error"] = e.message
            row.update({"run_id": (e.fields.get("result") or {}).get("run_id")})
            rows.append(row)
            failure = f"{short} {value}: {e.message}"
            break
    model = str(next((r["model"] for r in rows if r.get("model")), ""))
    repeats = await exp.results.repeats(ctx.job.host, model)
    choice = await asyncio.to_thread(best_value, rows, min(levels), measure_noise(repeats, min(levels)),
                                     flag_short=short)
    best, why = choice.best, choice.why
    end_value = best if (exp.policy.sweep_end == "best" and best is not None and failure is None) else None
    ops = exp.ops(ctx.job.host)
    if end_value is not None:
        live = await exp.observe_live(ctx)
        if end_value != rows[-1]["value"]:
            await exp.trial(ctx, live, {flag.name: end_value}, (min(levels),))
        left_on = f"left on the best value, {short} {end_value}"
    else:
        await exp.restore(ctx, ops, start, reason="sweep finished" if failure is None else "sweep failed")
        left_on = f"left on the starting configuration (revision {start.id})"
    result = {"flag": flag.name, "short": short, "values": values, "levels": list(levels), "rows": rows,
              "best": best, "criterion": why, "left_on": left_on, "failure": failure,
              "start_revision": start.id, "noise_pct": measure_noise(repeats, min(levels)).sd_pct,
              **choice.to_json()}
    if failure is not None:
        raise DeployFailed(f"sweep stopped at {failure}; {left_on}", result=result)
    return f"sweep {short} {values[0]}..{values[-1]}: best {best} ({left_on})", result


def _row(o: TrialOutcome) -> dict[str, Any]:
    levels: dict[str, Any] = {}
    if o.run is not None:
        for lv in o.run.levels:
            levels[str(lv.concurrency)] = {"decode_tok_s": lv.decode_tok_s, "output_tok_s": lv.output_tok_s,
                                           "accept_len": lv.accept_len, "ttft_p50_ms": lv.ttft_p50_ms,
                                           "ci": list(lv.decode_ci) if lv.decode_ci else None,
                                           "samples": list(lv.decode_samples)}
    return {"ok": o.run is not None and o.crashed_at is None, "levels": levels, "capacity": o.capacity,
            "run_id": o.run.id if o.run else None, "label": o.label, "verdict": o.verdict,
            "model": o.run.model if o.run else ""}


__all__ = ["Choice", "PitcrewError", "best_value", "label_for", "run_sweep"]
