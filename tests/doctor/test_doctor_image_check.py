"""`make image-check`'s own decisions, without the container tooling: when `pitcrew doctor` run in the image passes
(exit 0 and every check ✓, read from the report as doctor renders it) and when the cached base root filesystem
must be made again (its key follows the apt sources). The build and run themselves are CI's step of their own
(scripts/image_check.py; docs/PERFORMANCE.md, "The container image, built here")."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from services.doctor import DoctorReport, Finding, HostReport
from services.doctor.checks import ORDER

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "image_check.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("image_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _report(*odd: Finding) -> DoctorReport:
    replaced = {f.check for f in odd}
    findings = [Finding(c, "ok", f"{c} is fine") for c in ORDER if c not in replaced] + list(odd)
    return DoctorReport(hosts=[HostReport("sim-gpu-1", "pitcrew@127.0.0.1:2222, sglang.service", findings)])


def test_a_host_all_ticks_at_exit_0_passes_and_every_check_is_counted() -> None:
    report = _report()
    assert _script().doctor_verdict(report.exit_code, report.text()) == (len(ORDER), None)


def test_a_warning_fails_the_image_check_although_doctor_exits_0() -> None:
    report = _report(Finding("journal", "warn", "volatile", fix="mkdir -p /var/log/journal"))
    assert report.exit_code == 0
    assert _script().doctor_verdict(0, report.text()) == (len(ORDER) - 1, f"{len(ORDER) - 1} of {len(ORDER)} checks ✓")


def test_a_cross_fails_and_its_fix_and_snippet_lines_are_not_counted_as_checks() -> None:
    report = _report(Finding("sudo", "fail", "the rule lacks 3 of the 14", fix="install it",
                             snippet="Cmnd_Alias X = /usr/bin/kill -0 [0-9]*\npitcrew ALL=(root) NOPASSWD: X"))
    check = _script()
    assert check.doctor_verdict(report.exit_code, report.text()) == (len(ORDER) - 1, "exit 1")
    assert check.doctor_verdict(0, report.text())[1] == f"{len(ORDER) - 1} of {len(ORDER)} checks ✓"


def test_no_check_lines_is_not_a_pass() -> None:
    assert _script().doctor_verdict(0, "pitcrew doctor: no hosts are configured\n") == (0, "0 of 0 checks ✓")


def test_the_base_rootfs_is_made_again_when_the_apt_sources_change(tmp_path: Path) -> None:
    check = _script()
    sources = tmp_path / "debian.sources"
    sources.write_text("Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n")
    first = check.base_key([sources])
    assert check.base_key([sources]) == first
    sources.write_text(sources.read_text().replace("main", "main contrib"))
    assert check.base_key([sources]) != first
