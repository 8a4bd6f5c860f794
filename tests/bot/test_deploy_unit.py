"""pitcrew's own unit, deploy/pitcrew.service: systemd 252 accepts it (`systemd-analyze verify` inside a host booted
under systemd itself), its stop timeout is above the drain bound of the default policy, and it is hardened."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.settings import load_settings
from simhost.host import SimHost
from simhost.systemd import unavailable

UNIT = Path(__file__).resolve().parents[2] / "deploy" / "pitcrew.service"


def _settings(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith(("#", "[")):
            key, value = line.split("=", 1)
            found.setdefault(key.strip(), []).append(value.strip())
    return found


def test_the_stop_timeout_is_above_the_drain_bound_and_the_service_is_hardened() -> None:
    unit = _settings(UNIT.read_text())
    p = load_settings(None).policy
    bound = p.shutdown_grace_s + p.stop_timeout_s + p.ready_timeout_s + 30  # docs/RELIABILITY.md, graceful stop
    (stop,) = unit["TimeoutStopSec"]
    assert re.fullmatch(r"\d+", stop) and int(stop) > bound, (stop, bound)
    for key, value in {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "Restart": "on-failure",
                       "StateDirectory": "pitcrew", "User": "pitcrew-bot", "CapabilityBoundingSet": ""}.items():
        assert unit.get(key) == [value], key
    assert "ReadWritePaths" not in unit  # the state directory is the only writable place


@pytest.mark.skipif(unavailable() is not None, reason=f"real systemd unavailable: {unavailable()}")
async def test_systemd_252_verifies_the_unit_and_rates_its_exposure(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "sim", time_scale=0.01, systemd="real") as sim:
        assert sim.real is not None
        run = sim.real.ns.run
        setup = ("useradd --system --home-dir /var/lib/pitcrew --shell /usr/sbin/nologin pitcrew-bot && "
                 "mkdir -p /opt/pitcrew/.venv/bin /etc/pitcrew && printf '#!/bin/sh\\n' > "
                 "/opt/pitcrew/.venv/bin/pitcrew && chmod 755 /opt/pitcrew/.venv/bin/pitcrew && "
                 "cat > /etc/systemd/system/pitcrew.service")
        rc, out, err = await run(["sh", "-c", setup], input=UNIT.read_bytes())
        assert rc == 0, out + err
        rc, out, err = await run(["systemd-analyze", "verify", "/etc/systemd/system/pitcrew.service"])
        said = [line for line in (out + err).splitlines() if "pitcrew.service" in line]
        assert rc == 0 and said == [], out + err
        rc, out, err = await run(["sh", "-c", "systemctl daemon-reload && "
                                              "systemd-analyze security --no-pager pitcrew.service | tail -n 1"])
        assert rc == 0, out + err
        m = re.search(r"Overall exposure level for pitcrew.service: (\d+\.\d+) (\S+)", out)
        assert m is not None, out
        print(f"systemd-analyze security: {m.group(1)} {m.group(2)}")
        assert float(m.group(1)) <= 3.0, out  # systemd calls <= 3.x "OK" (hardened), 10 "UNSAFE"
