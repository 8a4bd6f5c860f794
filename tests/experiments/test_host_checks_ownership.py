"""Preflight never refuses on ownership it did not establish (issue 12's rule for GPU holders, applied to the
host checks): a port or GPU holder is only "not the unit's" when `systemctl show` and `ps` answered for it."""

from __future__ import annotations

from services.experiments.host_checks import _unattributed, attributed_pids
from services.experiments.preflight import FAIL, WARN, Check

UNIT = "sglang.service"
PORT = Check(FAIL, f"port 30000: held by pid 456 (python3), not by {UNIT}", holders=(456,))
GPU = Check(FAIL, "GPU 0: 93,124 MiB held by processes that are not the unit's (pid 456 (93,124 MiB)); "
                  "mem-fraction-static 0.88 needs 86,140 of its 97,887 MiB", holders=(456,))
SHOW = {"MainPID": "123", "ControlGroup": "/system.slice/sglang.service", "ActiveState": "active"}
STRANGER = {"pid": 456, "ppid": 1, "cgroup": "/user.slice/user-1000.slice/session-4.scope"}


def test_a_holder_the_probes_attributed_still_refuses() -> None:
    evidence = {"systemctl_show": SHOW, "process_info": [STRANGER]}
    assert attributed_pids(evidence) == {456}
    assert _unattributed(PORT, evidence, UNIT) is PORT
    assert _unattributed(GPU, evidence, UNIT) is GPU


def test_only_the_holders_the_probes_did_not_attribute_soften_the_refusal() -> None:
    two = Check(FAIL, "GPU 0: held by processes that are not the unit's (pid 456, pid 789)", holders=(456, 789))
    evidence = {"systemctl_show": SHOW, "process_info": [STRANGER]}  # ps answered for 456, not for 789
    assert _unattributed(two, evidence, UNIT).status == WARN
    assert _unattributed(two, {**evidence, "process_info": [STRANGER, {**STRANGER, "pid": 789}]}, UNIT) is two


def test_without_systemctl_show_or_ps_for_the_holder_it_is_a_warning() -> None:
    for evidence in ({"process_info": [STRANGER]},  # systemctl show timed out: MainPID unknown
                     {"systemctl_show": SHOW, "process_info": []}):  # ps did not answer for pid 456
        for check in (PORT, GPU):
            out = _unattributed(check, evidence, UNIT)
            assert out.status == WARN and out.text.startswith(check.text)
            assert "could not be established" in out.text


def test_other_checks_pass_through() -> None:
    disk = Check(FAIL, "disk: 12 MiB free under /var/log (logs need at least 1,024 MiB)")
    assert _unattributed(disk, {}, UNIT) is disk
    unseen = Check(FAIL, f"port 30000: held by a process pitcrew cannot see, and {UNIT} is not running", holders=())
    assert _unattributed(unseen, {"systemctl_show": SHOW}, UNIT) is unseen  # the unit is known not to run
    assert _unattributed(unseen, {}, UNIT).status == WARN
