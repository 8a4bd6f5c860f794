"""`pitcrew bench`: benchmark an OpenAI-compatible streaming server from the command line.

Owns the command's flags, the live progress line (rich, on stderr), the final table (or the
JSON document with `--json`) and the mapping of bad input to one clear line and exit status 2.
The measuring itself is `services.bench.runner.run_benchmark`, the same function the experiment
pipeline calls. Only click is imported at the top: the benchmark, rich and orjson are imported when
the command runs, so `pitcrew bench --help` is quick (bot/cli.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from services.bench import BenchResult


def _levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise click.BadParameter(f"expected numbers separated by commas, got {text!r}") from None
    if not levels:
        raise click.BadParameter("give at least one concurrency level")
    return levels


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"pitcrew bench: {message}", err=True)
    sys.exit(code)


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


_COLUMNS = ("C", "req", "fail", "out tok/s", "req/s", "achieved C", "steady tok/s", "TTFT p50/p99 ms",
            "TPOT p50 ms", "tok/s/req p50", "N/SSE events", "srv accept len", "CPU s/1k tok", "lag p99 ms")
_COMPACT = ("C", "req", "fail", "out tok/s", "TTFT p50/p99 ms", "tok/s/req p50")


def render_table(result: BenchResult) -> None:
    from rich.console import Console
    from rich.table import Table

    out = Console()
    if not out.is_terminal:
        out = Console(width=200)
    columns = _COLUMNS if out.width >= 170 else _COMPACT  # narrow terminal: the key figures (--json: all)
    table = Table(title=f"{result.url}  model={result.model or '-'}  {result.started_at}")
    for col in columns:
        table.add_column(col, justify="right", overflow="fold")
    for lv in result.levels:
        flag = " *" if lv.chunk_counted else ""
        cells = dict(zip(_COLUMNS, (
            str(lv.concurrency) + (" !" if lv.unreliable else ""), str(lv.requests), str(lv.failed),
            _fmt(lv.output_tok_s) + flag, _fmt(lv.request_per_s, 2), _fmt(lv.achieved_concurrency, 2),
            _fmt(lv.steady_tok_s), f"{_fmt(lv.ttft_ms.p50)} / {_fmt(lv.ttft_ms.p99)}",
            _fmt(lv.tpot_ms.p50, 2), _fmt(lv.decode_tok_s_per_request.p50) + flag,
            _fmt(lv.tokens_per_chunk, 2), _fmt(lv.server.accept_len, 2),
            _fmt(lv.client.cpu_s_per_1k_tokens, 3), _fmt(lv.client.loop_lag_ms_p99, 1)), strict=True))
        table.add_row(*(cells[c] for c in columns))
    out.print(table)
    if "steady tok/s" in columns:
        spans = "; ".join(
            f"C={lv.concurrency}: {lv.steady_s:.2f} s of the {lv.duration_s or 0:.2f} s window, "
            f"+{lv.steady_span_s[0]:.2f} to +{lv.steady_span_s[1]:.2f} s" if lv.steady_s and lv.steady_span_s
            else f"C={lv.concurrency}: never all busy" for lv in result.levels)
        out.print("steady tok/s: output tokens per second while all C slots had a request in flight (prefill "
                  f"included, the tail with fewer in flight left out); {spans}")
    if "N/SSE events" in columns:
        out.print("N/SSE events: output tokens per text-carrying event, the first token's event included; "
                  "not the accept length (see 'srv accept len')")
    if any(lv.chunk_counted for lv in result.levels):
        out.print("* chunk-counted (lower bound): the server sent no usage, N counts SSE chunks")
    if any(lv.unreliable for lv in result.levels):
        out.print("! client saturated during this level: its figures are not the server's")
    for lv in result.levels:
        for w in lv.warnings:
            out.print(f"C={lv.concurrency}: {w}")


async def _run(spec: Any, probe: Any, as_json: bool) -> BenchResult:
    import asyncio
    import signal

    from rich.console import Console

    from services.bench import BenchProgress, run_benchmark

    err = Console(stderr=True)
    live = err.is_terminal and not as_json
    cancel = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, cancel.set)

    estimated = False
    sys.stderr.write(spec.plan_text() + "\n")  # plain writes: rich's first render blocks the loop for ms

    async def progress(p: BenchProgress) -> None:
        nonlocal estimated
        if not estimated and p.e2e_s is not None:  # after the first request (a warmup unless --warmup 0)
            estimated = True
            line = (f"estimate: ~{_duration(spec.estimate_s(p.e2e_s))} ({p.e2e_s:.2f} s per request at "
                    f"C={p.concurrency}; longer where the server slows down with more streams in flight)")
            sys.stderr.write(("\r" + " " * 90 + "\r" if live else "") + line + "\n")
        total = "" if p.total is None else f"/{p.total}"
        rate = "-" if p.tok_s is None else f"{p.tok_s:,.0f}"
        line = (f"level {p.level}/{p.levels}  C={p.concurrency}  {p.phase}  {p.done}{total} requests  "
                f"{rate} tok/s")
        if live:
            sys.stderr.write("\r" + line.ljust(90))
            sys.stderr.flush()

    try:
        return await run_benchmark(spec, progress=progress, probe=probe, cancel=cancel)
    finally:
        if live:
            sys.stderr.write("\r" + " " * 90 + "\r")
            sys.stderr.flush()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


@click.command("bench")
@click.option("--url", required=True, help="Server base URL, e.g. http://gpu-1:30000")
@click.option("--model", default=None, help="Model name (default: the first one the server lists).")
@click.option("--api", type=click.Choice(["chat", "completions"]), default="chat", show_default=True)
@click.option("--concurrency", "concurrency", default="1,4,16", show_default=True,
              help="Comma-separated concurrency levels.")
@click.option("--requests", "requests", type=int, default=None,
              help="Measured requests per level (default: 4 rounds of C, at least 32, whole rounds).")
@click.option("--duration", "duration", type=float, default=None, help="Seconds of measuring per level.")
@click.option("--warmup", type=int, default=2, show_default=True, help="Warmup requests per level (min).")
@click.option("--input-len", type=int, default=256, show_default=True, help="Synthetic prompt length.")
@click.option("--output-len", type=int, default=256, show_default=True, help="max_tokens (ignore_eos).")
@click.option("--prompts", "prompts", type=click.Path(dir_okay=False), default=None,
              help="JSONL prompts file instead of synthetic prompts.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--timeout", "timeout", type=float, default=600.0, show_default=True,
              help="Deadline of each request, seconds.")
@click.option("--metrics", "metrics", type=click.Choice(["none", "sglang", "vllm"]), default="none",
              show_default=True, help="Read server-side figures from the server's /metrics.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of a table.")
def bench(url: str, model: str | None, api: str, concurrency: str, requests: int | None,
          duration: float | None, warmup: int, input_len: int, output_len: int, prompts: str | None,
          seed: int, timeout: float, metrics: str, as_json: bool) -> None:
    """Benchmark an OpenAI-compatible streaming server (closed loop, per concurrency level)."""
    import orjson

    from services.bench import BenchSpec, MetricsProbe, run_client_loop
    from services.engines import find_engine
    from services.errors import BenchmarkError

    try:
        levels = _levels(concurrency)
    except click.BadParameter as exc:
        _fail(f"--concurrency: {exc.message}")
    if requests is not None and duration is not None:
        _fail("give --requests or --duration, not both")
    if prompts is not None and not Path(prompts).is_file():
        _fail(f"--prompts: no such file: {prompts}")
    try:
        spec = BenchSpec(url=url, model=model, api=api,  # type: ignore[arg-type]
                         concurrency=levels, requests_per_level=requests, duration_s=duration, warmup=warmup,
                         input_len=input_len, output_len=output_len,
                         prompts_file=Path(prompts) if prompts else None, seed=seed, timeout_s=timeout)
    except BenchmarkError as exc:
        _fail(str(exc))
    engine = find_engine(metrics)
    probe = MetricsProbe(spec.base_url, engine) if engine is not None else None
    try:
        result = run_client_loop(_run(spec, probe, as_json))
    except BenchmarkError as exc:
        _fail(str(exc), code=1)
    if as_json:
        click.echo(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        render_table(result)
    if result.cancelled:
        sys.exit(130)
