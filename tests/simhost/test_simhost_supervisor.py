"""The supervisor's systemd 252 semantics, with plain bash services (fast, no fake server)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from simhost_kit import assert_format, wait_for

from simhost.journal import JournalWriter, iter_all, journal_path, unit_matches
from simhost.supervisor import JobFailed, Supervisor

UNIT = "demo.service"


def unit_file(root: Path, exec_start: str, extra: str = "", unit_extra: str = "") -> Path:
    path = root / "etc" / "systemd" / "system" / UNIT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"[Unit]\nDescription=Demo\n{unit_extra}\n[Service]\nExecStart={exec_start}\n{extra}\n")
    return path


class Env:
    def __init__(self, root: Path, path: Path, scale: float) -> None:
        self.root = root
        self.journal = JournalWriter(root, "t")
        self.sup = Supervisor(root, self.journal, path, time_scale=scale,
                              service_env={"PATH": os.environ["PATH"]}, python=sys.executable)

    def messages(self) -> list[str]:
        return [e["MESSAGE"] for e in iter_all(journal_path(self.root)) if unit_matches(e, UNIT)]

    async def close(self) -> None:
        await self.sup.close()
        self.journal.close()


@pytest.fixture
async def make(tmp_path: Path):  # type: ignore[no-untyped-def]
    envs: list[Env] = []

    def factory(exec_start: str, extra: str = "", unit_extra: str = "", scale: float = 0.01) -> Env:
        env = Env(tmp_path, unit_file(tmp_path, exec_start, extra, unit_extra), scale)
        envs.append(env)
        return env

    yield factory
    for env in envs:
        await env.close()


async def test_crash_loop_counts_restarts_with_252_messages(make) -> None:  # type: ignore[no-untyped-def]
    env = make("/bin/bash -c 'echo boom; exit 1'", "Restart=always\nRestartSec=5")
    await env.sup.start()
    await wait_for(lambda: env.sup.n_restarts >= 3)
    props = env.sup.properties()
    assert props["Restart"] == "always" and props["RestartUSec"] == "5s"
    msgs = env.messages()
    assert msgs[0] == "Started demo.service - Demo."
    assert msgs[1] == "boom"
    assert msgs[2] == "demo.service: Main process exited, code=exited, status=1/FAILURE"
    assert msgs[3] == "demo.service: Failed with result 'exit-code'."
    assert msgs[4] == "demo.service: Scheduled restart job, restart counter is at 1."
    assert msgs[5] == "Stopped demo.service - Demo."  # 252: a Stopped line between (254+ drop it)
    assert msgs[6] == "Started demo.service - Demo."
    for line in msgs[2:7]:
        kind = {"Main": "systemd.main_exited", "Fail": "systemd.failed_result", "Sche": "systemd.scheduled_restart",
                "Stop": "systemd.stopped", "Star": "systemd.started"}[line.split(": ")[-1][:4]]
        assert_format(kind, line)
    restarts = [int(e["N_RESTARTS"]) for e in iter_all(journal_path(env.root)) if "N_RESTARTS" in e]
    assert restarts[:3] == [1, 2, 3]
    # a manual restart resets the counter
    await env.sup.restart()
    assert env.sup.n_restarts == 0


async def test_start_limit_hit_keeps_previous_result(make) -> None:  # type: ignore[no-untyped-def]
    env = make("/bin/false", "Restart=on-failure\nRestartSec=20ms", "StartLimitIntervalSec=10\nStartLimitBurst=3",
               scale=1.0)
    await env.sup.start()
    await wait_for(lambda: env.sup.active_state == "failed", within=10)
    msgs = env.messages()
    tail = msgs[-5:-1]
    assert tail == ["demo.service: Scheduled restart job, restart counter is at 3.",
                    "Stopped demo.service - Demo.", "demo.service: Start request repeated too quickly.",
                    "demo.service: Failed with result 'exit-code'."]
    entries = [e for e in iter_all(journal_path(env.root)) if unit_matches(e, UNIT)]
    assert entries[-1]["MESSAGE"] == "Failed to start demo.service - Demo."
    assert entries[-1]["PRIORITY"] == "3" and entries[-1]["JOB_RESULT"] == "failed"
    assert_format("systemd.start_limit", tail[2])
    assert_format("systemd.failed_to_start", entries[-1]["MESSAGE"])
    # a manual start within the interval is refused with result start-limit-hit
    with pytest.raises(JobFailed) as info:
        await env.sup.start()
    assert info.value.result == "start-limit-hit"
    assert env.sup.properties()["Result"] == "start-limit-hit"
    await env.sup.reset_failed()
    assert env.sup.properties()["ActiveState"] == "inactive"


async def test_stop_timeout_sends_sigkill_with_its_lines(make) -> None:  # type: ignore[no-untyped-def]
    env = make("/bin/bash -c 'trap \"\" TERM; echo up; while :; do sleep 0.02; done'", "TimeoutStopSec=30")
    await env.sup.start()
    await wait_for(lambda: "up" in env.messages())
    pid = env.sup.main_pid
    await env.sup.stop()
    msgs = env.messages()
    i = msgs.index("Stopping demo.service - Demo...")
    assert msgs[i + 1] == "demo.service: State 'stop-sigterm' timed out. Killing."
    assert f"demo.service: Killing process {pid} (bash) with signal SIGKILL." in msgs[i + 2:]
    after = [m for m in msgs[i + 2:] if "Killing process" not in m]
    assert after[:3] == ["demo.service: Main process exited, code=killed, status=9/KILL",
                         "demo.service: Failed with result 'timeout'.", "Stopped demo.service - Demo."]
    assert_format("systemd.stop_timeout", msgs[i + 1])
    assert_format("systemd.killing", f"demo.service: Killing process {pid} (bash) with signal SIGKILL.")
    props = env.sup.properties()
    assert (props["ActiveState"], props["Result"], props["ExecMainCode"], props["ExecMainStatus"]) == (
        "failed", "timeout", "2", "9")
    assert props["MainPID"] == "0"


async def test_clean_stop_and_no_restart_after_stop(make) -> None:  # type: ignore[no-untyped-def]
    env = make("/bin/sleep 30", "Restart=always\nRestartSec=1")
    await env.sup.start()
    first = env.sup.properties()["InvocationID"]
    await env.sup.restart()
    assert env.sup.properties()["InvocationID"] != first
    await env.sup.stop()
    await asyncio.sleep(0.05)
    msgs = env.messages()
    assert msgs[-3:] == ["Stopping demo.service - Demo...", "demo.service: Deactivated successfully.",
                         "Stopped demo.service - Demo."]
    assert_format("systemd.deactivated", msgs[-2])
    assert env.sup.active_state == "inactive" and env.sup.n_restarts == 0


async def test_changes_apply_only_after_daemon_reload(make) -> None:  # type: ignore[no-untyped-def]
    env = make("/bin/bash -c 'echo one; sleep 30'")
    await env.sup.start()
    await wait_for(lambda: "one" in env.messages())
    path = env.sup.unit_path
    path.write_text(path.read_text().replace("echo one", "echo two") + "Foo=bar\nRestart=sometimes\n")
    assert env.sup.need_daemon_reload()
    assert env.sup.properties()["NeedDaemonReload"] == "yes"
    await env.sup.restart()
    await wait_for(lambda: env.messages().count("one") == 2)
    await env.sup.daemon_reload()
    assert not env.sup.need_daemon_reload()
    warnings = [m for m in env.messages() if "ignoring" in m]
    assert warnings == [f"{path}:7: Unknown key name 'Foo' in section 'Service', ignoring.",
                        f"{path}:8: Failed to parse service restart specifier, ignoring: sometimes"]
    assert_format("systemd.unknown_key", warnings[0])
    await env.sup.restart()
    await wait_for(lambda: "two" in env.messages())


async def test_exec_failure_is_203_exec(make) -> None:  # type: ignore[no-untyped-def]
    env = make("/nonexistent/server --flag")
    await env.sup.start()
    await wait_for(lambda: env.sup.active_state == "failed")
    msgs = env.messages()
    assert "demo.service: Main process exited, code=exited, status=203/EXEC" in msgs
    assert env.sup.properties()["ExecMainStatus"] == "203"
