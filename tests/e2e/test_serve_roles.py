"""Roles fail closed (issue 13): `pitcrew serve` with Slack tokens but no operator or admin refuses to
start and says how to grant one; with a grant (by user id or by user group) it gets past that check."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path


async def _serve(tmp_path: Path, extra: dict[str, str], *, within: float = 20.0) -> tuple[int | None, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITCREW_")}
    env.update({"PITCREW_SLACK__BOT_TOKEN": "xoxb-not-used", "PITCREW_SLACK__APP_TOKEN": "xapp-not-used",
                "PITCREW_SLACK__API_BASE_URL": "http://127.0.0.1:9/api/",
                "PITCREW_DB__URL": f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}", **extra})
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "serve", env=env, cwd=tmp_path,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), within)
        return proc.returncode, out.decode()
    except TimeoutError:
        proc.kill()
        out, _ = await proc.communicate()
        return None, out.decode()


async def test_serve_without_roles_refuses_and_explains_how_to_grant_one(tmp_path: Path) -> None:
    code, out = await _serve(tmp_path, {})
    assert code not in (None, 0), out
    assert "grants no operator or admin" in out and "PITCREW_POLICY__ROLES" in out, out
    assert "Copy member ID" in out and "group" in out
    assert "Traceback" not in out
    assert not (tmp_path / "bot.db").exists()  # nothing was started


async def test_serve_with_a_group_granted_gets_past_the_role_check(tmp_path: Path) -> None:
    roles = {"*": "viewer", "gpu-oncall": "operator"}
    _code, out = await _serve(tmp_path, {"PITCREW_POLICY__ROLES": json.dumps(roles)}, within=8.0)
    # it goes on to start (and fails later on the unreachable Slack URL, or is still retrying)
    assert "grants no operator or admin" not in out, out
    assert (tmp_path / "bot.db").exists()  # it got as far as opening its database
