"""The sim's `systemctl` (systemd 252 wording): start, stop, restart, daemon-reload, reset-failed,
is-active, is-failed, status, cat, show (`-p`/`--property`, `--value`).

Talks to the supervisor over the control socket; `status` also reads the journal file. Exit codes
as systemctl's: 0 ok, 1 job failed, 3 not active (is-active/status), 4 no such unit (status),
5 unit not found (start...).
"""

from __future__ import annotations

import time

from simhost import control
from simhost.tools.streams import err, out, sim_dir

# A process per call (the bot's probes poll `systemctl show` over SSH): no pathlib, and the journal's reader only for
# `status` (simhost.control says why).

CHANGED = ("Warning: The unit file, source configuration file or drop-ins of {u} changed on disk. "
           "Run 'systemctl daemon-reload' to reload units.")
USAGE = "systemctl [OPTIONS...] COMMAND ..."


def _unit_name(name: str) -> str:
    return name if "." in name else f"{name}.service"


def _parse(argv: list[str]) -> tuple[list[str], dict[str, object]]:
    opts: dict[str, object] = {"props": [], "value": False, "no_block": False, "quiet": False, "lines": 10}
    args: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg in ("-p", "--property"):
            opts["props"] += next(it, "").split(",")  # type: ignore[operator]
        elif arg.startswith("--property="):
            opts["props"] += arg.split("=", 1)[1].split(",")  # type: ignore[operator]
        elif arg.startswith("-p") and len(arg) > 2:
            opts["props"] += arg[2:].split(",")  # type: ignore[operator]
        elif arg == "--value":
            opts["value"] = True
        elif arg == "--no-block":
            opts["no_block"] = True
        elif arg in ("-q", "--quiet"):
            opts["quiet"] = True
        elif arg in ("-n", "--lines"):
            opts["lines"] = int(next(it, "10"))
        elif arg.startswith("--lines="):
            opts["lines"] = int(arg.split("=", 1)[1])
        elif arg.startswith("-") and arg != "-":
            continue  # --no-pager, --system, -l, --full, --no-legend, --plain...: no effect here
        else:
            args.append(arg)
    return args, opts


def _root() -> str:
    root = sim_dir()
    if not root:
        print("System has not been booted with systemd as init system (PID 1). Can't operate.", file=err())
        print("Failed to connect to bus: Host is down", file=err())
        raise SystemExit(1)
    return root


def _ask(root: str, payload: dict[str, object]) -> dict[str, object]:
    try:
        return control.request(root, payload)
    except (ConnectionError, OSError):
        print("Failed to connect to bus: No such file or directory", file=err())
        raise SystemExit(1) from None


def main(argv: list[str]) -> int:
    args, opts = _parse(argv)
    if not args:
        print(f"{USAGE}\nToo few arguments.", file=err())
        return 1
    verb, units = args[0], [_unit_name(u) for u in args[1:]]
    root = _root()
    if verb == "daemon-reload":
        _ask(root, {"op": "daemon-reload"})
        return 0
    if verb in ("start", "stop", "restart", "reset-failed", "try-restart", "reload-or-restart"):
        if not units:
            print("Too few arguments.", file=err())
            return 1
        code = 0
        for unit in units:
            op = {"try-restart": "restart", "reload-or-restart": "restart"}.get(verb, verb)
            answer = _ask(root, {"op": op, "unit": unit, "no_block": opts["no_block"]})
            code = max(code, _report_job(verb, unit, answer))
        return code
    if verb in ("is-active", "is-failed"):
        code = 3 if verb == "is-active" else 1
        for unit in units or [""]:
            props = dict(_ask(root, {"op": "show", "unit": unit}).get("props") or {})  # type: ignore[call-overload]
            state = props.get("ActiveState", "inactive")
            if not opts["quiet"]:
                print(state, file=out())
            if (verb == "is-active" and state in ("active", "reloading")) or (
                    verb == "is-failed" and state == "failed"):
                code = 0
        return code
    if verb == "show":
        return _show(root, units, opts)
    if verb == "cat":
        return _cat(root, units)
    if verb == "status":
        return _status(root, units, opts)
    print(f"Unknown command verb {verb}.", file=err())
    return 1


def _report_job(verb: str, unit: str, answer: dict[str, object]) -> int:
    if answer.get("changed"):
        print(CHANGED.format(u=unit), file=err())
    if answer.get("ok"):
        return 0
    result = answer.get("result", "")
    if result == "not-found":
        print(f"Failed to {verb} {unit}: Unit {unit} not found.", file=err())
        return 5
    if result == "bad-setting":
        print(f"Failed to {verb} {unit}: Unit {unit} has a bad unit file setting.\n"
              f"See system logs and 'systemctl status {unit}' for details.", file=err())
        return 1
    if result == "exit-code":  # as systemd 252's systemctl printed it (tests/simhost/test_simhost_manager_contract.py)
        print(f"Job for {unit} failed because the control process exited with error code.\n"
              f"See \"systemctl status {unit}\" and \"journalctl -xeu {unit}\" for details.", file=err())
        return 1
    if result == "start-limit-hit":
        # as observed from systemctl in https://github.com/systemd/systemd/pull/30530
        print(f"Job for {unit} failed.\n"
              f"See \"systemctl status {unit}\" and \"journalctl -xeu {unit}\" for details.", file=err())
        return 1
    print(f"Failed to {verb} {unit}: {answer.get('error', result)}", file=err())
    return 1


def _show(root: str, units: list[str], opts: dict[str, object]) -> int:
    wanted = [p for p in opts["props"] if p]  # type: ignore[attr-defined]
    for index, unit in enumerate(units or [""]):
        props: dict[str, str] = dict(_ask(root, {"op": "show", "unit": unit}).get("props") or {})  # type: ignore[call-overload]
        if index:
            print(file=out())
        for key, value in props.items():
            if wanted and key not in wanted:
                continue
            if not wanted and value == "" and key.endswith("Timestamp"):
                continue
            print(value if opts["value"] else f"{key}={value}", file=out())
    return 0


def _cat(root: str, units: list[str]) -> int:
    code = 0
    for unit in units:
        answer = _ask(root, {"op": "show", "unit": unit})
        props: dict[str, str] = dict(answer.get("props") or {})  # type: ignore[call-overload]
        path = props.get("FragmentPath", "")
        if answer.get("changed"):
            print(CHANGED.format(u=unit), file=err())
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            print(f"No files found for {unit}.", file=err())
            code = 1
            continue
        print(f"# {path}", file=out())
        out().write(text if text.endswith("\n") else text + "\n")
    return code


def _ago(then: float) -> str:
    """systemd's format_timestamp_relative(): `3min 5s ago`, `12s ago`, `417ms ago`, `now`."""
    d = max(0.0, time.time() - then)
    days, rest = divmod(int(d), 86400)
    hours, rest = divmod(rest, 3600)
    mins, secs = divmod(rest, 60)
    if days:
        return f"{days} day{'s' if days > 1 else ''} {hours}h ago"
    if hours:
        return f"{hours}h {mins}min ago"
    if mins:
        return f"{mins}min {secs}s ago"
    if secs:
        return f"{secs}s ago"
    if d >= 0.001:
        return f"{int(d * 1000)}ms ago"
    return "now"


def _status(root: str, units: list[str], opts: dict[str, object]) -> int:
    unit = units[0] if units else ""
    answer = _ask(root, {"op": "status", "unit": unit})
    props: dict[str, str] = dict(answer.get("props") or {})  # type: ignore[call-overload]
    if props.get("LoadState") == "not-found":
        print(f"Unit {unit} could not be found.", file=err())
        return 4
    if answer.get("changed"):
        print(CHANGED.format(u=unit), file=err())
    active, sub, result = props["ActiveState"], props["SubState"], props["Result"]
    dot = {"active": "●", "failed": "×", "activating": "●", "deactivating": "●"}.get(active, "○")
    desc = props.get("Description", unit)
    print(f"{dot} {unit} - {desc}" if desc != unit else f"{dot} {unit}", file=out())
    print(f"     Loaded: {props['LoadState']} ({props['FragmentPath']}; enabled; preset: enabled)", file=out())
    state = active if active == "failed" else f"{active} ({sub})"
    if result != "success" and active in ("failed", "activating"):
        state += f" (Result: {result})"
    since = float(answer.get("since") or 0)  # type: ignore[arg-type]
    if since:
        stamp = time.strftime("%a %Y-%m-%d %H:%M:%S %Z", time.localtime(since))
        state += f" since {stamp}; {_ago(since)}"
    print(f"     Active: {state}", file=out())
    pids = list(answer.get("pids") or [])  # type: ignore[call-overload]
    main_pid = props.get("MainPID", "0")
    if main_pid != "0":
        print(f"   Main PID: {main_pid} ({answer.get('main_comm', 'python3')})", file=out())
    elif props.get("ExecMainPID", "0") != "0":
        code = {"1": "exited", "2": "killed", "3": "dumped"}.get(props["ExecMainCode"], "exited")
        from simhost.sdmsg import status_text

        status = status_text(code, int(props["ExecMainStatus"]))
        print(f"    Process: {props['ExecMainPID']} ExecStart={answer.get('exec', '')} (code={code}, "
              f"status={status})", file=out())
        print(f"   Main PID: {props['ExecMainPID']} (code={code}, status={status})", file=out())
    if pids:
        print(f"      Tasks: {len(pids)} (limit: 1237826)", file=out())
        print(f"     CGroup: /system.slice/{unit}", file=out())
        for i, (pid, cmd) in enumerate(pids):
            branch = "└─" if i == len(pids) - 1 else "├─"
            print(f"             {branch}{pid} {cmd}", file=out())
    lines = int(opts["lines"])  # type: ignore[call-overload]
    from pathlib import Path

    from simhost.journal import journal_path, read_backwards, short_line, unit_matches

    found, _ = read_backwards(journal_path(Path(root)), lambda es: sum(1 for e in es if unit_matches(e, unit)) >= lines)
    entries = [e for e in found if unit_matches(e, unit)]
    if lines > 0 and entries:
        print(file=out())
        for entry in entries[-lines:]:
            print(short_line(entry), file=out())
    return 0 if active == "active" else 3
