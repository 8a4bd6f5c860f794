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


async def test_sim_up_with_real_systemd_prints_entry_and_a_kill_of_it_leaves_nothing(tmp_path: Path) -> None:
    """`pitcrew sim up --systemd real`: the host entry names its own sshd, `pitcrew` and sudo; over that SSH PID 1
    is systemd 252 and the unit is active. SIGKILL of `sim up` itself (no teardown at all) still ends the host:
    the namespace's launcher dies with its parent and takes PID 1 with it."""
    import asyncssh
    import pytest

    from simhost.systemd import unavailable
    from simhost.systemd.namespace import CGROUP_PREFIX

    if unavailable() is not None:
        pytest.skip(f"real systemd unavailable: {unavailable()}")
    pitcrew = str(Path(sys.executable).with_name("pitcrew"))
    state = tmp_path / "sim"
    proc = await asyncio.create_subprocess_exec(pitcrew, "sim", "up", "--systemd", "real", "--dir", str(state),
                                                "--time-scale", str(SCALE), stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        info = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))
        assert (info["user"], info["unit_dir"], info["sudo"], info["systemd"]) == (
            "pitcrew", "/etc/systemd/system", True, "real")
        async with asyncssh.connect(info["ssh_host"], info["ssh_port"], username=info["user"],
                                    client_keys=[info["client_key"]], known_hosts=info["known_hosts"]) as conn:
            assert (await conn.run("ps -p 1 -o comm=")).stdout.strip() == "systemd"
            assert str((await conn.run("systemctl --version")).stdout).startswith("systemd 252 ")
            for _ in range(100):
                if (await conn.run("systemctl is-active sglang.service")).stdout.strip() == "active":
                    break
                await asyncio.sleep(0.05)
            assert (await conn.run("systemctl is-active sglang.service")).stdout.strip() == "active"
    finally:
        proc.kill()
        await proc.wait()
    ours = f"{CGROUP_PREFIX}{(state / 'systemd' / 'token').read_text()}"  # other tests' hosts may be running
    for _ in range(100):
        inside = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _in_ours(p, ours)]
        if not inside:
            break
        await asyncio.sleep(0.05)
    assert inside == []


def _in_ours(proc_dir: Path, prefix: str) -> bool:
    try:
        return prefix in (proc_dir / "cgroup").read_text()
    except OSError:
        return False
