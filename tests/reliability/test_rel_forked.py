"""The reliability suite's bot processes forked from the fork server (`rel_kit.start_bot_proc`) behave as the
subprocesses they replace: exit status (a signal's as -N), stderr when asked for, and any number of waiters."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable
from pathlib import Path

from rel_kit import start_bot_proc


async def test_a_failed_start_exits_1_with_its_traceback_to_every_waiter(tmp_path: Path) -> None:
    proc = await start_bot_proc("sqlite+aiosqlite:///unused.db", tmp_path / "no-such-host.json", stderr=True)
    codes = await asyncio.wait_for(asyncio.gather(proc.proc.wait(), proc.proc.wait()), 60)
    assert codes == [1, 1] and proc.proc.returncode == 1 and await proc.stop() == 1
    assert proc.proc.stderr is not None
    err = (await proc.proc.stderr.read()).decode()
    assert "FileNotFoundError" in err and "no-such-host.json" in err, err


async def test_a_running_bot_ends_by_sigkill_as_minus_9_and_by_sigterm_as_0(
        tmp_path: Path, migrated_sqlite: Callable[[Path], str]) -> None:
    host = tmp_path / "host.json"
    host.write_text(json.dumps({"name": "gpu-1", "ssh_host": "127.0.0.1", "ssh_port": 9, "user": "u",
                                "client_key": f"{tmp_path}/k", "known_hosts": f"{tmp_path}/kh",
                                "unit": "sglang.service", "unit_dir": "/etc/systemd/system",
                                "server_url": "http://127.0.0.1:9"}))
    for sig, want in ((signal.SIGKILL, -9), (signal.SIGTERM, 0)):
        bot = await start_bot_proc(migrated_sqlite(tmp_path / f"bot{want}.db"), host)
        ready = await bot.wait_event(lambda e: e.get("event") == "ready", within=60)
        assert ready["interrupted"] == []
        bot.proc.send_signal(sig)
        assert await asyncio.wait_for(bot.proc.wait(), 30) == want
        assert (await bot.stop()) == want
