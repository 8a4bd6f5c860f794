"""`systemctl show` properties of the supervised unit, in systemd 252's D-Bus order.

Values are formatted as systemd prints them: timespans with `format_timespan()`, timestamps as
`Sun 2026-11-29 22:23:01 UTC` (empty when unset), `MainPID=0` without a main process,
`ExecMainCode` 1/2/3 = exited/killed/dumped. Only a subset of the hundreds of real properties is
printed, in their real relative order (service properties first, then the unit's).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from simhost.unitfile import format_timespan

if TYPE_CHECKING:
    from simhost.supervisor import Supervisor


def fmt_timestamp(value: float | None) -> str:
    if not value:
        return ""
    return time.strftime("%a %Y-%m-%d %H:%M:%S %Z", time.localtime(value))


def _mono(value: float | None) -> str:
    if not value:
        return "0"
    return str(int((time.monotonic() - (time.time() - value)) * 1e6))


def unit_properties(sup: Supervisor) -> dict[str, str]:
    unit = sup.unit
    s = sup.stamps
    argv = " ".join(unit.exec_start)
    exec_start = (f"{{ path={unit.exec_start[0] if unit.exec_start else ''} ; argv[]={argv} ; "
                  f"ignore_errors=no ; start_time=[{fmt_timestamp(s.get('ExecMainStartTimestamp'))}] ; "
                  f"stop_time=[{fmt_timestamp(s.get('ExecMainExitTimestamp'))}] ; pid={sup.exec_main_pid} ; "
                  f"code={ {0: '(null)', 1: 'exited', 2: 'killed', 3: 'dumped'}[sup.exec_main_code]} ; "
                  f"status={sup.exec_main_status}/{sup.exec_main_status} }}")
    load_state = "loaded" if not unit.load_error else unit.load_error
    props: list[tuple[str, str]] = [
        ("Type", unit.service_type), ("Restart", unit.restart), ("NotifyAccess", "none"),
        ("RestartUSec", format_timespan(unit.restart_usec)),
        ("TimeoutStartUSec", format_timespan(unit.timeout_start_usec)),
        ("TimeoutStopUSec", format_timespan(unit.timeout_stop_usec)),
        ("TimeoutAbortUSec", format_timespan(unit.timeout_stop_usec)),
        ("TimeoutStartFailureMode", "terminate"), ("TimeoutStopFailureMode", "terminate"),
        ("RuntimeMaxUSec", "infinity"), ("RuntimeRandomizedExtraUSec", "0"), ("WatchdogUSec", "0"),
        ("WatchdogTimestampMonotonic", "0"), ("RootDirectoryStartOnly", "no"), ("RemainAfterExit", "no"),
        ("GuessMainPID", "yes"), ("MainPID", str(sup.main_pid)), ("ControlPID", "0"),
        ("FileDescriptorStoreMax", "0"), ("NFileDescriptorStore", "0"), ("StatusErrno", "0"),
        ("Result", sup.result), ("ReloadResult", "success"), ("CleanResult", "success"),
        ("UID", "[not set]"), ("GID", "[not set]"), ("NRestarts", str(sup.n_restarts)), ("OOMPolicy", "stop"),
        ("ExecMainStartTimestamp", fmt_timestamp(s.get("ExecMainStartTimestamp"))),
        ("ExecMainStartTimestampMonotonic", _mono(s.get("ExecMainStartTimestamp"))),
        ("ExecMainExitTimestamp", fmt_timestamp(s.get("ExecMainExitTimestamp"))),
        ("ExecMainExitTimestampMonotonic", _mono(s.get("ExecMainExitTimestamp"))),
        ("ExecMainPID", str(sup.exec_main_pid)), ("ExecMainCode", str(sup.exec_main_code)),
        ("ExecMainStatus", str(sup.exec_main_status)), ("ExecStart", exec_start),
        ("Slice", "system.slice"), ("ControlGroup", f"/system.slice/{sup.name}" if sup.main_pid else ""),
        ("KillMode", "control-group"), ("KillSignal", "15"), ("SendSIGKILL", "yes"),
        ("Id", sup.name), ("Names", sup.name), ("Requires", "system.slice sysinit.target"),
        ("WantedBy", "multi-user.target"), ("Description", unit.description or sup.name),
        ("LoadState", load_state), ("ActiveState", sup.active_state), ("FreezerState", "running"),
        ("SubState", sup.sub_state), ("FragmentPath", str(sup.unit_path)), ("UnitFileState", "enabled"),
        ("UnitFilePreset", "enabled"), ("StateChangeTimestamp", fmt_timestamp(s.get("StateChangeTimestamp"))),
        ("StateChangeTimestampMonotonic", _mono(s.get("StateChangeTimestamp"))),
        ("ActiveEnterTimestamp", fmt_timestamp(s.get("ActiveEnterTimestamp"))),
        ("ActiveEnterTimestampMonotonic", _mono(s.get("ActiveEnterTimestamp"))),
        ("InactiveEnterTimestamp", fmt_timestamp(s.get("InactiveEnterTimestamp"))),
        ("InactiveEnterTimestampMonotonic", _mono(s.get("InactiveEnterTimestamp"))),
        ("CanStart", "yes"), ("CanStop", "yes"), ("CanReload", "no"),
        ("NeedDaemonReload", "yes" if sup.need_daemon_reload() else "no"),
        ("InvocationID", sup.invocation_id),
        ("StartLimitIntervalUSec", format_timespan(unit.start_limit_interval_usec)),
        ("StartLimitBurst", str(unit.start_limit_burst)), ("StartLimitAction", "none"),
    ]
    return dict(props)
