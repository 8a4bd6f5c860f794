"""Charts that answer the question asked: which value of a sweep or tune to keep, and how a host's speed moved.

* `sweep_figure`: top panel — median decode tok/s per request against the swept value, one line per
  concurrency, with each run's bootstrap 95 % interval as error bars, the band "within noise of the
  fastest" shaded, and the chosen value marked; integer ticks for integer flags. Bottom panel — what
  each value leaves for the batch: KV cache tokens (bars) and max running requests (line, right axis).
* `tune_figure`: a tune's measured configurations as throughput at the goal's concurrency against TTFT p95,
  the Pareto front (no other point is both faster and quicker to the first token) joined and each of its points
  labelled with its configuration and KV cache tokens, the TTFT limit as a dashed line, the best point and the
  start marked; the configurations that failed or were refused are named under the title.
* `history_figure`: a host's benchmark runs in time order, median with its interval, labelled by
  configuration.
* `incident_timeline_figure`: an incident from open to resolution — each restart, the automatic
  rollback, mute/acknowledge and the resolution on one time axis (posted in the alert's thread).

Figures are built without pyplot (no global state) and rendered with Agg; rendering takes tens of
milliseconds, so the async callers (`sweep_png`, `history_png`) run it in a thread. Tests read the
figures' artists before rendering. matplotlib is imported inside the builders: it is heavy, and only
processes that draw need it.
"""

from __future__ import annotations

import asyncio
import io
import itertools
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from services.experiments import LevelFigures, RunSummary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Z95 = 1.959964
CHOSEN_COLOR = "#2e7d32"


def _num(x: Any) -> float | None:
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def sweep_figure(result: dict[str, Any]) -> Figure | None:
    """The sweep chart (see the module docstring); None when no trial produced figures."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    rows = [r for r in result.get("rows", []) if r.get("levels")]
    if not rows:
        return None
    values = [str(r["value"]) for r in rows]
    nums = [_num(v) for v in values]
    numeric = all(n is not None for n in nums)
    integer = numeric and all(float(n or 0).is_integer() for n in nums)
    xs: list[float] = [float(n or 0) for n in nums] if numeric else [float(i) for i in range(len(rows))]
    pos = dict(zip(values, xs, strict=True))
    short = str(result.get("short") or result.get("flag") or "value")
    best = None if result.get("best") is None else str(result["best"])
    levels = [int(c) for c in result.get("levels", [])]

    fig = Figure(figsize=(7.2, 6.4), dpi=100, layout="constrained")
    ax, cap_ax = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    top_med = None
    for c in levels:
        pts = []
        for r in rows:
            lv = r["levels"].get(str(c), {})
            med = lv.get("decode_tok_s")
            if isinstance(med, int | float):
                ci = lv.get("ci") or (med, med)
                pts.append((pos[str(r["value"])], float(med), float(ci[0]), float(ci[1])))
        if not pts:
            continue
        ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                    yerr=[[max(0.0, p[1] - p[2]) for p in pts], [max(0.0, p[3] - p[1]) for p in pts]],
                    marker="o", capsize=4, label=f"C={c} median (95 % CI)")
        if c == min(levels):
            top_med = max(p[1] for p in pts)
    noise = _num(result.get("noise_pct"))
    if top_med is not None and noise:
        band = Z95 * (2 ** 0.5) * noise / 100
        ax.axhspan(top_med * (1 - band), top_med * (1 + band), color="0.5", alpha=0.15,
                   label=f"within noise of the fastest at C={min(levels)} (±{band * 100:.1f} %)")
    if best is not None and best in pos:
        ax.axvline(pos[best], color=CHOSEN_COLOR, linestyle="--", linewidth=1.5, label=f"chosen: {short} {best}")
        cap_ax.axvline(pos[best], color=CHOSEN_COLOR, linestyle="--", linewidth=1.5)
    ax.set_ylabel("decode tok/s per request")
    title = f"sweep of {short}" + (f": chosen {best}" if best is not None else "")
    within = [str(v) for v in result.get("within_noise") or ()]
    if len(within) > 1:
        title += f" ({', '.join(within)} within noise)"
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")

    kv = [(pos[str(r["value"])], r.get("capacity", {}).get("max_total_num_tokens")) for r in rows]
    kv_pts = [(x, float(k)) for x, k in kv if isinstance(k, int | float)]
    gaps = [b - a for a, b in itertools.pairwise(sorted(set(xs)))]
    width = 0.6 * (min(gaps) if gaps else 1.0)
    if kv_pts:
        cap_ax.bar([p[0] for p in kv_pts], [p[1] / 1000 for p in kv_pts], width=width, color="#90caf9",
                   label="KV cache tokens (thousands)")
    cap_ax.set_ylabel("KV cache tokens (k)")
    run_ax = cap_ax.twinx()
    mr = [(pos[str(r["value"])], r.get("capacity", {}).get("max_running_requests")) for r in rows]
    mr_pts = [(x, float(m)) for x, m in mr if isinstance(m, int | float)]
    if mr_pts:
        run_ax.plot([p[0] for p in mr_pts], [p[1] for p in mr_pts], color="#e65100", marker="s",
                    label="max running requests")
        run_ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        run_ax.set_ylim(bottom=0, top=max(p[1] for p in mr_pts) * 1.15)
    run_ax.set_ylabel("max running requests")
    handles = cap_ax.get_legend_handles_labels()[0] + run_ax.get_legend_handles_labels()[0]
    if handles:
        cap_ax.legend(handles=handles, loc="upper right", fontsize="small")
    if not kv_pts and not mr_pts:
        cap_ax.text(0.5, 0.5, "capacity not reported (no deploy)", transform=cap_ax.transAxes, ha="center")
    cap_ax.set_xlabel(str(result.get("flag") or short))
    cap_ax.set_xticks(xs)
    cap_ax.set_xticklabels([str(int(x)) if integer else v for x, v in zip(xs, values, strict=True)])
    return fig


def history_figure(runs: Sequence[RunSummary], concurrency: int | None = None) -> Figure | None:
    """A host's runs in time order: median decode tok/s per request with its 95 % interval, by label."""
    from matplotlib.figure import Figure

    ordered = sorted((r for r in runs if r.levels), key=lambda r: r.id)
    if not ordered:
        return None
    c = concurrency if concurrency is not None else min(min(lv.concurrency for lv in r.levels) for r in ordered)
    pts: list[tuple[int, RunSummary, LevelFigures]] = []
    for i, r in enumerate(ordered):
        lv = r.level(c)
        if lv is not None and lv.decode_tok_s is not None:
            pts.append((i, r, lv))
    if not pts:
        return None
    fig = Figure(figsize=(max(6.4, 0.5 * len(pts) + 3), 4.2), dpi=100, layout="constrained")
    ax = fig.subplots()
    for label in dict.fromkeys(r.label or "?" for _, r, _ in pts):
        sel = [(i, lv) for i, r, lv in pts if (r.label or "?") == label]
        med = [float(lv.decode_tok_s or 0) for _, lv in sel]
        lo = [m - (lv.decode_ci[0] if lv.decode_ci else m) for m, (_, lv) in zip(med, sel, strict=True)]
        hi = [(lv.decode_ci[1] if lv.decode_ci else m) - m for m, (_, lv) in zip(med, sel, strict=True)]
        ax.errorbar([i for i, _ in sel], med, yerr=[lo, hi], marker="o", linestyle="none", capsize=4, label=label)
    ax.set_xticks([i for i, _, _ in pts])
    ax.set_xticklabels([f"run {r.id}\n{r.started_at:%m-%d %H:%M}" for _, r, _ in pts], fontsize="small")
    ax.set_ylabel(f"decode tok/s per request at C={c}")
    ax.set_title(f"benchmark history of {pts[0][1].host} (median, 95 % CI)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return fig


TIMELINE_ROWS = ("restart", "auto_rollback", "muted", "acknowledged", "resolved")
TIMELINE_STYLE = {"opened": ("#c62828", "o"), "restart": ("#c62828", "x"), "auto_rollback": ("#1565c0", "D"),
                  "muted": ("0.4", "v"), "unmuted": ("0.4", "^"), "acknowledged": ("#6a1b9a", "s"),
                  "resolved": (CHOSEN_COLOR, "*")}


def incident_timeline_figure(title: str, events: Sequence[tuple[datetime, str, dict[str, Any]]]) -> Figure | None:
    """Events of one incident against seconds since it opened, one row per kind; the open span shaded."""
    from matplotlib.figure import Figure

    evs = sorted(events, key=lambda e: e[0])
    if not evs:
        return None
    t0 = evs[0][0]
    rows = {"opened": "restart", "unmuted": "muted"}
    fig = Figure(figsize=(8.4, 3.0), dpi=100, layout="constrained")
    ax = fig.subplots()
    seen: set[str] = set()
    for at, kind, _detail in evs:
        row = rows.get(kind, kind)
        if row not in TIMELINE_ROWS:
            continue
        color, marker = TIMELINE_STYLE.get(kind, ("0.3", "o"))
        ax.plot([(at - t0).total_seconds()], [TIMELINE_ROWS.index(row)], marker=marker, color=color,
                markersize=9, linestyle="none", label=None if kind in seen else kind.replace("_", " "))
        seen.add(kind)
    end = next(((at - t0).total_seconds() for at, kind, _ in evs if kind == "resolved"), None)
    if end is not None:
        ax.axvspan(0, end, color="#ffcdd2", alpha=0.35, label=f"open for {end:.0f} s")
    ax.set_yticks(range(len(TIMELINE_ROWS)))
    ax.set_yticklabels([r.replace("_", " ") for r in TIMELINE_ROWS])
    ax.set_ylim(-0.6, len(TIMELINE_ROWS) - 0.4)
    ax.set_xlim(left=-0.03 * max(end or 1.0, 1.0))
    ax.set_xlabel(f"seconds since the incident opened ({t0:%Y-%m-%d %H:%M:%S} UTC)")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return fig


def tune_figure(result: dict[str, Any]) -> Figure | None:
    """The tune chart (see the module docstring); None when no configuration was measured."""
    from matplotlib.figure import Figure

    points = list(result.get("points") or [])
    measured = [(i, p) for i, p in enumerate(points)
                if _num(p.get("throughput")) is not None and _num(p.get("ttft_p95_ms")) is not None]
    if not measured:
        return None
    goal = result.get("goal") or {}
    limit = _num(goal.get("ttft_p95_ms"))
    best = (result.get("best") or {}).get("label")
    front = [i for i in result.get("pareto") or [] if 0 <= int(i) < len(points)]
    fig = Figure(figsize=(8.0, 5.0), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    for status, color, label in (("ok", "#1565c0", "meets the goal"), ("violates", "#9e9e9e", "over the TTFT limit")):
        pts = [p for _, p in measured if p.get("status") == status]
        if pts:
            ax.scatter([float(p["ttft_p95_ms"]) for p in pts], [float(p["throughput"]) for p in pts], color=color,
                       s=30, label=label, zorder=3)
    if front:
        fx = [float(points[i]["ttft_p95_ms"]) for i in front]
        fy = [float(points[i]["throughput"]) for i in front]
        ax.plot(fx, fy, color="#ef6c00", linewidth=1.5, drawstyle="steps-post", label="Pareto front", zorder=2)
        for i in front:
            p = points[i]
            kv = p.get("kv_tokens")
            ax.annotate(f"{p.get('label')}\nKV {int(kv):,}" if kv else str(p.get("label")),
                        (float(p["ttft_p95_ms"]), float(p["throughput"])), textcoords="offset points",
                        xytext=(6, 4), fontsize="x-small")
    start = next((p for _, p in measured if p.get("start")), None)
    if start is not None:
        ax.scatter([float(start["ttft_p95_ms"])], [float(start["throughput"])], marker="s", s=80,
                   facecolors="none", edgecolors="black", label="start", zorder=4)
    chosen = next((p for _, p in measured if p.get("label") == best), None)
    if chosen is not None:
        ax.scatter([float(chosen["ttft_p95_ms"])], [float(chosen["throughput"])], marker="*", s=220,
                   color=CHOSEN_COLOR, label=f"best: {best}", zorder=5)
    if limit is not None:
        ax.axvline(limit, color="#c62828", linestyle="--", linewidth=1, label=f"TTFT limit {limit:g} ms")
    failed = [str(p.get("label")) for p in points if p.get("status") in ("failed", "refused")]
    title = f"tune: {goal.get('text', 'throughput')}"
    if failed:
        shown = ", ".join(failed[:6]) + (f" (+{len(failed) - 6})" if len(failed) > 6 else "")
        title += f"\nfailed or refused: {shown}"
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel("TTFT p95 (ms)")
    ax.set_ylabel(f"output tok/s at C={goal.get('concurrency', '?')}")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    return fig


def render_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _png(fig: Figure | None) -> bytes | None:
    return None if fig is None else render_png(fig)


async def sweep_png(result: dict[str, Any]) -> bytes | None:
    """The sweep chart as PNG, drawn in a thread (never on the event loop)."""
    return await asyncio.to_thread(lambda: _png(sweep_figure(result)))


async def tune_png(result: dict[str, Any]) -> bytes | None:
    """The tune chart as PNG, drawn in a thread (never on the event loop)."""
    return await asyncio.to_thread(lambda: _png(tune_figure(result)))


async def incident_timeline_png(title: str, events: Sequence[tuple[datetime, str, dict[str, Any]]]) -> bytes | None:
    return await asyncio.to_thread(lambda: _png(incident_timeline_figure(title, events)))


async def history_png(runs: Sequence[RunSummary], concurrency: int | None = None) -> bytes | None:
    return await asyncio.to_thread(lambda: _png(history_figure(runs, concurrency)))
