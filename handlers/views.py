"""Views: domain values → `Reply`/`Table` (results tables with deltas, job messages, status lines).

No I/O here; the command handlers and the job notifier call these with data they fetched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from handlers.contract import Button, Reply, Table
from handlers.ports import JobView
from services.engines import find_engine
from services.experiments import NOISY, Comparison, LevelFigures, RunSummary, pct, signed_pct
from services.status import HostStatus

STATE_ICON = {"queued": "⏳", "awaiting_confirmation": "❔", "running": "🔧", "succeeded": "✅", "failed": "❌",
              "cancelled": "🚫", "interrupted": "⚠️"}


def fmt_num(v: float | None, digits: int = 0) -> str:
    if v is None:
        return "—"
    return f"{v:,.{digits}f}"


def fmt_delta(new: float | None, old: float | None, *, lower_is_better: bool = False) -> str:
    change = pct(new, old)
    if change is None:
        return ""
    sign = "+" if change >= 0 else "−"
    return f" ({sign}{abs(change):.0f}%)"


def results_table(run: RunSummary, prev: RunSummary | None,
                  comparisons: Sequence[Comparison] = ()) -> Table:
    """One row per concurrency level: the figures people compare, each with its change against `prev`
    (decode tok/s with its 95 % noise band when a comparison is given)."""
    by_c = {c.concurrency: c for c in comparisons}
    cols = ("C", "decode tok/s/req", "output tok/s", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "accept len",
            "accept rate", "max running")
    rows = []
    max_running = run.capacity.get("max_running_requests")
    for lv in run.levels:
        old: LevelFigures | None = prev.level(lv.concurrency) if prev else None
        rows.append((
            str(lv.concurrency) + ("" if lv.reliable else " ⚠"),
            fmt_num(lv.decode_tok_s, 1) + (f" ({by_c[lv.concurrency].figure()})" if lv.concurrency in by_c
                                           else fmt_delta(lv.decode_tok_s, old.decode_tok_s if old else None)),
            fmt_num(lv.output_tok_s, 1) + fmt_delta(lv.output_tok_s, old.output_tok_s if old else None),
            fmt_num(lv.ttft_p50_ms, 1) + fmt_delta(lv.ttft_p50_ms, old.ttft_p50_ms if old else None),
            fmt_num(lv.ttft_p99_ms, 1),
            fmt_num(lv.tpot_p50_ms, 2) + fmt_delta(lv.tpot_p50_ms, old.tpot_p50_ms if old else None),
            fmt_num(lv.accept_len, 2),
            fmt_num(lv.accept_rate, 2),
            "—" if max_running is None else str(max_running),
        ))
    title = f"{run.label or 'run ' + str(run.id)} on {run.host}" + (f" vs {prev.label or 'run ' + str(prev.id)}"
                                                                   if prev else "")
    return Table(columns=cols, rows=tuple(rows), title=title)


def compare_reply(new: RunSummary, old: RunSummary, comparisons: Sequence[Comparison], title: str) -> Reply:
    """`compare`: one verdict line per shared level ('+15 % (±2 %) — better, 99 % sure'), the noise it was
    judged against, the table, and a *Bench again* button when the noise was too wide to decide."""
    lines = [title]
    lines += [f"C={c.concurrency}: {c.text()}" for c in comparisons]
    if comparisons:
        lines.append(f"_{comparisons[0].noise.describe()}; bands are 95 %_")
    else:
        lines.append("no level in common to compare")
    noisy = any(c.outcome == NOISY for c in comparisons)
    buttons = (Button("Bench again", f"bench on {new.host}"),) if noisy else ()
    return Reply(text="\n".join(lines), tables=(results_table(new, old, comparisons),), buttons=buttons)


def failures_note(run: RunSummary) -> str:
    notes = []
    for lv in run.levels:
        if lv.failed:
            notes.append(f"C={lv.concurrency}: {lv.failed} failed requests")
        notes.extend(f"C={lv.concurrency}: {w}" for w in lv.warnings)
    return "\n".join(notes)


def engine_note(run: RunSummary) -> str:
    """What the run's engine does not report, so an empty cell is not read as zero (same columns for both)."""
    engine = find_engine(run.capacity.get("engine"))
    no_accept = bool(run.levels) and all(lv.accept_len is None for lv in run.levels)
    return "\n".join(engine.report_notes(run.capacity, no_accept) if engine is not None else [])


def sweep_table(result: dict[str, Any]) -> Table:
    levels = [str(c) for c in result.get("levels", [])]
    cols = (result.get("short", "value"), *[f"C={c} tok/s/req" for c in levels],
            f"vs fastest (C={levels[0] if levels else '?'})", "accept len", "max running", "max tokens")
    comparisons = result.get("comparisons") or {}
    within = set(result.get("within_noise") or ())
    rows = []
    for r in result.get("rows", []):
        lv = r.get("levels", {})
        first = lv.get(levels[0], {}) if levels else {}
        cap = r.get("capacity", {})
        value = str(r["value"])
        mark = " ✓" if value == str(result.get("best")) else "" if r.get("ok") else " ✗"
        cells = [value + mark]
        cells += [fmt_num(lv.get(c, {}).get("decode_tok_s"), 1) for c in levels]
        cmp = comparisons.get(value)
        if cmp:
            vs = f"{signed_pct(cmp['change_pct'])} ±{cmp['band_pct']:.0f}" + (" (noise)" if value in within else "")
        else:
            vs = "fastest" if r.get("ok") and value in within else "—"
        cells += [vs, fmt_num(first.get("accept_len"), 2), str(cap.get("max_running_requests") or "—"),
                  fmt_num(cap.get("max_total_num_tokens"))]
        rows.append(tuple(cells))
    return Table(columns=cols, rows=tuple(rows), title=f"sweep of {result.get('short')}")


TUNE_STATUS = {"ok": "meets the goal", "violates": "over the TTFT limit", "refused": "refused before a restart",
               "failed": "failed"}


def tune_table(result: dict[str, Any], max_rows: int = 40) -> Table:
    """Every configuration a tune evaluated, in order: status, throughput and TTFT p95 at the goal's concurrency,
    capacity; the best marked ✓, the Pareto front ◆, failures ✗."""
    goal = result.get("goal") or {}
    c = goal.get("concurrency", "?")
    points = list(result.get("points") or [])
    front = set(result.get("pareto") or [])
    best = (result.get("best") or {}).get("label")
    rows = []
    for i, p in enumerate(points[:max_rows]):
        mark = " ✓" if p.get("label") == best else " ◆" if i in front else " ✗" if p.get("status") == "failed" else ""
        note = TUNE_STATUS.get(str(p.get("status")), str(p.get("status")))
        if p.get("start"):
            note += " (start)"
        rows.append((f"{p.get('label')}{mark}", fmt_num(p.get("throughput")), fmt_num(p.get("ttft_p95_ms")),
                     fmt_num(p.get("kv_tokens")), str(p.get("max_running") or "—"), note))
    title = f"tune: {len(points)} configurations, {result.get('restarts')} restarts"
    if len(points) > max_rows:
        title += f" (first {max_rows} shown)"
    return Table(columns=("configuration", f"C={c} tok/s", "TTFT p95 ms", "KV tokens", "max running", ""),
                 rows=tuple(rows), title=title)


def tune_confirmation(result: dict[str, Any]) -> list[str]:
    """One line per confirming run of a tune's pick: the search's figure that selected it next to the confirming
    run's (a fresh restart with new prompts; the verdict is the confirmation's), or why the confirmation failed."""
    c = (result.get("goal") or {}).get("concurrency", "?")
    lines = []
    for r in (result.get("confirmation") or {}).get("runs") or []:
        head = f"Confirming {r.get('label')}: search read {fmt_num(r.get('search_throughput'))} tok/s at C={c}, "
        if r.get("outcome") == "failed":
            lines.append(head + f"confirmation failed: {str(r.get('why') or r.get('status'))[:300]}.")
        else:
            lines.append(head + f"confirmation {fmt_num(r.get('throughput'))} (a fresh restart, new prompts).")
    return lines


def tune_failures(result: dict[str, Any], limit: int = 8) -> list[str]:
    """One line per configuration that failed or was refused, with why."""
    bad = [p for p in result.get("points") or [] if p.get("status") in ("failed", "refused")]
    lines = [f"✗ {p.get('label')}: {str(p.get('why') or p.get('status'))[:240]}" for p in bad[:limit]]
    if len(bad) > limit:
        lines.append(f"… and {len(bad) - limit} more (`show` the job for all)")
    return lines


def preview_reply(job_id: int, host: str, what: str, diff: Sequence[str], notes: Sequence[str], position: int,
                  eta_s: float | None, needs_confirmation: bool, checks: Sequence[str] = (),
                  check_only: str | None = None) -> Reply:
    lines = [f"*Job {job_id}* on *{host}*: {what}"]
    queue = "runs next" if position == 0 else f"queue position {position + 1}"
    eta = f", ETA ~{_dur(eta_s)}" if eta_s else ""
    lines.append(f"{queue}{eta}")
    lines.extend(f"note: {n}" for n in notes)
    if checks:
        lines.append("preflight:")
        lines.extend(f"  {c}" for c in checks)
    if needs_confirmation:
        lines.append("Confirm to start it.")
    buttons = (Button("Confirm", f"yes {job_id}", "primary"), Button("Cancel", f"no {job_id}", "danger")) \
        if needs_confirmation else (Button("Cancel", f"cancel {job_id}", "danger"),)
    if check_only:
        buttons = (*buttons, Button("Check only", check_only))
    code = "\n".join(diff) if diff else None
    return Reply(text="\n".join(lines), code=code, buttons=buttons, tone="info")


def forecast_lines(result: dict[str, Any] | None) -> list[str]:
    """The capacity forecast of a try against what its start logged (`show <job>`)."""
    fc = (result or {}).get("forecast") or {}
    return [f"forecast {key}: {e['forecast']:,} vs logged {e['logged']:,} ({e['error_pct']:+.1f} %)"
            for key, e in (fc.get("error") or {}).items()]


def preflight_reply(host: str, what: str, diff: Sequence[str], checks: Sequence[str], *, refused: bool,
                    dry_run: bool) -> Reply:
    """A preview that stops at the preflight: refused (a ✗) or a dry run."""
    if refused:
        head = f"Refused: {what} on *{host}* cannot start; nothing on {host} was changed."
    else:
        head = f"Dry run of {what} on *{host}*: preflight only; nothing on {host} was changed."
    lines = [head, *(f"  {c}" for c in checks)]
    return Reply(text="\n".join(lines), code="\n".join(diff) if diff else None,
                 tone="error" if refused else "info")


def _dur(s: float | None) -> str:
    if s is None:
        return "?"
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def job_line(j: JobView) -> str:
    icon = STATE_ICON.get(j.state, "")
    who = j.requested_by_name or j.requested_by
    return f"{icon} job {j.id} · {j.kind} on {j.host} · {j.state} · {who} · {j.command_text[:60]}"


STATUS_COLUMNS = ("host", "unit", "engine", "state", "restarts", "config", "job", "incidents", "last result")


def status_row(s: HostStatus) -> tuple[str, ...]:
    if s.state is not None:
        state, restarts, config = f"{s.state.active_state}/{s.state.sub_state}", str(s.state.restarts), s.state.config
    else:
        state, restarts, config = f"unreachable ({s.unreachable})", "—", "—"
    job = (f"#{s.running_job} running" if s.running_job else "—") + (f", {s.queued_jobs} queued"
                                                                     if s.queued_jobs else "")
    incidents = ", ".join(f"#{i.id} {i.cause}" for i in s.incidents) or "—"
    last = f"{s.last_result.label}: run {s.last_result.run_id}" if s.last_result else "—"
    return (s.host, s.unit, s.engine, state, restarts, config, job, incidents, last)


def status_table(statuses: Sequence[HostStatus]) -> Table:
    """One row per host: unit, engine, state, restarts, configuration, jobs, open incidents, last result."""
    return Table(columns=STATUS_COLUMNS, rows=tuple(status_row(s) for s in statuses))
