"""The sweep and history charts, checked by reading the figure's artists before rendering."""

from __future__ import annotations

import asyncio
import io
import os
import random
import statistics
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console

from bot.console import ConsoleView
from handlers.charts import history_figure, render_png, sweep_figure, sweep_png
from handlers.contract import Attachment, Reply
from services.bench.noise import median_ci
from services.experiments.results import Results, RunSummary, figures_from_json
from services.store import Database
from simhost.sglang import model

RATE = {1: 123.0, 2: 186.0, 3: 240.0, 4: 277.0, 5: 282.0}


def _capacity(steps: int) -> dict[str, int]:
    tokens = model.max_total_num_tokens(steps + 1, 0.88, model.T0_MIB)
    return {"max_total_num_tokens": tokens, "max_running_requests": model.max_running_requests(tokens, None)}


def _result() -> dict[str, object]:
    rng = random.Random(4)
    rows = []
    for steps, rate in RATE.items():
        levels = {}
        for c in (1, 4):
            xs = [rate / (1 + 0.06 * (c - 1)) * (1 + rng.gauss(0, 0.02)) for _ in range(16)]
            levels[str(c)] = {"decode_tok_s": statistics.median(xs), "ci": list(median_ci(xs) or ()), "samples": xs}
        rows.append({"value": str(steps), "ok": True, "capacity": _capacity(steps), "levels": levels})
    return {"flag": "speculative_num_steps", "short": "steps", "values": [str(v) for v in RATE], "levels": [1, 4],
            "rows": rows, "best": "4", "within_noise": ["4", "5"], "noise_pct": 1.5}


def test_sweep_chart_has_integer_ticks_error_bars_the_choice_and_the_capacity_panel() -> None:
    from matplotlib.container import BarContainer, ErrorbarContainer  # here: every phase-1 worker collects this file

    result = _result()
    fig = sweep_figure(result)
    assert fig is not None
    ax, cap_ax, run_ax = fig.axes
    # integer flag: one tick per swept value, labelled as integers
    assert list(cap_ax.get_xticks()) == [1, 2, 3, 4, 5]
    assert [t.get_text() for t in cap_ax.get_xticklabels()] == ["1", "2", "3", "4", "5"]
    # one error-bar series per concurrency, the bars are each run's bootstrap interval
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [b.get_label() for b in bars] == ["C=1 median (95 % CI)", "C=4 median (95 % CI)"]
    line, _caps, cols = bars[0].lines
    row4 = result["rows"][3]["levels"]["1"]  # type: ignore[index]
    assert list(line.get_ydata())[3] == row4["decode_tok_s"]
    segs = cols[0].get_segments()
    assert [round(y, 6) for y in (segs[3][0][1], segs[3][1][1])] == [round(y, 6) for y in row4["ci"]]
    # the chosen value is marked, and the noise band of the fastest is shaded
    chosen = [ln for ln in ax.get_lines() if ln.get_label() == "chosen: steps 4"]
    assert chosen and list(chosen[0].get_xdata()) == [4, 4]
    assert any(p.get_label().startswith("within noise of the fastest at C=1 (±4.2 %)") for p in ax.patches)
    assert ax.get_title() == "sweep of steps: chosen 4 (4, 5 within noise)"
    assert ax.get_ylabel() == "decode tok/s per request"
    # second panel: KV cache tokens per value (bars) and max running requests (right axis)
    (kv,) = [c for c in cap_ax.containers if isinstance(c, BarContainer)]
    assert [round(p.get_height() * 1000) for p in kv.patches] == [_capacity(s)["max_total_num_tokens"] for s in RATE]
    (running,) = [ln for ln in run_ax.get_lines() if ln.get_label() == "max running requests"]
    assert list(running.get_ydata()) == [_capacity(s)["max_running_requests"] for s in RATE]
    assert run_ax.get_ylabel() == "max running requests" and cap_ax.get_xlabel() == "speculative_num_steps"
    assert render_png(fig).startswith(b"\x89PNG\r\n\x1a\n")


def test_non_numeric_values_keep_their_names_and_an_empty_sweep_draws_nothing() -> None:
    result = _result()
    for r, name in zip(result["rows"], "abcde", strict=False):  # type: ignore[call-overload]
        r["value"] = name
    result["best"], result["within_noise"] = "d", ["d"]
    fig = sweep_figure(result)
    assert fig is not None
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == list("abcde")
    assert sweep_figure({"rows": [{"value": "1", "ok": False, "levels": {}}]}) is None


async def test_sweep_png_is_drawn_off_the_event_loop() -> None:
    png = await sweep_png(_result())
    assert png is not None and png.startswith(b"\x89PNG")


def test_history_chart_shows_each_run_with_its_interval_by_configuration() -> None:
    from matplotlib.container import ErrorbarContainer

    rng = random.Random(9)
    runs = []
    t0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    for i, label in enumerate(["steps 3", "steps 4", "steps 4", "steps 5"], 1):
        xs = [RATE[int(label[-1])] * (1 + rng.gauss(0, 0.02)) for _ in range(16)]
        lv = figures_from_json({"concurrency": 1, "requests": 16, "decode_tok_s_per_request":
                                {"p50": statistics.median(xs)}, "decode_tok_s_ci95": list(median_ci(xs) or ()),
                                "decode_tok_s_samples": xs})
        runs.append(RunSummary(id=i, host="gpu-1", model="m", label=label, job_id=i, revision_id=i, ok=True,
                               started_at=t0 + timedelta(minutes=10 * i), capacity={}, flags={}, levels=(lv,)))
    fig = history_figure(runs)
    assert fig is not None
    (ax,) = fig.axes
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [b.get_label() for b in bars] == ["steps 3", "steps 4", "steps 5"]
    assert list(bars[1].lines[0].get_xdata()) == [1, 2]
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == ["run 1", "run 2", "run 3", "run 4"]
    assert ax.get_ylabel() == "decode tok/s per request at C=1"
    assert history_figure([]) is None


async def _seed_db(url: str) -> None:
    db = Database(url)
    try:
        await db.migrate()
        results = Results(db)
        rng = random.Random(2)
        for label in ("steps 3", "steps 4", "steps 4"):
            xs = [RATE[int(label[-1])] * (1 + rng.gauss(0, 0.02)) for _ in range(16)]
            level = {"concurrency": 1, "requests": 16, "decode_tok_s_per_request": {"p50": statistics.median(xs)},
                     "decode_tok_s_ci95": list(median_ci(xs) or ()), "decode_tok_s_samples": xs}
            await results.save(host="gpu-1", model="m", label=label, result={"levels": [level]}, ok=True)
    finally:
        await db.close()


def _pitcrew(args: list[str], url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PITCREW_DB__URL": url}
    env.pop("PITCREW_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "bot", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120, stdin=subprocess.DEVNULL)


async def test_cli_history_chart_writes_the_benchmark_history_png(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"
    empty = await asyncio.to_thread(_pitcrew, ["history", "--chart", "none.png"], url, tmp_path)
    assert empty.returncode == 1 and "no benchmark runs to chart" in empty.stderr
    assert "Traceback" not in empty.stderr and not (tmp_path / "none.png").exists()
    await _seed_db(url)
    proc = await asyncio.to_thread(_pitcrew, ["history", "--chart", "hist.png"], url, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "chart of 3 benchmark runs of gpu-1 written to hist.png" in proc.stdout
    assert (tmp_path / "hist.png").read_bytes().startswith(b"\x89PNG")


def test_the_console_writes_posted_charts_and_prints_where(tmp_path: Path) -> None:
    out = io.StringIO()
    view = ConsoleView(Console(file=out, width=200), files_dir=tmp_path / "pitcrew-demo")
    png = render_png(sweep_figure(_result()))  # type: ignore[arg-type]
    view.show(Reply(text="Sweep", attachments=(Attachment("../sweep-job3.png", png, "sweep chart", "image/png"),)))
    saved = tmp_path / "pitcrew-demo" / "sweep-job3.png"
    assert saved.read_bytes() == png
    assert f"saved to {saved}" in out.getvalue()
