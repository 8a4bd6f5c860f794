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


def _gpu_lines(held: dict[int, list[tuple[int, int]]]) -> dict[str, str]:
    uuid = "GPU-5c9e3a1{}-7b2d-4f0e-9a61-0c3d8e2f000{}"
    return {"gpus": "\n".join(f"{i}, {uuid.format(i, i)}, {sum(m for _, m in held.get(i, []))}, 97887"
                              for i in range(2)),
            "gpuapps": "\n".join(f"{uuid.format(i, i)}, {p}, {m}" for i, rows in held.items() for p, m in rows)}


def test_a_refusal_that_stands_on_attributed_holders_is_not_softened_by_a_holder_ps_missed() -> None:
    """Seen in CI: the two `nvidia-smi` queries ran a moment apart, the second saw the crash-looping unit's
    new scheduler (512 MiB) that `ps` was never asked about; the stale holders' 94,312 MiB alone refuse."""
    from services.experiments.host_checks import _gpu_checks

    sections = _gpu_lines({0: [(456, 94312), (999, 512)], 1: [(457, 94312), (1000, 512)]})
    argv = ["python3", "-m", "sglang.launch_server", "--mem-fraction-static", "0.88"]
    known = {456, 457, 123}
    (check,) = _gpu_checks(argv, "", sections, own={123}, known=known)
    assert check.status == FAIL and set(check.holders or ()) <= known, check
    assert _unattributed(check, {"systemctl_show": SHOW, "process_info": [
        {**STRANGER, "pid": p} for p in (456, 457)]}, UNIT) is check
    # what only the unattributed holder would refuse stays a warning after _unattributed
    small = _gpu_lines({0: [(456, 4000), (999, 90000)]})
    (check,) = _gpu_checks(argv, "", small, own={123}, known=known)
    assert check.status == FAIL and 999 in (check.holders or ())
    assert _unattributed(check, {"systemctl_show": SHOW, "process_info": [STRANGER]}, UNIT).status == WARN


def test_a_zombie_the_probes_saw_counts_as_holding_nothing() -> None:
    from services.diagnosis import exited_pids
    from services.experiments.host_checks import _gpu_checks

    evidence = {"systemctl_show": SHOW, "process_info": [
        {**STRANGER, "pid": 456, "cmdline": "[VLLM::EngineCor] <defunct>"}, {**STRANGER, "pid": 457}]}
    assert exited_pids(evidence) == {456}
    argv = ["python3", "-m", "sglang.launch_server", "--mem-fraction-static", "0.88"]
    sections = _gpu_lines({0: [(456, 94312)]})
    (check,) = _gpu_checks(argv, "", sections, own={123} | exited_pids(evidence), known={123, 456, 457})
    assert check.status != FAIL, check
