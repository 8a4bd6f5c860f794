"""`pitcrew doctor` against simulated GPU hosts under systemd 252 itself (the acceptance of issue 27, first part).

A good host is all ✓ and exit 0; with the sudo rule removed the rule is ✗, names what is missing and prints the
rule to install (which, installed, makes it ✓); a host whose key no longer matches the pin is ✗ and nothing else is
tried on it (no command reaches it); a volatile journal is ⚠ (exit 0). Doctor changes nothing on a host.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import asyncssh
import pytest

from bot.app import host_specs
from bot.demo import host_entry
from bot.settings import load_settings
from services.doctor import Doctor, DoctorReport
from services.doctor.checks import ORDER
from services.hosts import HostPool, sudoers_rule
from services.hosts.ssh import SshHost
from simhost.host import SimHost
from simhost.ssh import known_hosts_line
from simhost.systemd import unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"real systemd unavailable: {unavailable()}")

SCALE = 0.01
ROOT = Path(__file__).resolve().parents[2]


async def _doctor(entries: list[dict[str, Any]], sent: dict[str, list[str]] | None = None) -> DoctorReport:
    """Doctor over these host entries; `sent` collects, per host, every command that reached it."""
    specs = host_specs(load_settings(None, hosts=entries))

    def factory(spec: Any) -> SshHost:
        log = (sent if sent is not None else {}).setdefault(spec.name, [])
        return SshHost(spec, on_command=log.append)

    async with HostPool.from_specs(specs, factory) as pool:
        return await Doctor(pool).run()


def _toml(entries: list[dict[str, Any]]) -> str:
    out = []
    for e in entries:
        out.append("[[hosts]]")
        out += [f"{k} = {json.dumps(v)}" for k, v in e.items()]
    return "\n".join(out) + "\n"


async def _cli(tmp_path: Path, entries: list[dict[str, Any]], *args: str) -> tuple[int, str]:
    config = tmp_path / "pitcrew.toml"
    config.write_text(_toml(entries))
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "--config", str(config), "doctor", *args,
                                                cwd=ROOT, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 90)
    return int(proc.returncode or 0), out.decode()


def _by_check(report: DoctorReport, host: int = 0) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for f in report.hosts[host].findings:
        found.setdefault(f.check, []).append(f)
    return found


async def test_a_good_host_is_all_ticks_exit_0_and_nothing_on_it_changes(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "sim", time_scale=SCALE, systemd="real") as sim:
        await sim.wait_ready(30)
        assert sim.real is not None
        entry = host_entry(sim.info)
        pid, unit = await sim.real.main_pid(), sim.unit_path.read_text()
        _, restarts = await sim.real.systemctl("show", sim.unit_name, "-p", "NRestarts", "--value")

        report = await _doctor([entry])
        assert report.ok and report.exit_code == 0, report.text()
        assert [f.status for f in report.hosts[0].findings] == ["ok"] * len(report.hosts[0].findings), report.text()
        assert set(_by_check(report)) == set(ORDER), report.text()

        code, out = await _cli(tmp_path, [entry])
        assert code == 0, out
        assert "all ✓" in out and "✗" not in out.split("\n", 1)[1] and "⚠" not in out, out
        assert out.rstrip().endswith("docs/HOSTS.md"), out
        code, out = await _cli(tmp_path, [entry], "--json")
        assert code == 0, out
        doc = json.loads(out)
        assert doc["ok"] is True and doc["doc"] == "docs/HOSTS.md"
        assert {f["check"] for f in doc["hosts"][0]["findings"]} == set(ORDER)

        # read-only: the same server process, no restart, the same unit file
        assert await sim.real.main_pid() == pid and sim.unit_path.read_text() == unit
        assert (await sim.real.systemctl("show", sim.unit_name, "-p", "NRestarts", "--value"))[1] == restarts


async def test_without_the_sudo_rule_it_names_what_is_missing_and_prints_the_rule_that_fixes_it(
        tmp_path: Path) -> None:
    async with SimHost(tmp_path / "sim", time_scale=SCALE, systemd="real", sudoers="") as sim:
        await sim.wait_ready(30)
        assert sim.real is not None
        entry = host_entry(sim.info)
        rule = sudoers_rule("pitcrew", "sglang.service", "/etc/systemd/system")

        report = await _doctor([entry])
        assert not report.ok and report.exit_code == 1
        (sudo,) = _by_check(report)["sudo"]
        assert sudo.status == "fail"
        assert "lacks 14 of the 14 commands pitcrew runs as root" in sudo.text, sudo.text
        assert "`/usr/bin/systemctl daemon-reload`" in sudo.text
        assert sudo.snippet == rule and "/etc/sudoers.d/pitcrew" in (sudo.fix or "")
        others = [f for f in report.hosts[0].findings if f.check != "sudo"]
        assert all(f.status == "ok" for f in others), report.text()

        code, out = await _cli(tmp_path, [entry])
        assert code == 1, out
        assert "✗ sudo: the rule for pitcrew lacks 14" in out
        assert "pitcrew ALL=(root) NOPASSWD: PITCREW_SGLANG_SERVICE_CTL" in out  # the snippet, printed
        assert "visudo -cf /etc/sudoers.d/pitcrew" in out

        # a rule without the signals: exactly those three are named
        partial = "\n".join(line for line in rule.splitlines() if "_KILL =" not in line).replace(
            ", PITCREW_SGLANG_SERVICE_KILL", "") + "\n"
        await _install_rule(sim, partial)
        (sudo,) = _by_check(await _doctor([entry]))["sudo"]
        assert sudo.status == "fail" and "lacks 3 of the 14" in sudo.text, sudo.text
        assert "`/usr/bin/kill -TERM [0-9]*`, `/usr/bin/kill -KILL [0-9]*`, `/usr/bin/kill -0 [0-9]*`" in sudo.text

        # the snippet doctor printed is the fix: installed as told, the host is all ✓
        await _install_rule(sim, rule)
        report = await _doctor([entry])
        assert report.ok and all(f.status == "ok" for f in report.hosts[0].findings), report.text()


async def _install_rule(sim: SimHost, rule: str) -> None:
    assert sim.real is not None
    rc, out, err = await sim.real.ns.run(
        ["sh", "-c", "cat > /etc/sudoers.d/pitcrew && chmod 440 /etc/sudoers.d/pitcrew && "
                     "visudo -cq -f /etc/sudoers.d/pitcrew"], input=rule.encode())
    assert rc == 0, out + err


async def test_a_changed_host_key_is_a_cross_and_nothing_else_is_tried_on_that_host(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "sim", time_scale=SCALE, systemd="real") as sim:
        await sim.wait_ready(30)
        good = host_entry(sim.info)
        other = asyncssh.generate_private_key("ssh-ed25519")
        pin = tmp_path / "known_hosts_rekeyed"
        pin.write_text(known_hosts_line(str(good["address"]), int(good["port"]), other) + "\n")
        rekeyed = {**good, "name": "sim-gpu-rekeyed", "known_hosts": str(pin)}

        sent: dict[str, list[str]] = {}
        report = await _doctor([good, rekeyed], sent)
        assert [h.name for h in report.hosts] == ["sim-gpu-1", "sim-gpu-rekeyed"]
        assert report.hosts[0].ok and not report.hosts[1].ok and report.exit_code == 1
        (only,) = report.hosts[1].findings  # nothing else was tried
        assert only.check == "ssh" and only.status == "fail", report.text()
        assert "has changed" in only.text and "Nothing else was checked" in only.text
        assert str(pin) in (only.fix or "")
        assert sent["sim-gpu-rekeyed"] == [] and sent["sim-gpu-1"], sent  # no command reached the host

        code, out = await _cli(tmp_path, [good, rekeyed])
        assert code == 1 and "✗ ssh: host key" in out, out
        code, out = await _cli(tmp_path, [good, rekeyed], "sim-gpu-1")
        assert code == 0 and "sim-gpu-rekeyed" not in out, out
        code, out = await _cli(tmp_path, [good], "nope")
        assert code == 2 and "unknown host nope" in out, out


async def test_a_volatile_journal_is_a_warning_and_exit_0(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "sim", time_scale=SCALE, systemd="real") as sim:
        await sim.wait_ready(30)
        assert sim.real is not None
        rc, out, err = await sim.real.ns.run(
            ["sh", "-c", "rm -rf /var/log/journal && systemctl restart systemd-journald"])
        assert rc == 0, out + err
        entry = host_entry(sim.info)
        report = await _doctor([entry])
        journal = _by_check(report)["journal"]
        assert [f.status for f in journal] == ["ok", "warn"], report.text()
        assert "volatile" in journal[1].text and "/run/log/journal" in journal[1].text
        assert "mkdir -p /var/log/journal" in (journal[1].fix or "")
        assert report.ok and report.exit_code == 0
        code, out = await _cli(tmp_path, [entry])
        assert code == 0 and "⚠ journal: volatile" in out, out


async def test_a_vllm_unit_is_known_and_its_flags_are_checked_against_its_own_help(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "sim", time_scale=SCALE, systemd="real", engine="vllm") as sim:
        await sim.wait_ready(60)
        report = await _doctor([host_entry(sim.info)])
        found = _by_check(report)
        assert found["engine"][0].status == "ok" and found["engine"][0].text.startswith("vLLM"), report.text()
        (flags,) = found["flags"]
        assert flags.status == "ok" and "vllm 0.11.0's parser accepts the command line" in flags.text, flags
        assert all(f.status == "ok" for f in report.hosts[0].findings), report.text()
        assert report.exit_code == 0


async def test_a_user_outside_systemd_journal_and_a_unit_that_is_not_there_are_crosses(tmp_path: Path) -> None:
    async with SimHost(tmp_path / "sim", time_scale=SCALE, systemd="real") as sim:
        await sim.wait_ready(30)
        assert sim.real is not None
        rc, out, err = await sim.real.ns.run(["gpasswd", "-d", "pitcrew", "systemd-journal"])
        assert rc == 0, out + err
        good = host_entry(sim.info)
        missing = {**good, "name": "sim-gpu-nounit", "unit": "nope.service"}
        report = await _doctor([good, missing])
        assert report.exit_code == 1

        journal = _by_check(report, 0)["journal"]
        assert journal[0].status == "fail" and "cannot read the journal of sglang.service" in journal[0].text, \
            report.text()
        assert "usermod -aG systemd-journal pitcrew" in (journal[0].fix or "")

        (unit,) = _by_check(report, 1)["unit"]
        assert unit.status == "fail" and "nope.service is not loaded on the host (LoadState=not-found)" in unit.text, \
            report.text()
        assert "hosts[].unit" in (unit.fix or "")
        assert "flags" not in _by_check(report, 1)  # no ExecStart= to check
