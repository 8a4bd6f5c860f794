"""Sweeps: one trial per value of a flag, in order, then a summary, the best value, and where to leave the host.

Each trial is a full try (deploy, wait until serving, benchmark). The best value is the one with
the highest median decode tok/s per request at the lowest swept concurrency; values within
`PLATEAU_PCT` of the best count as a tie and the smallest of them wins (fewer draft tokens leave
more KV cache: the field notes' plateau at 4-5 steps picks 4). The host is left on the best value
or on the value it started with, by policy; a failed trial ends the sweep and restores the start.
"""

from __future__ import annotations

from typing import Any

from services.errors import DeployFailed, PitcrewError
from services.experiments.pipeline import Experiments, TrialOutcome, label_for
from services.experiments.results import PLATEAU_PCT
from services.jobs import JobContext, JobProgressed
from services.units import resolve_flag


def best_value(rows: list[dict[str, Any]], level: int) -> tuple[str | None, str]:
    """(best value, the criterion in words) from summary rows."""
    scored = [(r["value"], r["levels"].get(str(level), {}).get("decode_tok_s")) for r in rows if r["ok"]]
    scored = [(v, s) for v, s in scored if isinstance(s, int | float)]
    if not scored:
        return None, "no trial finished"
    top = max(s for _, s in scored)
    ties = [v for v, s in scored if s >= top * (1 - PLATEAU_PCT / 100)]
    best = ties[0]
    why = (f"highest decode tok/s per request at C={level}; values within {PLATEAU_PCT:.0f} % of the top "
           f"count as a plateau and the smallest wins")
    return best, why


async def run_sweep(exp: Experiments, ctx: JobContext) -> tuple[str, dict[str, Any]]:
    params = ctx.job.params
    flag = resolve_flag(str(params["flag"]))
    values = [str(v) for v in params["values"]]
    levels = tuple(params.get("concurrency") or exp.bench_defaults.concurrency)
    start = await exp.observe_live(ctx)
    rows: list[dict[str, Any]] = []
    failure: str | None = None
    for i, value in enumerate(values, 1):
        await exp.bus.publish(JobProgressed(ctx.job.ref(), f"trial {i}/{len(values)}: {flag.short} {value}",
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
            failure = f"{flag.short} {value}: {e.message}"
            break
    best, why = best_value(rows, min(levels))
    end_value = best if (exp.policy.sweep_end == "best" and best is not None and failure is None) else None
    ops = exp.ops(ctx.job.host)
    if end_value is not None:
        live = await exp.observe_live(ctx)
        if end_value != rows[-1]["value"]:
            await exp.trial(ctx, live, {flag.name: end_value}, (min(levels),))
        left_on = f"left on the best value, {flag.short} {end_value}"
    else:
        await exp.restore(ctx, ops, start, reason="sweep finished" if failure is None else "sweep failed")
        left_on = f"left on the starting configuration (revision {start.id})"
    result = {"flag": flag.name, "short": flag.short, "values": values, "levels": list(levels), "rows": rows,
              "best": best, "criterion": why, "left_on": left_on, "failure": failure,
              "start_revision": start.id}
    if failure is not None:
        raise DeployFailed(f"sweep stopped at {failure}; {left_on}", result=result)
    return f"sweep {flag.short} {values[0]}..{values[-1]}: best {best} ({left_on})", result


def _row(o: TrialOutcome) -> dict[str, Any]:
    levels: dict[str, Any] = {}
    if o.run is not None:
        for lv in o.run.levels:
            levels[str(lv.concurrency)] = {"decode_tok_s": lv.decode_tok_s, "output_tok_s": lv.output_tok_s,
                                           "accept_len": lv.accept_len, "ttft_p50_ms": lv.ttft_p50_ms}
    return {"ok": o.run is not None and o.crashed_at is None, "levels": levels, "capacity": o.capacity,
            "run_id": o.run.id if o.run else None, "label": o.label, "verdict": o.verdict}


__all__ = ["PitcrewError", "best_value", "label_for", "run_sweep"]
