"""The production host path against the whole simulated host, behind both SSH servers.

The same `SshHost` calls the bot makes (systemctl, journalctl -f, unit read and upload through
sudo) against `simhost.host.SimHost` served by its own asyncssh server and by a real sshd.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hosts_kit import journal_backend_label, read, wait_dead

from services.hosts.contract import HostSpec
from services.hosts.ssh import SshHost
from simhost.openssh import sshd_path, start_openssh_server


@pytest.fixture(params=["sim", "sshd"], ids=[f"sim-{journal_backend_label()}", f"sshd-{journal_backend_label()}"])
async def sim_host(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SshHost]:
    if request.param == "sshd" and sshd_path() is None:
        pytest.skip("OpenSSH sshd is not installed (/usr/sbin/sshd): the real-sshd half is skipped")
    from simhost.host import SimHost

    async with SimHost(tmp_path / "sim", scenario="healthy", time_scale=0.01) as sim:
        info = sim.info
        server = None
        address, port, user = info["ssh_host"], info["ssh_port"], info["user"]
        known = Path(info["known_hosts"])
        if request.param == "sshd":
            env = {"SIMHOST_DIR": str(sim.root), "LANG": "C.UTF-8", "HOME": str(sim.root)}
            server = await start_openssh_server(sim.root, env=env, path_prefix=[sim.root / "bin"])
            address, port, user, known = server.host, server.port, server.user, server.known_hosts
        spec = HostSpec(
            name=info["name"], address=address, port=port, user=user, client_key=Path(info["client_key"]),
            known_hosts=known, unit=info["unit"], unit_dir=info["unit_dir"], server_url=info["server_url"],
            sudo=True,
        )
        host = SshHost(spec)
        try:
            yield host
        finally:
            await host.close()
            if server is not None:
                await server.close()


async def test_journalctl_on_the_host_is_the_backend_under_test(sim_host):
    out = (await sim_host.run(["journalctl", "--version"], timeout=10)).stdout
    if journal_backend_label().startswith("journal=systemd-"):
        assert out.split()[:2] == ["systemd", journal_backend_label().split("-", 1)[1]], out
        # the unit's first line: the fixture does not wait for the unit to start (its start and the sim's pipe into
        # systemd-journal-remote took seconds at load ~12: an empty answer, session 7), so ask until it is there
        lines: list[str] = []
        async with asyncio.timeout(60):
            while not lines:
                lines = (await sim_host.run(["journalctl", "-u", sim_host.spec.unit, "-o", "json", "-n", "1",
                                             "--no-pager"], timeout=10)).stdout.splitlines()
                await asyncio.sleep(0 if lines else 0.2)
        assert len(lines) == 1 and json.loads(lines[0])["__CURSOR"].startswith("s=")


async def test_the_bot_s_host_calls_work_against_the_simulated_host(sim_host, tmp_path):
    spec = sim_host.spec
    state = ""
    for _ in range(100):
        state = (await sim_host.run(["systemctl", "is-active", spec.unit], timeout=10)).stdout.strip()
        if state == "active":
            break
        await asyncio.sleep(0.1)
    assert state == "active"

    unit_path = f"{spec.unit_dir}/{spec.unit}"
    text = await sim_host.read_file(unit_path, timeout=10)
    assert "ExecStart=" in text
    await sim_host.upload(unit_path, text.encode(), mode=0o644, timeout=20)
    assert (await sim_host.run(["systemctl", "daemon-reload"], timeout=10, sudo=True)).ok

    pidfile = tmp_path / "journalctl.pid"
    follow = f'echo $$ > "$1"; exec journalctl -u {spec.unit} -f -n 1 -o json --no-pager'
    async with sim_host.stream(["bash", "-c", follow, "sh", str(pidfile)], timeout=30) as lines:
        entry = json.loads(await anext(lines))
    assert "MESSAGE" in entry and "__CURSOR" in entry
    assert await wait_dead(int(read(pidfile))), "journalctl -f outlived its stream"
