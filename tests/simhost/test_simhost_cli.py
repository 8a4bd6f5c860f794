"""`pitcrew sim up` in its own process: one JSON line when up, host.json, a clean exit on SIGTERM
that leaves no process behind (service, schedulers, stale holders)."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

from simhost_kit import SCALE

from simhost import procs


def _read(path: Path) -> str:
    return path.read_text()


async def test_sim_up_prints_entry_and_leaves_no_orphans(tmp_path: Path) -> None:
    pitcrew = str(Path(sys.executable).with_name("pitcrew"))
    state = tmp_path / "sim"
    proc = await asyncio.create_subprocess_exec(pitcrew, "sim", "up", "--dir", str(state), "--time-scale",
                                                str(SCALE), "--scenario", "healthy",
                                                stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
        assert set(info) == {"name", "ssh_host", "ssh_port", "user", "client_key", "known_hosts", "unit",
                             "unit_dir", "server_url"}
        assert info["ssh_host"] == "127.0.0.1" and info["unit"] == "sglang.service"
        assert json.loads(_read(state / "host.json")) == info
        assert _read(Path(info["known_hosts"])).startswith(f"[127.0.0.1]:{info['ssh_port']} ")
        fault = await asyncio.create_subprocess_exec(pitcrew, "sim", "fault", "--dir", str(state),
                                                     "stale-gpu-holder", stdout=asyncio.subprocess.PIPE)
        assert (await fault.communicate())[0].decode().startswith("armed")
        env = {"SIMHOST_DIR": str(state), "PATH": f"{state / 'bin'}"}
        pids: list[int] = []
        for _ in range(200):
            show = await asyncio.create_subprocess_exec(str(state / "bin" / "systemctl"), "show", "-p", "MainPID",
                                                        "--value", env=env, stdout=asyncio.subprocess.PIPE)
            main = int((await show.communicate())[0] or 0)
            pids = procs.group_members(main) if main else []
            if len(pids) == 5:  # main + 4 schedulers
                break
            await asyncio.sleep(0.05)
        assert len(pids) == 5
        again = await asyncio.create_subprocess_exec(pitcrew, "sim", "up", "--dir", str(state),
                                                     stderr=asyncio.subprocess.PIPE)
        _, err = await again.communicate()
        assert again.returncode != 0 and b"already running" in err
    finally:
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 20) == 0
    await asyncio.sleep(0.2)
    assert not [p for p in pids if procs.alive(p)]
    holders = [json.loads(_read(f))["pid"] for f in (state / "gpu" / "holders").glob("*.json")]
    assert not [p for p in holders if procs.alive(p)]  # no leftover GPU holder either
