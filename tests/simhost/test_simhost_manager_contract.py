"""The service-manager contract: the sim's supervisor against systemd 252 itself, on the same units.

Each scenario runs once on `simhost.supervisor.Supervisor` and once on systemd booted in namespaces
(`simhost.systemd`), with plain bash services and the same expectations: journal messages word for word,
`systemctl show` properties, job results. Real systemd is the reference; where the two differ, the supervisor
was wrong (simhost/README.md, "Supervisor and real systemd"). Times are real on both (time scale 1).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

import pytest
from simhost_kit import assert_format

from simhost.journal import JournalWriter, iter_all, journal_path, unit_matches
from simhost.supervisor import JobFailed, Supervisor
from simhost.systemd import SystemdNamespace
from simhost.systemd.layout import UNIT_DIR, base_setup

UNIT = "demo.service"


class Manager(Protocol):
    kind: str
    unit_path: str

    async def write_unit(self, text: str) -> None: ...
    async def ctl(self, verb: str) -> str | None: ...  # None, or the job's failed result
    async def props(self) -> dict[str, str]: ...
    async def messages(self) -> list[str]: ...
    async def entries(self) -> list[dict[str, Any]]: ...


class PythonManager:
    kind = "python"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.unit_path = str(root / "etc" / "systemd" / "system" / UNIT)
        Path(self.unit_path).parent.mkdir(parents=True, exist_ok=True)
        self.journal = JournalWriter(root, "t")
        self.sup: Supervisor | None = None

    async def write_unit(self, text: str) -> None:
        Path(self.unit_path).write_text(text)
        if self.sup is None:
            self.sup = Supervisor(self.root, self.journal, Path(self.unit_path), time_scale=1.0,
                                  service_env={"PATH": os.environ["PATH"]}, python=sys.executable)

    async def ctl(self, verb: str) -> str | None:
        assert self.sup is not None
        job = {"start": self.sup.start, "stop": self.sup.stop, "restart": self.sup.restart,
               "reset-failed": self.sup.reset_failed, "daemon-reload": self.sup.daemon_reload}[verb]
        try:
            await job()
        except JobFailed as exc:
            return exc.result
        return None

    async def props(self) -> dict[str, str]:
        assert self.sup is not None
        return self.sup.properties()

    async def entries(self) -> list[dict[str, Any]]:
        return [e for e in iter_all(journal_path(self.root)) if unit_matches(e, UNIT)]

    async def messages(self) -> list[str]:
        return [str(e["MESSAGE"]) for e in await self.entries()]

    async def close(self) -> None:
        if self.sup is not None:
            await self.sup.close()
        self.journal.close()


class RealManager:
    kind = "real"
    unit_path = f"{UNIT_DIR}/{UNIT}"

    def __init__(self, state: Path) -> None:
        self.ns = SystemdNamespace(state)

    async def boot(self) -> None:
        await self.ns.boot("\n".join(base_setup("t", [])) + "\n", [])

    async def write_unit(self, text: str) -> None:
        rc, _, err = await self.ns.run(["sh", "-c", f"cat > {self.unit_path}"], input=text.encode())
        assert rc == 0, err

    async def ctl(self, verb: str) -> str | None:
        rc, _, _ = await self.ns.run(["systemctl", verb, *([] if verb == "daemon-reload" else [UNIT])], timeout=60)
        return None if rc == 0 else (await self.props())["Result"]

    async def props(self) -> dict[str, str]:
        _, out, _ = await self.ns.run(["systemctl", "show", UNIT])
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    async def entries(self) -> list[dict[str, Any]]:
        _, out, _ = await self.ns.run(["journalctl", "-u", UNIT, "-o", "json", "--no-pager"])
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]

    async def messages(self) -> list[str]:
        return [str(e.get("MESSAGE")) for e in await self.entries()]

    async def close(self) -> None:
        await self.ns.close()


@pytest.fixture
async def manager(tmp_path: Path, systemd: str) -> AsyncIterator[Manager]:
    if systemd == "real":
        real = RealManager(tmp_path / "ns")
        await real.boot()
        yield real
        await real.close()
    else:
        python = PythonManager(tmp_path)
        yield python
        await python.close()


def unit(exec_start: str, service: str = "", unit_extra: str = "") -> str:
    return f"[Unit]\nDescription=Demo\n{unit_extra}\n[Service]\nExecStart={exec_start}\n{service}\n"


async def until(manager: Manager, pred: Callable[[dict[str, str], list[str]], bool], within: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while loop.time() < deadline:
        if pred(await manager.props(), await manager.messages()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not reached on {manager.kind}: {(await manager.messages())[-8:]}")


async def test_crash_loop_counts_restarts_with_252_messages(manager: Manager) -> None:
    await manager.write_unit(unit("/bin/bash -c 'echo boom; exit 1'", "Restart=always\nRestartSec=300ms"))
    await manager.ctl("start")
    await until(manager, lambda p, m: int(p["NRestarts"]) >= 2)
    props = await manager.props()
    assert (props["Restart"], props["RestartUSec"]) == ("always", "300ms")
    # the service's own line and PID 1's "Started" race (journald orders them as they arrive): PID 1's alone
    assert (await manager.messages()).count("boom") >= 2
    msgs = [str(e["MESSAGE"]) for e in await manager.entries() if e.get("_PID") == "1" or e.get("UNIT")]
    first = msgs.index("Started demo.service - Demo.")
    assert msgs[first:first + 6] == [
        "Started demo.service - Demo.", "demo.service: Main process exited, code=exited, status=1/FAILURE",
        "demo.service: Failed with result 'exit-code'.",
        "demo.service: Scheduled restart job, restart counter is at 1.", "Stopped demo.service - Demo.",
        "Started demo.service - Demo."]
    for line in msgs[first + 1:first + 6]:
        kind = {"Main": "systemd.main_exited", "Fail": "systemd.failed_result", "Sche": "systemd.scheduled_restart",
                "Stop": "systemd.stopped", "Star": "systemd.started"}[line.split(": ")[-1][:4]]
        assert_format(kind, line)
    restarts = [int(e["N_RESTARTS"]) for e in await manager.entries() if "N_RESTARTS" in e]
    assert restarts[:2] == [1, 2]


async def test_a_manual_restart_of_a_running_unit_resets_the_restart_counter(manager: Manager) -> None:
    marker = f"/tmp/pitcrew-contract-{uuid.uuid4().hex}"  # the first run fails, the second one stays up
    await manager.write_unit(unit(f"/bin/bash -c 'test -e {marker} || {{ touch {marker}; exit 1; }}; exec sleep 30'",
                                  "Restart=always\nRestartSec=100ms"))
    await manager.ctl("start")
    await until(manager, lambda p, m: p["NRestarts"] == "1" and p["SubState"] == "running")
    await manager.ctl("restart")
    assert (await manager.props())["NRestarts"] == "0"
    await manager.ctl("stop")
    if manager.kind == "python":
        os.unlink(marker)


async def test_start_limit_hit_keeps_previous_result(manager: Manager) -> None:
    await manager.write_unit(unit("/bin/false", "Restart=on-failure\nRestartSec=20ms",
                                  "StartLimitIntervalSec=10\nStartLimitBurst=3"))
    await manager.ctl("start")
    await until(manager, lambda p, m: p["ActiveState"] == "failed" and "Failed to start demo.service - Demo." in m)
    msgs = await manager.messages()
    tail = msgs[-5:-1]
    assert tail == ["demo.service: Scheduled restart job, restart counter is at 3.",
                    "Stopped demo.service - Demo.", "demo.service: Start request repeated too quickly.",
                    "demo.service: Failed with result 'exit-code'."]
    last = (await manager.entries())[-1]
    assert last["MESSAGE"] == "Failed to start demo.service - Demo."
    assert last["PRIORITY"] == "3" and last["JOB_RESULT"] == "failed"
    assert_format("systemd.start_limit", tail[2])
    assert_format("systemd.failed_to_start", last["MESSAGE"])
    # a manual start within the interval is refused: the same three lines again, and the unit keeps the loop's
    # result (start-limit-hit only replaces success) and its restart counter
    assert await manager.ctl("start") == "exit-code"
    msgs = await manager.messages()
    assert msgs[-3:] == ["demo.service: Start request repeated too quickly.",
                         "demo.service: Failed with result 'exit-code'.", "Failed to start demo.service - Demo."]
    props = await manager.props()
    assert (props["Result"], props["NRestarts"]) == ("exit-code", "3")
    await manager.ctl("reset-failed")
    assert (await manager.props())["ActiveState"] == "inactive"


async def test_manual_starts_count_toward_the_limit_unless_the_unit_exits_cleanly(manager: Manager) -> None:
    await manager.write_unit(unit("/bin/true", "", "StartLimitIntervalSec=10\nStartLimitBurst=2"))
    for _ in range(4):  # a clean exit does not count: never refused
        assert await manager.ctl("start") is None
        await until(manager, lambda p, m: p["ActiveState"] == "inactive")
    await manager.write_unit(unit("/bin/false", "", "StartLimitIntervalSec=10\nStartLimitBurst=2"))
    await manager.ctl("daemon-reload")
    results = []
    for _ in range(3):
        results.append(await manager.ctl("start"))
        await until(manager, lambda p, m: p["ActiveState"] == "failed")
    assert results[2] == "exit-code"  # the third failing start is refused, keeping the failure's result
    assert (await manager.messages())[-3] == "demo.service: Start request repeated too quickly."


async def test_stop_timeout_sends_sigkill_with_its_lines(manager: Manager) -> None:
    await manager.write_unit(unit("/bin/bash -c 'trap \"\" TERM; echo up; while :; do sleep 0.02; done'",
                                  "TimeoutStopSec=500ms"))
    await manager.ctl("start")
    await until(manager, lambda p, m: "up" in m)
    pid = (await manager.props())["MainPID"]
    assert await manager.ctl("stop") is None  # the stop job itself succeeds
    msgs = await manager.messages()
    i = msgs.index("Stopping demo.service - Demo...")
    assert msgs[i + 1] == "demo.service: State 'stop-sigterm' timed out. Killing."
    assert f"demo.service: Killing process {pid} (bash) with signal SIGKILL." in msgs[i + 2:]
    after = [m for m in msgs[i + 2:] if "Killing process" not in m]
    assert after[:3] == ["demo.service: Main process exited, code=killed, status=9/KILL",
                         "demo.service: Failed with result 'timeout'.", "Stopped demo.service - Demo."]
    assert_format("systemd.stop_timeout", msgs[i + 1])
    assert_format("systemd.killing", f"demo.service: Killing process {pid} (bash) with signal SIGKILL.")
    props = await manager.props()
    assert (props["ActiveState"], props["Result"], props["ExecMainCode"], props["ExecMainStatus"]) == (
        "failed", "timeout", "2", "9")
    assert props["MainPID"] == "0"


async def test_clean_stop_and_no_restart_after_stop(manager: Manager) -> None:
    await manager.write_unit(unit("/bin/sleep 30", "Restart=always\nRestartSec=1"))
    await manager.ctl("start")
    first = (await manager.props())["InvocationID"]
    await manager.ctl("restart")
    assert (await manager.props())["InvocationID"] != first
    await manager.ctl("stop")
    await asyncio.sleep(0.05)
    msgs = await manager.messages()
    assert msgs[-3:] == ["Stopping demo.service - Demo...", "demo.service: Deactivated successfully.",
                         "Stopped demo.service - Demo."]
    assert_format("systemd.deactivated", msgs[-2])
    props = await manager.props()
    assert (props["ActiveState"], props["NRestarts"]) == ("inactive", "0")


async def test_changes_apply_only_after_daemon_reload(manager: Manager) -> None:
    await manager.write_unit(unit("/bin/bash -c 'echo one; sleep 30'"))
    await manager.ctl("start")
    await until(manager, lambda p, m: "one" in m)
    await manager.write_unit(unit("/bin/bash -c 'echo two; sleep 30'") + "Foo=bar\nRestart=sometimes\n")
    assert (await manager.props())["NeedDaemonReload"] == "yes"
    await manager.ctl("restart")
    await until(manager, lambda p, m: m.count("one") == 2)
    await manager.ctl("daemon-reload")
    assert (await manager.props())["NeedDaemonReload"] == "no"
    path = manager.unit_path
    warnings = [m for m in await manager.messages() if "ignoring" in m]
    assert warnings == [f"{path}:7: Unknown key 'Foo' in section [Service], ignoring.",
                        f"{path}:8: Failed to parse service restart specifier, ignoring: sometimes"]
    assert_format("systemd.unknown_key", warnings[0])
    await manager.ctl("restart")
    await until(manager, lambda p, m: "two" in m)


async def test_exec_failure_is_203_exec(manager: Manager) -> None:
    await manager.write_unit(unit("/nonexistent/server --flag"))
    await manager.ctl("start")
    await until(manager, lambda p, m: p["ActiveState"] == "failed")
    msgs = await manager.messages()
    assert "demo.service: Main process exited, code=exited, status=203/EXEC" in msgs
    assert (await manager.props())["ExecMainStatus"] == "203"
