"""Helpers of the simulated-host tests: run the sim's tools locally, read its journal, check formats."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

from simhost.host import SimHost

EXAMPLES = json.loads((Path(__file__).parents[1] / "data" / "formats" / "examples.json").read_text())
PATTERNS = {e["kind"]: re.compile(e["pattern"]) for e in EXAMPLES}
SCALE = 0.005


def assert_format(kind: str, line: str) -> None:
    assert PATTERNS[kind].match(line), f"{kind}: {line!r} does not match {PATTERNS[kind].pattern}"


def tool_env(host: SimHost) -> dict[str, str]:
    return {**os.environ, "SIMHOST_DIR": str(host.root), "PATH": f"{host.root / 'bin'}:{os.environ['PATH']}"}


async def sh(host: SimHost, cmd: str, within: float = 20.0) -> tuple[int, str, str]:
    """Run `bash -c cmd` locally with the sim's tools first on PATH (as an SSH session would)."""
    proc = await asyncio.create_subprocess_exec("bash", "-c", cmd, env=tool_env(host), cwd=host.root,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), within)
    return proc.returncode or 0, out.decode(), err.decode()


def journal(host: SimHost, unit: str | None = "sglang.service") -> list[dict[str, str]]:
    from simhost.journal import iter_all, journal_path, unit_matches

    return [e for e in iter_all(journal_path(host.root)) if unit is None or unit_matches(e, unit)]


def messages(host: SimHost, unit: str | None = "sglang.service") -> list[str]:
    return [e.get("MESSAGE", "") for e in journal(host, unit)]


async def wait_for(predicate, within: float = 20.0, step: float = 0.05) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        if predicate():
            return
        await asyncio.sleep(step)
    raise AssertionError("condition not reached in time")


