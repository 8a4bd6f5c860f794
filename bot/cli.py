"""The `pitcrew` command line: one click group; each command's docstring is its help line.

Owns the dispatch: commands that live in their own module are named in `LAZY_COMMANDS` and imported
only when click resolves them (`LazyGroup`), and every command module imports click (and plain
values) at the top and the rest inside its command body, so `pitcrew --help`, `pitcrew bench --help`
and each command's start pay only for what that command runs (no SQLAlchemy, asyncssh, Slack, httpx:
tests/architecture/test_cli_start.py; the figure is benchmarks/bench_cli_start.py's).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from bot.settings import Settings

T = TypeVar("T")

# command name -> "module:attribute" of a command that lives in its own module
LAZY_COMMANDS = {
    "bench": "bot.cli_bench:bench",
    "diagnose": "bot.cli_diagnose:diagnose",
    "doctor": "bot.cli_doctor:doctor",
    "sim": "simhost.cli:sim",
}


class LazyGroup(click.Group):
    """A click group that imports a command's module when click resolves that command."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = LAZY_COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command), target
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_file", type=click.Path(dir_okay=False), envvar="PITCREW_CONFIG",
              help="TOML settings file (also PITCREW_CONFIG).")
@click.pass_context
def main(ctx: click.Context, config_file: str | None) -> None:
    """pitcrew: tune and watch LLM inference servers from chat."""
    ctx.obj = {"config_file": config_file}


def fail(message: str, code: int = 2) -> None:
    """Print one clear line to stderr and exit (no traceback)."""
    click.echo(f"pitcrew: {message}", err=True)
    sys.exit(code)


def load(ctx: click.Context) -> Settings:
    """Settings for this invocation, or one line naming the bad field and exit 2."""
    from bot.settings import ConfigError, load_settings

    try:
        return load_settings((ctx.obj or {}).get("config_file"))
    except ConfigError as e:
        fail(str(e))
        raise  # unreachable: fail() exits


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine; expected errors become one line on stderr."""
    import asyncio

    from services.errors import PitcrewError

    try:
        return asyncio.run(coro)
    except PitcrewError as e:
        fail(str(e), 1)
        raise
    except KeyboardInterrupt:
        fail("interrupted", 130)
        raise


@main.command()
@click.pass_context
def migrate(ctx: click.Context) -> None:
    """Create or upgrade the database schema (safe to run again)."""
    settings = load(ctx)

    async def go() -> None:
        from services.store import Database

        db = Database(settings.db.url)
        try:
            await db.migrate()
        finally:
            await db.close()

    run_async(go())
    click.echo(f"database is up to date ({_safe_url(settings.db.url)})")


@main.command()
@click.option("--host", default=None, help="Only events about this host.")
@click.option("--since", default=None, help="Only events newer than this, e.g. 7d, 12h, 30m.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.option("--csv", "as_csv", is_flag=True, help="CSV with a header row.")
@click.option("--limit", default=1000, show_default=True, type=click.IntRange(1, 1_000_000))
@click.option("--chart", "chart", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Instead: draw the benchmark history (median decode tok/s with its 95 % interval) to this PNG.")
@click.pass_context
def history(ctx: click.Context, host: str | None, since: str | None, as_json: bool, as_csv: bool,
            limit: int, chart: Path | None) -> None:
    """Print or export the audit log (who did what, where, when), or chart the benchmark history."""
    from bot.export import print_history, write_history_chart

    settings = load(ctx)
    if as_json and as_csv:
        fail("choose one of --json and --csv")
    if chart is not None:
        click.echo(run_async(write_history_chart(settings.db.url, host=host, path=chart,
                                                 limit=min(limit, 60))))
        return
    run_async(print_history(settings.db.url, host=host, since=since, fmt="json" if as_json else
                            "csv" if as_csv else "table", limit=limit))


@main.command()
@click.option("--script", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Run these commands (one per line) and exit when all jobs have finished.")
@click.option("--scenario", default="seed", show_default=True,
              type=click.Choice(["seed", "healthy", "stale-gpu", "port-in-use"]), help="Simulated host scenario.")
@click.option("--time-scale", default=0.05, show_default=True, type=click.FloatRange(0.001, 1.0),
              help="How fast simulated loading, restarts and stop timeouts run (1.0 = real time).")
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the demo's files (database, simulated host) in this directory.")
@click.option("--charts", "charts_dir", default=Path("pitcrew-demo"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Write every chart the demo posts here.")
@click.option("--noise", "noise_pct", default=0.0, show_default=True, type=click.FloatRange(0, 20),
              help="Per-run speed jitter of the simulated server (sd, percent); 0 = off.")
@click.option("--engine", default="sglang", show_default=True, type=click.Choice(["sglang", "vllm", "llamacpp"]),
              help="The inference server on the simulated host: SGLang 0.5.9 or vLLM 0.11 (simulated), or llama.cpp's "
                   "real llama-server with SmolLM2 on the CPU (build it once with `make engine`).")
@click.option("--systemd", "systemd", default="python", show_default=True, type=click.Choice(["python", "real"]),
              help="The host's service manager: the sim's supervisor, or systemd 252 itself (needs root).")
@click.option("--real-engine", is_flag=True,
              help="With --engine vllm: the real `vllm serve` on CPU with a small real model (`make vllm` first).")
@click.option("--vllm-version", default="0.32", show_default=True, type=click.Choice(["0.32", "0.11"]),
              help="With --real-engine: which real vLLM.")
def demo(script: Path | None, scenario: str, time_scale: float, keep: Path | None, charts_dir: Path,
         noise_pct: float, engine: str, systemd: str, real_engine: bool, vllm_version: str) -> None:
    """Run the whole product locally: a simulated GPU host, SQLite and a console chat."""
    from bot.demo import run_demo

    if systemd == "real":
        from simhost.systemd import unavailable

        if (why := unavailable()) is not None:
            fail(f"real systemd cannot be booted here: {why} (use --systemd python)")
    if real_engine:
        from simhost.realvllm import unavailable as engine_missing

        if engine != "vllm":
            fail("--real-engine needs --engine vllm")
        if (why := engine_missing(vllm_version)) is not None:
            fail(why)

    if engine == "llamacpp":
        from simhost.llamacpp.build import EngineNotBuilt, built

        try:
            built()
        except EngineNotBuilt as exc:
            fail(str(exc))

    lines = script.read_text().splitlines() if script else None
    code = run_async(run_demo(script_lines=lines, scenario=scenario, time_scale=time_scale, keep=keep,
                              interactive=sys.stdin.isatty(), files_dir=charts_dir, noise_pct=noise_pct,
                              engine=engine, systemd=systemd, real_engine=real_engine,
                              vllm_version=vllm_version))
    sys.exit(code)


@main.command()
@click.pass_context
def serve(ctx: click.Context) -> None:
    """Run the Slack app for the configured hosts (Socket Mode, or HTTP with PITCREW_SLACK__MODE=http)."""
    from bot.serve import serve as run_serve
    from bot.settings import ConfigError

    settings = load(ctx)
    try:
        run_async(run_serve(settings))
    except ConfigError as e:
        fail(str(e))


def _safe_url(url: str) -> str:
    if "@" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://…@{rest.split('@', 1)[1]}"
    return url
