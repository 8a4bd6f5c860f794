"""The `pitcrew` command starts without the product's heavy dependencies: `import bot.cli`, `pitcrew --help` and
each command's `--help` load click and the command modules only (bot/cli.py's `LazyGroup`). The start-up time
itself is measured by benchmarks/bench_cli_start.py, not here."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

# What a command that needs them imports in its body; none of them may load before a command runs.
HEAVY = ("sqlalchemy", "alembic", "asyncssh", "slack_bolt", "slack_sdk", "aiohttp", "httpx", "uvloop", "rich",
         "pydantic", "apscheduler", "services.store", "services.bench", "services.diagnosis", "simhost.host")

PROBE = """
import json, sys
argv = json.loads(sys.argv[1])
import bot.cli
if argv is not None:
    try:
        bot.cli.main(argv, prog_name="pitcrew")
    except SystemExit as e:
        assert e.code in json.loads(sys.argv[3]), e.code
heavy = json.loads(sys.argv[2])
print(json.dumps(sorted({m.split(".")[0] if m.split(".")[0] in heavy else m for m in sys.modules} & set(heavy))))
"""


def _heavy_loaded(argv: list[str] | None, exit_codes: tuple[int | None, ...] = (0, None)) -> tuple[list[str], str]:
    run = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY), json.dumps(exit_codes)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    *help_lines, last = run.stdout.strip().splitlines()
    return json.loads(last), "\n".join(help_lines)


@pytest.mark.parametrize("argv", [None, ["--help"], ["bench", "--help"], ["diagnose", "--help"],
                                  ["sim", "--help"], ["sim", "up", "--help"]],
                         ids=["import", "help", "bench-help", "diagnose-help", "sim-help", "sim-up-help"])
def test_cli_start_loads_no_heavy_dependency(argv: list[str] | None) -> None:
    loaded, shown = _heavy_loaded(argv)
    assert loaded == [], f"`pitcrew {' '.join(argv or [])}` imported {loaded} before any command ran"
    if argv == ["--help"]:  # the lazy commands are listed with their help lines
        for name in ("bench", "diagnose", "sim", "migrate"):
            assert f"  {name} " in shown, shown
    if argv == ["bench", "--help"]:
        assert "--concurrency" in shown


def test_the_probe_sees_an_import_a_command_makes() -> None:
    """The check above can fail: running `diagnose` (on a missing file: exit 2) loads the diagnosis."""
    loaded, _ = _heavy_loaded(["diagnose", "/nonexistent/journal.json"], exit_codes=(2,))
    assert "services.diagnosis" in loaded


def test_every_lazy_command_resolves_to_its_own_name() -> None:
    from bot.cli import LAZY_COMMANDS, main

    ctx = click.Context(main)
    for name in LAZY_COMMANDS:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
    assert set(LAZY_COMMANDS) <= set(main.list_commands(ctx))


def test_the_bot_imports_no_optimizer_until_a_tune_starts() -> None:
    """`pitcrew serve` builds the whole app; optuna (and numpy's OpenBLAS, whose `mbind()` the deploy unit's system
    call filter refuses) is imported only by `TuneSearch`."""
    code = ("import sys, bot.app, services.experiments.tune as t; before = {m for m in ('optuna', 'numpy') if m in "
            "sys.modules}; t.TuneSearch; print(sorted(before))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", run.stdout
