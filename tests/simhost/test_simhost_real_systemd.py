"""The simulated host under systemd 252 itself: what a login over its sshd sees, and that booting it is safe.

Safety is the point of half of these: the machine's own /tmp and PostgreSQL are untouched by a boot, and
20 boots and teardowns leave no process, cgroup or mount behind.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import asyncssh
import pytest

from simhost.host import SimHost
from simhost.systemd import sudoers_rule, unavailable
from simhost.systemd.namespace import CGROUP_PREFIX, host_cgroups

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"real systemd unavailable: {unavailable()}")

SCALE = 0.01


async def _login(info: dict[str, object]) -> asyncssh.SSHClientConnection:
    return await asyncssh.connect(str(info["ssh_host"]), int(str(info["ssh_port"])), username=str(info["user"]),
                                  client_keys=[str(info["client_key"])], known_hosts=str(info["known_hosts"]))


async def _sh(conn: asyncssh.SSHClientConnection, command: str) -> tuple[int, str]:
    res = await conn.run(command, check=False)
    return int(res.exit_status or 0), f"{res.stdout}{res.stderr}"


def _leftovers(*sims: SimHost) -> list[str]:
    """Anything of these booted test hosts still on this machine: processes in their cgroups, the cgroups, their
    overlay mounts (other tests' hosts may be running at the same time under xdist)."""
    tokens = [sim.real.ns.token for sim in sims if sim.real is not None]
    assert len(tokens) == len(sims)
    names = [f"{CGROUP_PREFIX}{t}" for t in tokens]
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            text = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            continue
        found += [f"process {pid}" for name in names if name in text]
    found += [f"cgroup {group}" for t in tokens for group in host_cgroups(t) if group.exists()]
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    roots = [str(sim.root / "systemd" / "ovl") for sim in sims]
    found += [f"mount {line}" for line in mounts if any(r in line for r in roots)]
    return found


def _postgres() -> tuple[bool, str]:
    """Whether PostgreSQL answers on 127.0.0.1:5432, and its postmaster's pid file content."""
    with socket.socket() as sock:
        sock.settimeout(2)
        up = sock.connect_ex(("127.0.0.1", 5432)) == 0
    pids = sorted(str(p.read_text().split()[0]) for p in Path("/var/lib/postgresql").rglob("postmaster.pid"))
    return up, ",".join(pids)


async def test_a_login_sees_systemd_252_as_pid_1_the_unit_active_and_its_lines_in_the_journal(tmp_path: Path) -> None:
    # systemd-tmpfiles --boot --remove runs in the host: it must empty the host's /tmp, never the machine's
    sentinel = Path("/tmp") / f"pitcrew-sentinel-{os.getpid()}-{tmp_path.name}"
    sentinel.write_text("still here")
    pg_before = _postgres()
    try:
        async with SimHost(tmp_path / "sim", scenario="healthy", time_scale=SCALE, systemd="real") as sim:
            await sim.wait_ready(30)
            async with await _login(sim.info) as conn:
                assert (await _sh(conn, "ps -p 1 -o comm="))[1].strip() == "systemd"
                assert (await _sh(conn, "systemctl --version"))[1].startswith("systemd 252 ")
                assert (await _sh(conn, "systemctl is-active sglang.service"))[1].strip() == "active"
                assert (await _sh(conn, "id -un"))[1].strip() == "pitcrew"
                rc, journal = await _sh(conn, "journalctl -u sglang.service --no-pager")
                assert rc == 0, journal
                assert "The server is fired up and ready to roll!" in journal
                assert "systemd[1]: Started sglang.service" in journal
                # what a GPU host has: the engine's own parser on the unit's interpreter, and nvidia-smi
                rc, help_text = await _sh(conn, "/usr/bin/python3 -m sglang.launch_server --help")
                assert rc == 0 and "--speculative-num-steps" in help_text
                rc, smi = await _sh(conn, "nvidia-smi --query-gpu=index,memory.used --format=csv,noheader")
                assert rc == 0 and len(smi.strip().splitlines()) == 4, smi
                # the host's /tmp is its own
                await _sh(conn, "touch /tmp/inside-the-host")
            assert not Path("/tmp/inside-the-host").exists()
    finally:
        assert sentinel.read_text() == "still here"
        sentinel.unlink()
    assert _postgres() == pg_before
    assert _leftovers(sim) == []


async def test_the_sudo_rule_allows_what_pitcrew_runs_and_nothing_else(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "sim", scenario="healthy", time_scale=SCALE, systemd="real") as sim, \
            await _login(sim.info) as conn:
        rc, listed = await _sh(conn, "sudo -n -l")
        assert rc == 0 and "/usr/bin/systemctl daemon-reload" in listed, listed
        assert (await _sh(conn, "sudo -n -- systemctl restart sglang.service"))[0] == 0
        assert (await _sh(conn, "sudo -n -- cat -- /etc/systemd/system/sglang.service"))[0] == 0
        for refused in ("sudo -n -- cat /etc/shadow", "sudo -n -- systemctl stop pitcrew-sshd.service",
                        "sudo -n -- bash -c id", "sudo -n -- systemctl restart sglang.service ssh.service",
                        "sudo -n -- mv -f -T /tmp/x /etc/sudoers.d/pitcrew"):
            rc, out = await _sh(conn, refused)
            assert rc != 0 and "sudo: a password is required" in out, (refused, out)
        rc, out = await _sh(conn, "cat /etc/sudoers.d/pitcrew")
        assert rc != 0  # not even readable by the login user
    assert "pitcrew ALL=(root) NOPASSWD:" in sudoers_rule("pitcrew", "sglang.service")


async def test_several_hosts_boot_at_once_each_with_its_own_systemd(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "a", name="gpu-a", time_scale=SCALE, systemd="real") as a, \
            SimHost(tmp_path / "b", name="gpu-b", time_scale=SCALE, systemd="real") as b, \
            SimHost(tmp_path / "c", name="gpu-c", time_scale=SCALE, systemd="real") as c:
        await asyncio.gather(a.wait_ready(30), b.wait_ready(30), c.wait_ready(30))
        seen = []
        for sim in (a, b, c):
            async with await _login(sim.info) as conn:
                seen.append((await _sh(conn, "hostname; systemctl show sglang.service -p MainPID --value"))[1].split())
        assert [s[0] for s in seen] == ["gpu-a", "gpu-b", "gpu-c"]
        assert len({a.real.ns.pid1, b.real.ns.pid1, c.real.ns.pid1}) == 3
    assert _leftovers(a, b, c) == []


@pytest.mark.slow
async def test_twenty_boots_and_teardowns_leave_nothing_behind(tmp_path: Path) -> None:
    for i in range(20):
        async with SimHost(tmp_path / f"h{i}", time_scale=SCALE, systemd="real") as sim:
            assert sim.real is not None and sim.real.ns.pid1 > 0
        assert _leftovers(sim) == [], f"after boot {i + 1}"
