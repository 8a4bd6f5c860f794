"""`pitcrew doctor [HOST…] [--json] [--timeout S]`: is each configured host set up the way pitcrew needs it?

Runs `services.doctor.Doctor` on the named hosts (all configured hosts by default), in parallel, and prints one
✓ / ⚠ / ✗ line per check with the exact fix, then a link to docs/HOSTS.md. Exit status 0 when no host has a ✗,
1 otherwise, 2 for a bad invocation (an unknown host, bad settings). It changes nothing on any host.
"""

from __future__ import annotations

import asyncio
import sys

import click
import orjson


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"pitcrew doctor: {message}", err=True)
    raise SystemExit(code)


@click.command("doctor")
@click.argument("hosts", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object (for automation).")
@click.option("--timeout", "timeout_s", default=10.0, show_default=True, type=click.FloatRange(0.5, 600),
              help="Seconds each check may take before it is reported ⚠ not checked.")
@click.pass_context
def doctor(ctx: click.Context, hosts: tuple[str, ...], as_json: bool, timeout_s: float) -> None:
    """Check each host's SSH key, unit, engine flags, sudo rule, journal, GPUs, disk and /health (read-only)."""
    from bot.app import host_specs
    from bot.settings import ConfigError, load_settings
    from services.doctor import Doctor, DoctorReport
    from services.errors import PitcrewError
    from services.hosts import HostPool

    try:
        settings = load_settings((ctx.obj or {}).get("config_file"))
    except ConfigError as e:
        _fail(str(e))
        raise
    known = [h.name for h in settings.hosts]
    if not known:
        _fail("no hosts are configured (add them under `hosts` in the settings)")
    unknown = [h for h in hosts if h not in known]
    if unknown:
        _fail(f"unknown host{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; configured: {', '.join(known)}")

    async def go() -> DoctorReport:
        async with HostPool.from_specs(host_specs(settings)) as pool:
            return await Doctor(pool, timeout_s=timeout_s).run(list(hosts))

    try:
        report = asyncio.run(go())
    except PitcrewError as e:
        _fail(str(e), 1)
        raise
    except KeyboardInterrupt:
        _fail("interrupted", 130)
        raise
    if as_json:
        click.echo(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(report.text())
    sys.exit(report.exit_code)
