"""`pitcrew diagnose FILE [--extra FILE] [--json]`: the incident diagnosis offline, for post-mortems.

Reads a saved `journalctl -u UNIT -o json` export (one JSON object per line; bad lines are counted and
skipped), optional side evidence (`--extra`, one JSON object), and prints the diagnosis for people or
as JSON. A file that cannot be read or holds no journal entries is one clear line on stderr, exit 2.
Only click is imported at the top; the diagnosis and the journal reader when the command runs (bot/cli.py).
"""

from __future__ import annotations

from typing import Any

import click


def diagnose_file(path: str, side: Any = None, *, unit: str | None = None) -> tuple[Any, Any]:
    """The ingest and diagnosis of `pitcrew diagnose` (shared with its benchmark): one streaming pass.

    Returns (Diagnosis, ParseStats). Entries are parsed and handed to diagnosis one at a time, so memory
    does not grow with the journal. Raises OSError when the file cannot be read.
    """
    from services.diagnosis import diagnose as run_diagnosis
    from services.journal import ParseStats, iter_entries

    stats = ParseStats()
    with open(path, "rb") as fh:
        result = run_diagnosis(iter_entries(fh, stats), side, unit=unit)
    return result, stats


def _fail(message: str) -> None:
    click.echo(f"pitcrew diagnose: {message}", err=True)
    raise SystemExit(2)


@click.command("diagnose")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--extra", "extra_file", type=click.Path(dir_okay=False),
              help="Side evidence as one JSON object (systemctl_show, nvidia_smi_apps, kernel_journal, actions...).")
@click.option("--json", "as_json", is_flag=True, help="Print the diagnosis as one JSON object.")
@click.option("--unit", default=None, help="Unit name (default: the unit most entries belong to).")
def diagnose(file: str, extra_file: str | None, as_json: bool, unit: str | None) -> None:
    """Diagnose a saved journalctl -o json export of a unit (post-mortem)."""
    import orjson

    from services.diagnosis import SideEvidence
    from services.errors import PitcrewError

    side = SideEvidence()
    if extra_file:
        try:
            with open(extra_file, "rb") as fh:
                side = SideEvidence.from_json(orjson.loads(fh.read()))
        except OSError as exc:
            _fail(f"cannot read {extra_file}: {exc.strerror or exc}")
        except orjson.JSONDecodeError as exc:
            _fail(f"{extra_file} is not valid JSON: {exc}")
        except PitcrewError as exc:
            _fail(f"{extra_file}: {exc}")
    try:
        result, stats = diagnose_file(file, side, unit=unit)
    except OSError as exc:
        _fail(f"cannot read {file}: {exc.strerror or exc}")
    if not stats.entries:
        _fail(f"{file} holds no journal entries ({stats.bad_lines} unreadable lines); "
              "expected `journalctl -u UNIT -o json` output, one JSON object per line")
    if as_json:
        click.echo(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2).decode())
        return
    click.echo(f"cause:       {result.cause} (confidence {result.confidence:.2f})")
    loop = f"yes, restart counter {result.restarts}" if result.restart_loop else f"no (restarts: {result.restarts})"
    click.echo(f"restart loop: {loop}")
    click.echo(f"summary:     {result.summary}")
    if result.evidence:
        click.echo("evidence:")
        for line in result.evidence:
            click.echo(f"  | {line}")
    if result.ran_before is not None:
        click.echo(f"ran before:  {result.ran_before.describe()}")
    if result.config_change:
        click.echo(f"change:      {result.config_change}")
    if result.stale_pids:
        click.echo(f"stale pids:  {', '.join(map(str, result.stale_pids))}")
    click.echo(f"recommend:   {result.recommendation}")
    if stats.bad_lines:
        click.echo(f"({stats.bad_lines} of {stats.lines} lines were not journal entries and were skipped)")
