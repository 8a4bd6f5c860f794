"""llama.cpp as pitcrew's third engine, on the REAL engine: the host's unit runs llama.cpp's own `llama-server`
(built by `make engine`) with SmolLM2-135M on the CPU, reached over SSH, through the router; the GPU stays
simulated. Skipped, with the reason shown, where the engine is not built."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from support.llamacpp_kit import real_llamacpp

from services.engines import engine_named
from services.units import unit_engine
from simhost.llamacpp.build import built

pytestmark = [real_llamacpp(), pytest.mark.slow]

# two levels (C=1 and the unit's two slots), few short requests: the engine decodes ~45 tokens/s per request here;
# 32-token answers (64 took ~16 CPU-s of the engine per try, 32 ~11): every level still drafts, its accept rate is read
# (0.47 at C=1, 0.40 at C=2 in each of 3 runs)
BENCH = {"concurrency": [1, 2], "requests_per_level": 4, "warmup": 1, "input_len": 48, "output_len": 32}


def _binary_version() -> str:
    """The build's version as its own ``--version`` prints it (``version: 0.5.0-dev (build 1, commit 0c1e57098)``
    on stderr), read the way pitcrew reads the ``-lv 4`` build line: ``b1 (0c1e57098)``."""
    out = subprocess.run([str(built().server), "--version"], capture_output=True, text=True, timeout=30)
    version = next(v for ln in (out.stdout + out.stderr).splitlines() if (v := engine_named("llamacpp").version_of(ln)))
    return version


def _status_engine(reply: object) -> str:
    table = reply.tables[0]  # type: ignore[attr-defined]
    (row,) = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    return str(row["engine"])


def _job_id(text: str) -> int:
    m = re.search(r"Job (\d+)", text)
    assert m is not None, text
    return int(m.group(1))


async def test_a_removed_flag_is_refused_in_the_engines_own_words_and_nothing_changes(make_bot) -> None:
    bot = await make_bot("healthy", engine="llamacpp", bench=BENCH)
    await bot.sim.wait_ready(60)
    # no start recorded yet, and the default verbosity logs no build line: status asks the running server (/props)
    assert _status_engine(await bot.say("status")) == f"llama.cpp {_binary_version()}"
    before, pid = bot.unit_text(), await bot.sim.main_pid()
    reply = await bot.say("try --draft-max 8")
    text = reply.text + "".join(d.reply.text + (d.reply.code or "") for d in bot.messages())
    assert "llama.cpp refuses the command line" in text, text
    assert ('error while handling argument "--draft-max": the argument has been removed. use --spec-draft-n-max or '
            "--spec-ngram-mod-n-max") in text, text
    assert bot.unit_text() == before and await bot.sim.main_pid() == pid
    assert not await bot.core.jobs.queue()
    reply = await bot.say("try mem 0.5")  # a word with no meaning for this engine: said why, nothing queued
    assert "'mem' has no meaning on llama.cpp" in reply.text and "--ctx-size" in reply.text, reply.text
    assert bot.unit_text() == before and not await bot.core.jobs.queue()


async def test_try_2_draft_tokens_runs_the_real_engine_with_its_own_accept_rate(make_bot, systemd: str) -> None:
    """On both service managers: the real engine under systemd 252 itself too."""
    bot = await make_bot("healthy", engine="llamacpp", bench=BENCH, confirm=("try",), systemd=systemd)
    await bot.sim.wait_ready(60)
    before = bot.unit_text()
    assert unit_engine(before) == "llamacpp"
    reply = await bot.say("try 2 draft tokens")
    job_id = _job_id(reply.text)
    await bot.drain()
    (preview,) = bot.messages(lambda d: d.key == f"job:{job_id}" and not d.edit)
    assert (preview.reply.code or "").strip().splitlines() == ["--spec-ngram-simple-size-m 3 -> 2"]
    assert "llama.cpp's own parser accepts the command line" in preview.reply.text, preview.reply.text
    await bot.say(f"yes {job_id}")
    job = await bot.wait_job(job_id, timeout=240)
    assert job.state == "succeeded", job.summary
    assert "--spec-ngram-simple-size-m 2" in bot.unit_text()
    (table_msg,) = bot.messages(lambda d: d.thread_of == f"job:{job_id}" and bool(d.reply.tables))
    table = table_msg.reply.tables[0]
    assert table.title is not None and table.title.startswith("draft tokens 2 on "), table.title
    rows = [dict(zip(table.columns, r, strict=True)) for r in table.rows]
    assert [r["C"] for r in rows] == ["1", "2"], rows
    for row in rows:
        decode = float(row["decode tok/s/req"].split()[0].replace(",", ""))
        assert 3 < decode < 400, row  # real tokens from a real CPU
        rate = row["accept rate"]
        assert rate not in ("", "—"), row  # from llamacpp:spec_decode_* on /metrics
    run = (await bot.core.results.recent(bot.sim.info["name"], 1))[0]
    assert run.capacity["engine"] == "llamacpp"
    assert run.capacity["max_running_requests"] == 2 and run.capacity["context_len"] == 2048, run.capacity
    # the start logged no build line (default verbosity): the version is the running server's /props build_info
    assert not any(engine_named("llamacpp").version_of(d.reply.text) for d in bot.messages())
    assert run.capacity["engine_version"] == _binary_version(), run.capacity
    assert _status_engine(await bot.say("status")) == f"llama.cpp {_binary_version()}"


async def test_a_context_beyond_the_units_memory_limit_is_oom_killed_diagnosed_and_rolled_back(make_bot) -> None:
    bot = await make_bot("healthy", engine="llamacpp", bench=BENCH)
    await bot.sim.wait_ready(60)
    before = bot.unit_text()
    reply = await bot.say("try context 131072")
    job = await bot.wait_job(_job_id(reply.text), timeout=240)
    assert job.state == "failed", job.summary
    result = job.result or {}
    diagnosis = result.get("diagnosis") or {}
    assert diagnosis.get("cause") == "host_oom_kill", json.dumps(diagnosis, indent=1)[:6000]
    evidence = "\n".join(diagnosis.get("evidence") or [])
    assert "A process of this unit has been killed by the OOM killer." in evidence, evidence
    assert "llama_context: n_ctx_seq (65536) > n_ctx_train (8192)" in evidence, evidence  # the engine's own line
    assert result.get("rolled_back_to") is not None
    assert bot.unit_text() == before
    await bot.sim.wait_ready(60)
