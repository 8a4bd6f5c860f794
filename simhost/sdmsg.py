"""systemd 252's own journal messages about a unit, word for word, with their structured fields.

Source: FORMATS.md section c.1 (systemd 252.39 `src/core/job.c`, `unit.c`, `service.c`). Every
message is logged by PID 1 (`_PID=1`, `_SYSTEMD_UNIT=init.scope`, `SYSLOG_IDENTIFIER=systemd`,
`UNIT=<unit>`, `INVOCATION_ID=`). `Starting <ident>...` is not emitted for `Type=simple`.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

from simhost.unitfile import format_timespan

MID_STARTED = "39f53479d3a045ac8e11786248231fbf"
MID_STOPPING = "de5b426a63be47a7b6ac3eaac82e2f6f"
MID_STOPPED = "9d1aaa27d60140bd96365438aad20286"
MID_FAILED_START = "be02cf6855d2428ba40df7e9d022f03d"
MID_PROCESS_EXIT = "98e322203f7a4ed290d09fe03c09fe15"
MID_UNIT_FAILURE = "d9b373ed55a64feb8242e02dbe79a49c"
MID_UNIT_SUCCESS = "7ad2d189f7e94e70a38c781354912448"
MID_RESOURCES = "ae8f7b866b0347b9af31fe1c80b127c0"
MID_RESTART = "5eb03494b6584870a536b337290809b3"
MID_OOM = "fe6faa94e7774663a0da52717891d8ef"

EXIT_STATUS_NAMES = {0: "SUCCESS", 1: "FAILURE", 2: "INVALIDARGUMENT", 3: "NOTIMPLEMENTED",
                     4: "NOPERMISSION", 5: "NOTINSTALLED", 6: "NOTCONFIGURED", 7: "NOTRUNNING",
                     200: "CHDIR", 203: "EXEC", 217: "USER"}

MANAGER_FIELDS = {
    "_PID": "1", "_UID": "0", "_GID": "0", "_COMM": "systemd", "_EXE": "/usr/lib/systemd/systemd",
    "_CMDLINE": "/sbin/init", "_CAP_EFFECTIVE": "1ffffffffff", "_SYSTEMD_CGROUP": "/init.scope",
    "_SYSTEMD_UNIT": "init.scope", "_SYSTEMD_SLICE": "-.slice", "_TRANSPORT": "journal",
    "SYSLOG_FACILITY": "3", "SYSLOG_IDENTIFIER": "systemd", "TID": "1",
}


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name.removeprefix("SIG")
    except ValueError:
        return str(num)


def status_text(code: str, status: int) -> str:
    """`1/FAILURE`, `9/KILL` as in `Main process exited, code=..., status=...`."""
    if code == "exited":
        name = EXIT_STATUS_NAMES.get(status)
        return f"{status}/{name}" if name else str(status)
    return f"{status}/{signal_name(status)}"


class ManagerLog:
    """Writes PID 1's messages about one unit into the journal through `emit(fields)`."""

    def __init__(self, emit: Callable[[dict[str, object]], object], unit: str) -> None:
        self._emit = emit
        self.unit = unit
        self.invocation_id = ""
        self._job_id = 1000

    def _log(self, message: str, priority: int, code: tuple[str, int, str], **extra: object) -> None:
        fields: dict[str, object] = dict(MANAGER_FIELDS)
        fields.update(MESSAGE=message, PRIORITY=priority, UNIT=self.unit, CODE_FILE=code[0],
                      CODE_LINE=code[1], CODE_FUNC=code[2])
        if self.invocation_id:
            fields["INVOCATION_ID"] = self.invocation_id
        fields["_SOURCE_REALTIME_TIMESTAMP"] = time.time_ns() // 1000  # native-protocol entries carry it
        fields.update(extra)
        self._emit(fields)

    def next_job(self) -> int:
        self._job_id += 1
        return self._job_id

    def started(self, ident: str, job: int) -> None:
        self._log(f"Started {ident}.", 6, ("src/core/job.c", 768, "job_emit_done_message"),
                  MESSAGE_ID=MID_STARTED, JOB_ID=job, JOB_TYPE="start", JOB_RESULT="done")

    def failed_to_start(self, ident: str, job: int) -> None:
        self._log(f"Failed to start {ident}.", 3, ("src/core/job.c", 768, "job_emit_done_message"),
                  MESSAGE_ID=MID_FAILED_START, JOB_ID=job, JOB_TYPE="start", JOB_RESULT="failed")

    def stopping(self, ident: str, job: int, job_type: str) -> None:
        self._log(f"Stopping {ident}...", 6, ("src/core/job.c", 581, "job_emit_start_message"),
                  MESSAGE_ID=MID_STOPPING, JOB_ID=job, JOB_TYPE=job_type)

    def stopped(self, ident: str, job: int, job_type: str) -> None:
        self._log(f"Stopped {ident}.", 6, ("src/core/job.c", 768, "job_emit_done_message"),
                  MESSAGE_ID=MID_STOPPED, JOB_ID=job, JOB_TYPE=job_type, JOB_RESULT="done")

    def main_exited(self, code: str, status: int) -> None:
        priority = 5 if code == "exited" else 4
        self._log(f"{self.unit}: Main process exited, code={code}, status={status_text(code, status)}",
                  priority, ("src/core/service.c", 3373, "service_sigchld_event"),
                  MESSAGE_ID=MID_PROCESS_EXIT, EXIT_CODE=code, EXIT_STATUS=status, COMMAND="ExecStart")

    def oom_killed(self) -> None:
        self._log(f"{self.unit}: A process of this unit has been killed by the OOM killer.", 5,
                  ("src/core/cgroup.c", 3174, "unit_check_oom"), MESSAGE_ID=MID_OOM)

    def failed_result(self, result: str) -> None:
        self._log(f"{self.unit}: Failed with result '{result}'.", 4, ("src/core/unit.c", 5813, "unit_log_failure"),
                  MESSAGE_ID=MID_UNIT_FAILURE, UNIT_RESULT=result)

    def deactivated(self) -> None:
        self._log(f"{self.unit}: Deactivated successfully.", 6, ("src/core/unit.c", 5807, "unit_log_success"),
                  MESSAGE_ID=MID_UNIT_SUCCESS)

    def consumed(self, cpu_usec: int) -> None:
        if cpu_usec < 1_000_000:
            return  # logged at debug level below one second: not in the journal
        priority = 5 if cpu_usec > 600_000_000 else 6
        self._log(f"{self.unit}: Consumed {format_timespan(cpu_usec)} CPU time.", priority,
                  ("src/core/unit.c", 2461, "unit_log_resources"),
                  MESSAGE_ID=MID_RESOURCES, CPU_USAGE_NSEC=cpu_usec * 1000)

    def scheduled_restart(self, n: int) -> None:
        self._log(f"{self.unit}: Scheduled restart job, restart counter is at {n}.", 6,
                  ("src/core/service.c", 1284, "service_enter_restart"), MESSAGE_ID=MID_RESTART, N_RESTARTS=n)

    def stop_timed_out(self) -> None:
        self._log(f"{self.unit}: State 'stop-sigterm' timed out. Killing.", 4,
                  ("src/core/service.c", 3951, "service_dispatch_timer"))

    def killing(self, pid: int, comm: str) -> None:
        self._log(f"{self.unit}: Killing process {pid} ({comm}) with signal SIGKILL.", 5,
                  ("src/core/unit.c", 4630, "log_kill"))

    def start_limit(self) -> None:
        self._log(f"{self.unit}: Start request repeated too quickly.", 4,
                  ("src/core/unit.c", 1925, "unit_test_start_limit"))

    def config_warning(self, text: str) -> None:
        self._log(text, 4, ("src/shared/conf-parser.c", 123, "config_parse"))

    def plain(self, text: str, priority: int = 6) -> None:
        fields: dict[str, object] = dict(MANAGER_FIELDS)
        fields.update(MESSAGE=text, PRIORITY=priority)
        self._emit(fields)
