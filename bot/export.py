"""Exports for the command line: the audit history as a table, JSON lines or CSV, and the benchmark
history as a chart (PNG)."""

from __future__ import annotations

import asyncio
import csv
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click
import orjson

from handlers.charts import history_png
from services.errors import UserInputError
from services.experiments import Results
from services.store import AuditLog, AuditQuery, Database

_SPAN = re.compile(r"^(\d{1,6})([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str) -> datetime:
    """'7d', '12h', '30m' or an ISO-8601 time → an aware UTC datetime."""
    m = _SPAN.match(text.strip())
    if m:
        return datetime.now(UTC) - timedelta(**{_UNITS[m.group(2)]: int(m.group(1))})
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UserInputError(f"--since takes a span like 7d, 12h, 30m or an ISO time, not {text!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


async def print_history(url: str, *, host: str | None, since: str | None, fmt: str, limit: int) -> None:
    query = AuditQuery(host=host, since=parse_since(since) if since else None, limit=limit)
    db = Database(url)
    try:
        await db.migrate()
        records = await AuditLog(db).query(query)
    finally:
        await db.close()
    if fmt == "json":
        for r in records:
            sys.stdout.buffer.write(orjson.dumps(r.to_json()) + b"\n")
        return
    cols = ["id", "at", "actor_name", "transport", "channel", "action", "host", "outcome", "command_text"]
    if fmt == "csv":
        w = csv.writer(sys.stdout)
        w.writerow(cols)
        for r in records:
            d = r.to_json()
            w.writerow([d[c] if d[c] is not None else "" for c in cols])
        return
    if not records:
        click.echo("no audit events match")
        return
    for r in records:
        click.echo(f"{r.at:%Y-%m-%d %H:%M:%S} {r.actor_name or r.actor_id:<12} {r.action:<12} "
                   f"{r.host or '-':<10} {r.outcome:<9} {r.command_text}")


CHART_RUNS = 60


async def write_history_chart(url: str, *, host: str | None, path: Path, limit: int = CHART_RUNS) -> str:
    """Draw the newest `limit` benchmark runs (of `host`, or of every host when there is only one) to `path`."""
    db = Database(url)
    try:
        await db.migrate()
        runs = await Results(db).recent(host, limit)
    finally:
        await db.close()
    hosts = sorted({r.host for r in runs})
    if not runs:
        raise UserInputError("no benchmark runs to chart" + (f" for {host}" if host else ""))
    if len(hosts) > 1:
        raise UserInputError(f"benchmark runs of several hosts ({', '.join(hosts)}): choose one with --host")
    png = await history_png(runs)
    if png is None:
        raise UserInputError("the benchmark runs have no decode figures to chart")
    await asyncio.to_thread(path.write_bytes, png)
    return f"chart of {len(runs)} benchmark runs of {hosts[0]} written to {path}"
