"""Parsing of the side-evidence probes' output into the `--extra` shape, and the removal of GPU memory
holders that belong to the unit's current instance (they are not stale)."""

from __future__ import annotations

from services.diagnosis import SideEvidence
from services.diagnosis.gather import MARK, config_hash, parse_evidence, unit_own_pids, without_own_gpu_apps

OUTPUT = "\n".join([
    f"{MARK}show",
    "MainPID=2100", "NRestarts=3", "ActiveState=activating", "SubState=auto-restart", "Result=exit-code",
    "ControlGroup=/system.slice/sglang.service",
    f"{MARK}apps",
    "2318871, sglang::scheduler_TP0, 124386", "2101, sglang::scheduler_TP1, 80000", "2200, python3, [N/A]",
    f"{MARK}gpu",
    "0, 124987, 143771", "1, 80000, 143771",
    f"{MARK}kernel",
    '{"__CURSOR":"k1","MESSAGE":"NVRM: Xid (PCI:0000:9b:00): 79, pid=\'<unknown>\', name=<unknown>, GPU has '
    'fallen off the bus.","_TRANSPORT":"kernel"}',
    "not json",
    f"{MARK}ss",
    "State  Recv-Q Send-Q Local Address:Port Peer Address:Port Process",
    'LISTEN 0      2048       0.0.0.0:30000      0.0.0.0:*    users:(("python3",pid=2318871,fd=5))',
    f"{MARK}df",
    "Filesystem     1024-blocks  Used Available Capacity Mounted on", "tmpfs 1000 10 990 1% /dev/shm",
    f"{MARK}unit",
    "# /etc/systemd/system/sglang.service", "[Service]", "ExecStart=/usr/bin/python3 -m sglang.launch_server "
    "--speculative-num-steps 10",
    f"{MARK}ps",
    "2318871       1 alice      Sun Nov 29 14:02:11 2026 python3 -m sglang.launch_server --port 30000",
    "   2101    2100 sglang     Sun Nov 29 22:02:11 2026 sglang::scheduler_TP1",
    f"{MARK}cgroup",
    "2318871 0::/user.slice/user-1000.slice/session-3.scope", "2101 0::/system.slice/sglang.service",
])


def test_probe_output_becomes_the_extra_json_that_diagnosis_reads() -> None:
    ev = parse_evidence(OUTPUT)
    assert ev["systemctl_show"]["MainPID"] == "2100"
    assert ev["nvidia_smi_apps"][0] == {"pid": 2318871, "process_name": "sglang::scheduler_TP0",
                                        "used_memory": 124386}
    assert ev["nvidia_smi_apps"][2]["used_memory"] is None
    assert ev["nvidia_smi_gpu"] == ["0, 124987, 143771", "1, 80000, 143771"]
    assert len(ev["kernel_journal"]) == 1
    assert ev["ss_listen"] == [{"local": "0.0.0.0:30000", "pid": 2318871, "process": "python3", "user": None}]
    stale = ev["process_info"][0]
    assert stale["user"] == "alice" and stale["started"] == "Sun Nov 29 14:02:11 2026"
    assert stale["cmdline"].startswith("python3 -m sglang") and stale["cgroup"].startswith("/user.slice")
    side = SideEvidence.from_json(ev)
    assert side.nvidia_smi_apps[0].pid == 2318871 and side.kernel_journal[0].message.startswith("NVRM: Xid")
    assert side.unit_file is not None and "--speculative-num-steps 10" in side.unit_file


def test_holders_of_the_current_instance_are_not_stale() -> None:
    ev = parse_evidence(OUTPUT)
    assert unit_own_pids(ev) == {2100, 2101}
    kept = [a["pid"] for a in without_own_gpu_apps(ev)["nvidia_smi_apps"]]
    assert kept == [2318871, 2200]


def test_missing_sections_are_left_out_and_config_hash_ignores_comments() -> None:
    assert parse_evidence("") == {}
    assert config_hash(None) == ""
    assert config_hash("# a\n[Service]\nExecStart=x\n") == config_hash("# b\n[Service]\nExecStart=x\n")
    assert config_hash("[Service]\nExecStart=x\n") != config_hash("[Service]\nExecStart=y\n")


def test_a_holder_the_unit_started_while_the_probes_ran_is_its_own() -> None:
    """`systemctl show` runs beside `nvidia-smi`: right after a failure it can name no main pid (or the old one) while
    `nvidia-smi` already sees the next start's processes. The main pid read once the probes are done makes them the
    unit's own, with their children; a stranger stays a holder (session 14: a vLLM unit's next start was called a
    stale holder of the memory its failed start had asked for)."""
    raced = "\n".join([
        f"{MARK}show", "MainPID=0", "ActiveState=activating", "SubState=auto-restart",
        f"{MARK}apps", "2300, python3, 40000", "2301, VLLM::EngineCore, 80000", "777, python3, 90000",
        f"{MARK}ps",
        "   2300       1 vllm       Sun Dec  6 03:39:11 2026 python3 -m vllm.entrypoints.openai.api_server",
        "   2301    2300 vllm       Sun Dec  6 03:39:12 2026 VLLM::EngineCore",
        "    777       1 alice      Sun Dec  6 01:02:03 2026 python3 train.py",
        f"{MARK}mainafter", "2300",
    ])
    ev = parse_evidence(raced)
    assert ev["main_pid_after"] == 2300
    assert unit_own_pids(ev) == {2300, 2301}
    assert [a["pid"] for a in without_own_gpu_apps(ev)["nvidia_smi_apps"]] == [777]
    before = parse_evidence(raced.replace(f"{MARK}mainafter\n2300", f"{MARK}mainafter\n0"))
    assert "main_pid_after" not in before and unit_own_pids(before) == set()  # what the race read before
