"""Secrets in journal lines never leave pitcrew (issue 8 item 11).

A Slack bot token, an SSH private key (as the several lines a `cat` of the key file prints, and as
one line), a bearer token and API keys are planted in the simulated unit's journal — as the
server's own stdout lines — before `logs`, and continuously while a `try` on the `seed` scenario
fails and is diagnosed. Then every output is searched: the chat replies and every outbox
message, all log records (caplog at DEBUG, with exception text), the job's error and summary,
the bytes of the SQLite database (with its WAL), and `pitcrew history --json` output.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
from pathlib import Path

from rel_kit import job_id_of
from sqlalchemy import select

from services.store.models import OutboxMessage

SLACK = "xoxb-2718281828-3141592653-QwErTyUiOpAsDfGhJkLzXcVb"
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQ"
RSA_BODY = "MIIEowIBAAKCAQEAzQ9pL7sEcReTkEyInOnElInEZzZz"
BEARER = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXBheWxvYWQ.SiGnAtUrEzZz9"
OPENAI = "sk-proj-ZyXwVuTsRqPoNmLkJiHgFeDcBa987654"
HF = "hf_PlAnTeDhUgGiNgFaCeToKeN42"
NEEDLES = [SLACK, KEY_BODY, RSA_BODY, BEARER, OPENAI, HF, "QwErTyUiOpAsDfGhJkLzXcVb", "c2VjcmV0LXBheWxvYWQ"]
LINES = [
    f"slack notifier configured with token {SLACK}",
    "-----BEGIN OPENSSH PRIVATE KEY-----", KEY_BODY, "-----END OPENSSH PRIVATE KEY-----",
    f"ssh key: -----BEGIN RSA PRIVATE KEY----- {RSA_BODY} -----END RSA PRIVATE KEY-----",
    f"request headers: {{'Authorization': 'Bearer {BEARER}'}}",
    f"Traceback: RuntimeError: upstream refused OPENAI_API_KEY={OPENAI}",
    f"launch args: --hf-token {HF} --port 30000",
]
BENCH = {"concurrency": [1, 8], "requests_per_level": 8, "warmup": 0, "input_len": 16, "output_len": 48}


def _plant(sim) -> None:
    sup = sim.supervisor
    for line in LINES:
        sup._emit_service_line(sup.main_pid, line)  # the server's own stdout line, as journald stores it


def _leaks(text: str) -> list[str]:
    return [n for n in NEEDLES if n in text]


async def test_planted_secrets_appear_in_no_output(rel_bot, tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    bot = await rel_bot("seed", bench=BENCH)
    host = bot.sim.info["name"]
    await bot.sim.wait_ready(30)
    _plant(bot.sim)
    replies = [await bot.say(f"logs {host} 40")]
    assert "journal lines" in replies[0].text

    async def keep_planting() -> None:
        while True:
            with contextlib.suppress(Exception):
                _plant(bot.sim)
            await asyncio.sleep(0.05)

    planter = asyncio.create_task(keep_planting())
    try:
        job_id = job_id_of(await bot.say("try 10 steps"))
        job = await bot.wait_job(job_id, 120)
    finally:
        planter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await planter
    assert job.state == "failed"
    replies += [await bot.say(f"show {job_id}"), await bot.say(f"logs {host} 60"), await bot.say("history")]
    async with bot.core.db.sessions() as s:
        outbox = (await s.execute(select(OutboxMessage))).scalars().all()
    assert any(m.key == f"job:{job_id}:failure" for m in outbox), [m.key for m in outbox]

    found: dict[str, list[str]] = {}
    for r in replies:
        found.update({f"reply {r.text[:40]!r}": _leaks(f"{r.text}\n{r.code or ''}\n{r.tables!r}")})
    for m in outbox:
        found[f"outbox {m.key}"] = _leaks(str(m.payload))
    found["job"] = _leaks(f"{job.error}\n{job.summary}\n{job.result}")
    for rec in caplog.records:
        found[f"log {rec.name}"] = found.get(f"log {rec.name}", []) + _leaks(
            f"{rec.getMessage()}\n{rec.exc_text or ''}\n{rec.exc_info!r}")

    await bot.core.db.engine.dispose()  # flush the SQLite WAL to the file's bytes as well
    db_file = Path(str(bot.core.db.url).split(":///", 1)[1])
    raw = b"".join(p.read_bytes() for p in db_file.parent.glob(db_file.name + "*") if p.is_file())
    found["database bytes"] = [n for n in NEEDLES if n.encode() in raw]
    env = {**os.environ, "PITCREW_DB__URL": bot.core.db.url}
    hist = await asyncio.to_thread(subprocess.run, [str(Path(sys.executable).with_name("pitcrew")), "history",
                                                    "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert hist.returncode == 0, hist.stderr
    assert "try 10 steps" in hist.stdout
    found["pitcrew history"] = _leaks(hist.stdout + hist.stderr)
    assert {k: v for k, v in found.items() if v} == {}
