"""Side evidence gathered over SSH at the moment of an incident, in the `pitcrew diagnose --extra` shape.

One SSH exec runs a fixed bash script (the unit name is its only argument, passed as a positional
parameter, never spliced into the script) that starts every probe in parallel, each under coreutils
``timeout``: ``systemctl show``, ``nvidia-smi --query-compute-apps`` and ``--query-gpu``,
``journalctl -k -o json -n 200``, ``ss -ltnp``, ``df -P /dev/shm``, ``systemctl cat``; then ``ps`` and
``/proc/PID/cgroup`` for the unit's main pid and every GPU memory holder. Each section is printed
after a marker line, so a probe that fails or is missing only leaves its section empty.

`gather_side_evidence` returns the JSON-ready dict that `services.diagnosis.verdict.SideEvidence.from_json`
reads (`systemctl_show`, `nvidia_smi_apps`, `nvidia_smi_gpu`, `kernel_journal`, `unit_file`,
`process_info`, `ss_listen`, plus `df_shm`); a host that does not answer gives ``{}`` and a note in
``errors`` — evidence gathering never raises.
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

import orjson

from services.diagnosis.side import is_defunct
from services.errors import HostError, PitcrewError
from services.hosts import Host
from services.journal import parse_show

log = logging.getLogger("pitcrew.evidence")

MARK = "@@pitcrew-section "
SHOW_PROPERTIES = ("NRestarts,ActiveState,SubState,Result,MainPID,ExecMainStatus,ExecMainCode,"
                   "InvocationID,ControlGroup,TimeoutStopUSec")

# The unit's main pid read again once the probes are done: a holder of GPU memory that the unit started while they
# ran (its next start, right after a failure) is the unit's own, though `systemctl show`, read beside `nvidia-smi`,
# named the pid before it (a vLLM transcript of session 14 called its own next start a stale holder).
# Sets `$after` and prints it as the section `mainafter` (a section's place in the output does not matter).
MAIN_PID_AFTER_PROBES = ("after=$(timeout \"$t\" systemctl show \"$u\" -p MainPID 2>/dev/null"
                         " | sed -n 's/^MainPID=//p'); "
                         f'echo "{MARK}mainafter"; echo "$after"')

# One line (argv elements may not carry newlines). $1 = unit, $2 = per-probe timeout in seconds.
_PARTS = (
    'u="$1"; t="${2:-3}"; d=$(mktemp -d 2>/dev/null || echo /tmp/pitcrew-ev-$$); mkdir -p "$d"',
    f'(timeout "$t" systemctl show "$u" -p {SHOW_PROPERTIES} > "$d/show" 2>/dev/null) &',
    '(timeout "$t" nvidia-smi --query-compute-apps=pid,process_name,used_memory'
    ' --format=csv,noheader,nounits > "$d/apps" 2>/dev/null) &',
    '(timeout "$t" nvidia-smi --query-gpu=index,memory.used,memory.total'
    ' --format=csv,noheader,nounits > "$d/gpu" 2>/dev/null) &',
    '(timeout "$t" journalctl -k -o json -n 200 --no-pager > "$d/kernel" 2>/dev/null) &',
    '(timeout "$t" ss -ltnp > "$d/ss" 2>/dev/null) &',
    '(timeout "$t" df -P /dev/shm > "$d/df" 2>/dev/null) &',
    '(timeout "$t" systemctl cat "$u" > "$d/unit" 2>/dev/null) &',
    "wait",
    MAIN_PID_AFTER_PROBES,
    "main=$(sed -n 's/^MainPID=//p' \"$d/show\" 2>/dev/null)",
    "pids=$( { echo \"$main\"; echo \"$after\"; cut -d, -f1 \"$d/apps\" 2>/dev/null; } | tr -dc '0-9\\n'"
    " | grep -v '^0*$' | sort -un | head -n 20 | paste -sd, -)",
    f'for s in show apps gpu kernel ss df unit; do echo "{MARK}$s"; cat "$d/$s" 2>/dev/null; done',
    f'echo "{MARK}ps"',
    'if [ -n "$pids" ]; then timeout "$t" ps -o pid=,ppid=,user:32=,lstart=,args= -p "$pids" 2>/dev/null; fi',
    f'echo "{MARK}cgroup"',
    'for p in $(echo "$pids" | tr , " "); do printf "%s " "$p"; head -n 1 "/proc/$p/cgroup" 2>/dev/null || echo; done',
    'rm -rf "$d"',
    "exit 0",
)
_SCRIPT = "".join(p + (" " if p.endswith("&") else "; ") for p in _PARTS).strip().rstrip(";")

_USERS_RX = re.compile(r'\("([^"]*)",pid=(\d+)')


def split_sections(text: str) -> dict[str, str]:
    """The script's output as section name → text."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(MARK):
            current = out.setdefault(line[len(MARK):].strip(), [])
            continue
        if current is not None:
            current.append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def parse_apps(text: str) -> list[dict[str, Any]]:
    apps = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        used = parts[-1]
        apps.append({"pid": int(parts[0]), "process_name": ",".join(parts[1:-1]),
                     "used_memory": int(used) if used.isdigit() else None})
    return apps


def parse_kernel(text: str, limit: int = 200) -> list[dict[str, Any]]:
    objs = []
    for line in text.splitlines()[-limit:]:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            objs.append(obj)
    return objs


def parse_ss(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        cols = line.split()
        if len(cols) < 4 or cols[0] != "LISTEN":
            continue
        users = _USERS_RX.findall(line)
        if users:
            for proc, pid in users:
                out.append({"local": cols[3], "pid": int(pid), "process": proc, "user": None})
        else:
            out.append({"local": cols[3], "pid": None, "process": None, "user": None})
    return out


def parse_ps(text: str, cgroups: dict[int, str]) -> list[dict[str, Any]]:
    procs = []
    for line in text.splitlines():
        cols = line.split()
        if len(cols) < 8 or not cols[0].isdigit():
            continue
        pid = int(cols[0])
        procs.append({"pid": pid, "ppid": int(cols[1]) if cols[1].isdigit() else None, "user": cols[2],
                      "started": " ".join(cols[3:8]), "cmdline": " ".join(cols[8:]),
                      "cgroup": cgroups.get(pid)})
    return procs


def parse_cgroups(text: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for line in text.splitlines():
        pid, _, rest = line.strip().partition(" ")
        if pid.isdigit() and rest:
            # cgroup v2 `0::/system.slice/x.service`, v1 `N:controllers:/path`: keep the path
            out[int(pid)] = rest.split(":", 2)[-1]
    return out


def parse_evidence(text: str) -> dict[str, Any]:
    """The script's output as the `--extra` JSON object (sections that are empty are left out)."""
    sec = split_sections(text)
    out: dict[str, Any] = {}
    if show := parse_show(sec.get("show", "")):
        out["systemctl_show"] = show
    if (apps := parse_apps(sec.get("apps", ""))) or "apps" in sec:
        out["nvidia_smi_apps"] = apps
    if gpu := [ln for ln in sec.get("gpu", "").splitlines() if ln.strip()]:
        out["nvidia_smi_gpu"] = gpu
    if kernel := parse_kernel(sec.get("kernel", "")):
        out["kernel_journal"] = kernel
    if ss := parse_ss(sec.get("ss", "")):
        out["ss_listen"] = ss
    if df := sec.get("df", "").strip():
        out["df_shm"] = df
    if unit := sec.get("unit", "").strip():
        out["unit_file"] = unit + "\n"
    if procs := parse_ps(sec.get("ps", ""), parse_cgroups(sec.get("cgroup", ""))):
        out["process_info"] = procs
    if (after := sec.get("mainafter", "").strip()).isdigit() and int(after) > 0:
        out["main_pid_after"] = int(after)
    return out


def unit_own_pids(evidence: dict[str, Any]) -> set[int]:
    """The unit's main pid (as read beside the probes, and again after them: `main_pid_after`), its descendants
    among the probed pids, and pids in its cgroup."""
    show = evidence.get("systemctl_show") or {}
    main = str(show.get("MainPID", "0"))
    own = {int(main)} if main.isdigit() and main != "0" else set()
    after = evidence.get("main_pid_after")
    if isinstance(after, int) and after > 0:
        own.add(after)
    cgroup = str(show.get("ControlGroup") or "")
    procs = [p for p in evidence.get("process_info") or [] if isinstance(p, dict)]
    for p in procs:
        if cgroup and isinstance(p.get("cgroup"), str) and p["cgroup"].startswith(cgroup):
            own.add(int(p["pid"]))
    grew = bool(own)
    while grew:
        grew = False
        for p in procs:
            if p.get("ppid") in own and p["pid"] not in own:
                own.add(int(p["pid"]))
                grew = True
    return own


def exited_pids(evidence: dict[str, Any]) -> set[int]:
    """The probed pids that have exited and are not yet reaped: they hold no GPU memory or port any more."""
    return {int(p["pid"]) for p in evidence.get("process_info") or []
            if isinstance(p, dict) and is_defunct(str(p.get("cmdline") or ""))}


def without_own_gpu_apps(evidence: dict[str, Any]) -> dict[str, Any]:
    """The evidence minus GPU memory holders that belong to the unit's current instance: right after a
    failure the next start may already hold memory under its own child processes, which are not stale."""
    own = unit_own_pids(evidence)
    apps = evidence.get("nvidia_smi_apps")
    if not own or not isinstance(apps, list):
        return evidence
    kept = [a for a in apps if not (isinstance(a, dict) and a.get("pid") in own)]
    return {**evidence, "nvidia_smi_apps": kept}


def config_hash(unit_file: str | None) -> str:
    """A short stable hash of the unit file (`systemctl cat` text, comment lines ignored)."""
    if not unit_file:
        return ""
    body = "\n".join(ln.rstrip() for ln in unit_file.splitlines() if ln.strip() and not ln.startswith("#"))
    return hashlib.sha256(body.encode()).hexdigest()[:16]


async def gather_side_evidence(host: Host, unit: str, *, timeout_s: float = 6.0,
                               probe_timeout_s: float = 3.0) -> dict[str, Any]:
    """Run the probes on `host` for `unit`; returns the evidence dict (``{"errors": [...]}`` on failure)."""
    argv = ["bash", "-c", _SCRIPT, "pitcrew-evidence", unit, f"{probe_timeout_s:g}"]
    try:
        result = await host.run(argv, timeout=timeout_s)
    except (HostError, PitcrewError, OSError) as e:
        log.info("evidence from %s: %s", host.spec.name, e)
        return {"errors": [str(e)]}
    evidence = parse_evidence(result.stdout)
    if not result.ok:
        evidence["errors"] = [f"evidence script exited {result.exit_status}"]
    return evidence
