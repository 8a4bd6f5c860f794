"""`simhost.ports`: the ports sim hosts and test servers bind later are claimed machine-wide, below the ephemeral
range, and released."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from simhost import ports
from simhost.host import SimHost
from simhost.openssh import sshd_path, start_openssh_server


def test_claimed_ports_are_distinct_below_the_ephemeral_range_and_released(tmp_path: Path) -> None:
    claims = str(tmp_path / "claims")
    got = [ports.claim_port(claims=claims) for _ in range(200)]
    assert len(set(got)) == 200
    assert all(ports.PORT_RANGE[0] <= p < ports.PORT_RANGE[1] for p in got)
    lo, _ = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    assert max(got) < lo, "drawn inside the ephemeral range"
    assert sorted(int(f.name) for f in (tmp_path / "claims").iterdir()) == sorted(got)
    for p in got:
        ports.release_port(p, claims=claims)
    assert list((tmp_path / "claims").iterdir()) == []


def test_a_port_claimed_elsewhere_or_listened_on_is_never_handed_out(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    claims = tmp_path / "claims"
    claims.mkdir()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        busy = listener.getsockname()[1]
        (claims / "21000").write_text("1\n")  # another process's claim, live or left by a killed one
        draws = iter([21000, busy, 21001])
        monkeypatch.setattr(ports, "PORT_RANGE", (1, 65536))
        monkeypatch.setattr(ports.random.SystemRandom, "randrange", lambda self, a, b: next(draws))
        assert ports.claim_port(claims=str(claims)) == 21001
        assert not (claims / str(busy)).exists(), "the listened-on port's claim was not given back"
        assert (claims / "21000").read_text() == "1\n"


def test_a_claim_left_by_a_killed_process_is_dropped_once_it_is_an_hour_old(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    claims = tmp_path / "claims"
    claims.mkdir()
    dead = claims / "21000"
    dead.write_text("999999999\n")  # no such pid
    draws = iter([21000, 21000])
    monkeypatch.setattr(ports.random.SystemRandom, "randrange", lambda self, a, b: next(draws))
    monkeypatch.setattr(ports, "_bindable", lambda host, port: True)
    with pytest.raises(StopIteration):  # fresh: kept, and the port skipped (the draws run out)
        ports.claim_port(claims=str(claims))
    assert dead.exists()
    old = 1_000_000.0
    os.utime(dead, (old, old))
    draws = iter([21000, 21000])
    assert ports.claim_port(claims=str(claims)) == 21000  # dropped when drawn, then claimed on the next draw
    assert dead.read_text().strip() == str(os.getpid())


@pytest.mark.skipif(sshd_path() is None, reason="no OpenSSH sshd here (CI installs openssh-server)")
async def test_an_openssh_server_on_a_port_of_its_choosing_holds_its_claim_until_it_closes(tmp_path: Path) -> None:
    """sshd binds the port its config names, after the choice: claimed, so no other sim server draws it meanwhile."""
    async with await start_openssh_server(tmp_path, env={"HOME": str(tmp_path)}, path_prefix=[]) as server:
        claim = Path(ports.CLAIMS) / str(server.port)
        assert claim.read_text().strip() == str(os.getpid())
    assert not claim.exists()


async def test_a_simulated_host_holds_its_engine_port_claim_until_it_closes(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "sim", ssh=False) as sim:
        claim = Path(ports.CLAIMS) / str(sim.server_port)
        assert claim.read_text().strip() == str(os.getpid())
    assert not claim.exists()
