"""What `doctor` reads from `sudo -n -l` and how it compares with the rule pitcrew needs; the report's exit code."""

from __future__ import annotations

from services.doctor import DoctorReport, Finding, HostReport
from services.doctor.sudo import allowed_commands, compare, needed_commands
from services.hosts import sudoers_rule

LISTING = """Matching Defaults entries for pitcrew on gpu-1:
    env_reset, mail_badpass, secure_path=/usr/local/sbin\\:/usr/bin, use_pty, !requiretty

User pitcrew may run the following commands on gpu-1:
    (root) NOPASSWD: {cmds}
"""


def test_the_rule_pitcrew_needs_is_fourteen_command_lines() -> None:
    needed = needed_commands(sudoers_rule("pitcrew", "sglang.service"))
    assert len(needed) == 14
    assert needed[0] == "/usr/bin/systemctl daemon-reload"
    assert "/usr/bin/cat -- /etc/systemd/system/sglang.service" in needed


def test_exactly_the_rule_is_nothing_missing_nothing_extra() -> None:
    needed = needed_commands(sudoers_rule("pitcrew", "vllm.service", "/etc/systemd/system"))
    cmp = compare(needed, allowed_commands(LISTING.format(cmds=", ".join(needed))))
    assert cmp.missing == () and cmp.extra == () and cmp.needed == 14


def test_a_missing_command_is_named_and_a_wider_rule_is_extra() -> None:
    needed = needed_commands(sudoers_rule("pitcrew", "sglang.service"))
    some = [c for c in needed if "/usr/bin/kill" not in c] + ["/usr/bin/journalctl"]
    cmp = compare(needed, allowed_commands(LISTING.format(cmds=", ".join(some))))
    assert cmp.missing == ("/usr/bin/kill -TERM [0-9]*", "/usr/bin/kill -KILL [0-9]*", "/usr/bin/kill -0 [0-9]*")
    assert cmp.extra == ("/usr/bin/journalctl",)
    assert compare(needed, allowed_commands(LISTING.format(cmds="ALL"))).extra == ("ALL",)


def test_a_rule_that_asks_for_a_password_or_runs_as_another_user_allows_nothing() -> None:
    listing = ("User pitcrew may run the following commands on gpu-1:\n"
               "    (root) /usr/bin/systemctl daemon-reload\n    (postgres) NOPASSWD: /usr/bin/psql\n")
    assert allowed_commands(listing) == []
    assert allowed_commands("sudo: a password is required\n") == []


def test_the_exit_code_is_1_only_when_some_host_has_a_cross() -> None:
    good = HostReport("a", "t", [Finding("ssh", "ok", "fine"), Finding("journal", "warn", "volatile", "fix it")])
    bad = HostReport("b", "t", [Finding("ssh", "fail", "host key changed", "confirm it")])
    assert DoctorReport([good]).exit_code == 0
    assert DoctorReport([good, bad]).exit_code == 1
    text = DoctorReport([good, bad]).text()
    assert "⚠ journal: volatile" in text and "fix: fix it" in text and "✗ ssh: host key changed" in text
    assert text.endswith("docs/HOSTS.md")
