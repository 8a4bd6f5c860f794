"""Preflight's host checks, in one SSH exec (a fixed script, values as positional parameters): model and tokenizer
paths readable by the unit's user, the server port free or held only by the unit itself, free disk for logs, the
GPUs of ``CUDA_VISIBLE_DEVICES`` present, and the GPU memory held by processes that are not the unit's (ownership
as `services.diagnosis` judges it) small enough for the new mem-fraction. Each is a `Check` line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.diagnosis import (
    MAIN_PID_AFTER_PROBES,
    exited_pids,
    parse_evidence,
    split_sections,
    unit_own_pids,
)
from services.engines import Engine, engine_for, first_flag
from services.errors import HostError, PitcrewError
from services.experiments.preflight import FAIL, MARK, OK, WARN, Check
from services.hosts import Host
from services.units import service_environment, service_user

DISK_FAIL_MIB = 1024
DISK_WARN_MIB = 5 * 1024
# Each probe's own limit on the host (they run side by side, then `ps` on the pids they named), and the whole exec's.
# A probe that runs out is not evidence: its check is a warning, never a refusal. At 1.5 s a busy host's probes ran
# out often enough to miss a stranger's GPU memory (the sim's nvidia-smi at idle priority in phase 1, session 14);
# nvidia-smi alone can take a second or two on a real host without persistence mode.
PROBE_TIMEOUT_S = 3.0
HOST_CHECKS_TIMEOUT_S = 10.0

_HOST_PARTS = (
    'u="$1"; t="${2:-3}"; usr="$3"; d=$(mktemp -d 2>/dev/null || echo /tmp/pitcrew-pf-$$); mkdir -p "$d"',
    '(timeout "$t" systemctl show "$u" -p MainPID,ControlGroup,ActiveState > "$d/show" 2>/dev/null) &',
    '(timeout "$t" nvidia-smi --query-compute-apps=pid,process_name,used_memory'
    ' --format=csv,noheader,nounits > "$d/apps" 2>/dev/null) &',
    '(timeout "$t" nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory'
    ' --format=csv,noheader,nounits > "$d/gpuapps" 2>/dev/null) &',
    '(timeout "$t" nvidia-smi --query-gpu=index,uuid,memory.used,memory.total'
    ' --format=csv,noheader,nounits > "$d/gpus" 2>/dev/null) &',
    '(timeout "$t" ss -ltnp > "$d/ss" 2>/dev/null) &',
    '(timeout "$t" df -Pk "$6" > "$d/disk" 2>/dev/null) &',
    "wait",
    MAIN_PID_AFTER_PROBES,
    "main=$(sed -n 's/^MainPID=//p' \"$d/show\" 2>/dev/null)",
    "pids=$( { echo \"$main\"; echo \"$after\"; cut -d, -f1 \"$d/apps\" 2>/dev/null;"
    " cut -d, -f2 \"$d/gpuapps\" 2>/dev/null;"
    " grep -o 'pid=[0-9]*' \"$d/ss\" | cut -d= -f2; }"
    " | tr -dc '0-9\\n' | grep -v '^0*$' | sort -un | head -n 40 | paste -sd, -)",
    f'for s in show apps gpuapps gpus ss disk; do echo "{MARK}$s"; cat "$d/$s" 2>/dev/null; done',
    f'echo "{MARK}ps"',
    'if [ -n "$pids" ]; then timeout "$t" ps -o pid=,ppid=,user:32=,lstart=,args= -p "$pids" 2>/dev/null; fi',
    f'echo "{MARK}cgroup"',
    'for p in $(echo "$pids" | tr , " "); do printf "%s " "$p"; head -n 1 "/proc/$p/cgroup" 2>/dev/null || echo; done',
    f'echo "{MARK}paths"',
    'me=$(id -un 2>/dev/null)',
    'for p in "$4" "$5"; do [ -z "$p" ] && continue;'
    ' if [ -n "$usr" ] && [ "$usr" != "$me" ]; then'
    '  if timeout "$t" sudo -n -u "$usr" test -r "$p" 2>/dev/null; then r=yes; else r=unknown-or-no; fi;'
    ' elif [ -r "$p" ]; then r=yes; else r=no; fi;'
    ' if [ -e "$p" ]; then e=yes; else e=no; fi; printf "%s\\t%s\\t%s\\n" "$e" "$r" "$p"; done',
    'rm -rf "$d"',
    "exit 0",
)
_HOST_SCRIPT = "".join(p + (" " if p.endswith("&") else "; ") for p in _HOST_PARTS).strip().rstrip(";")


def _is_local(path: str) -> bool:
    return path.startswith("/") or path.startswith("./") or path.startswith("~")


def _visible_gpus(env: dict[str, str]) -> list[str] | None:
    v = env.get("CUDA_VISIBLE_DEVICES")
    if v is None:
        return None
    return [p.strip() for p in v.split(",") if p.strip()]


async def check_host(host: Host, unit: str, unit_text: str, argv: Sequence[str], *,
                     timeout_s: float = HOST_CHECKS_TIMEOUT_S) -> list[Check]:
    """One SSH exec: paths, port, disk, GPUs and memory not owned by the unit."""
    engine = engine_for(argv)
    model = engine.model_of(argv)
    tokenizer = first_flag(argv, "--tokenizer-path") or ""
    user = service_user(unit_text) or ""
    log_dir = "/var/log"
    local = [p for p in (model, tokenizer) if p and _is_local(p)]
    script_args = [unit, f"{PROBE_TIMEOUT_S:g}", user, local[0] if local else "", local[1] if len(local) > 1 else "",
                   log_dir]
    try:
        res = await host.run(["bash", "-c", _HOST_SCRIPT, "pitcrew-preflight", *script_args], timeout=timeout_s)
    except (HostError, PitcrewError, OSError) as e:
        return [Check(WARN, f"host checks: {host.spec.name} did not answer ({e})")]
    sections = split_sections(res.stdout)
    evidence = parse_evidence(res.stdout)
    own = unit_own_pids(evidence)
    checks: list[Check] = []
    checks.extend(_path_checks(model, tokenizer, sections.get("paths", ""), user, engine))
    checks.append(_port_check(argv, evidence, own, unit, engine))
    checks.append(_disk_check(sections.get("disk", ""), log_dir))
    checks.extend(_gpu_checks(argv, unit_text, sections, own | exited_pids(evidence), attributed_pids(evidence)))
    return [_unattributed(c, evidence, unit) for c in checks]


def attributed_pids(evidence: dict[str, Any]) -> set[int] | None:
    """The pids whose owner the probes established (`ps` gave their parent and cgroup, and `systemctl show` gave
    the unit's MainPID and cgroup); None when `systemctl show` did not answer (nothing can be attributed)."""
    show = evidence.get("systemctl_show") or {}
    if "MainPID" not in show:
        return None
    return {int(p["pid"]) for p in evidence.get("process_info") or []
            if isinstance(p, dict) and str(p.get("pid", "")).isdigit()}


def _unattributed(check: Check, evidence: dict[str, Any], unit: str) -> Check:
    """A refusal that names a holder whose ownership the probes did not establish (a probe timed out on a busy
    host) is a warning: never refuse, or name a process for ending, on ownership that is not known."""
    known = attributed_pids(evidence)
    if check.holders is None or (known is not None and set(check.holders) <= known):
        return check
    return check.softened(f"whether that is {unit}'s own process could not be established (the host's process "
                          "probes did not answer in time)")


def _path_checks(model: str, tokenizer: str, text: str, user: str, engine: Engine) -> list[Check]:
    rows = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            rows[parts[2]] = (parts[0], parts[1])
    who = f"the unit's user {user}" if user else "the unit's user"
    out = []
    for what, path in (("model path", model), ("tokenizer path", tokenizer)):
        if not path:
            if what == "model path":
                out.append(Check(FAIL, engine.no_model))
            continue
        if not _is_local(path):
            out.append(Check(OK, f"{what}: {path} is a hub name (downloaded at start, not checked)"))
            continue
        exists, readable = rows.get(path, ("?", "?"))
        if exists == "no":
            out.append(Check(FAIL, f"{what}: {path} does not exist on the host"))
        elif readable == "no":
            out.append(Check(FAIL, f"{what}: {path} is not readable by {who}"))
        elif readable == "yes":
            out.append(Check(OK, f"{what}: {path} exists and is readable by {who}"))
        else:
            out.append(Check(WARN, f"{what}: {path} exists; could not check that {who} can read it"))
    return out


def _port_check(argv: Sequence[str], evidence: dict[str, Any], own: set[int], unit: str,
                engine: Engine) -> Check:
    default = engine.default_port
    port_s = first_flag(argv, "--port") or str(default)
    if not port_s.isdigit():
        return Check(WARN, f"port: {port_s} is not a number (the flag check says more)")
    port = int(port_s)
    holders = [ln for ln in evidence.get("ss_listen") or [] if str(ln.get("local", "")).rsplit(":", 1)[-1] == port_s]
    if not holders:
        return Check(OK, f"port {port}: free")
    others = [h for h in holders if h.get("pid") is not None and h["pid"] not in own]
    unknown = [h for h in holders if h.get("pid") is None]
    if others:
        h = others[0]
        return Check(FAIL, f"port {port}: held by pid {h['pid']} ({h.get('process')}), not by {unit}",
                     holders=(int(h["pid"]),))
    if unknown and not own:
        return Check(FAIL, f"port {port}: held by a process pitcrew cannot see, and {unit} is not running",
                     holders=())
    if unknown:
        return Check(WARN, f"port {port}: held by a process pitcrew cannot see (probably {unit} itself)")
    return Check(OK, f"port {port}: held only by {unit} itself (freed by the stop)")


def disk_check(text: str, path: str) -> Check:
    """The free space `df -Pk PATH` printed (``text``) against preflight's thresholds, as a check line."""
    return _disk_check(text, path)


def _disk_check(text: str, path: str) -> Check:
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 4 and cols[3].isdigit():
            free_mib = int(cols[3]) // 1024
            if free_mib < DISK_FAIL_MIB:
                return Check(FAIL, f"disk: {free_mib:,} MiB free under {path} (logs need at least "
                                   f"{DISK_FAIL_MIB:,} MiB)")
            if free_mib < DISK_WARN_MIB:
                return Check(WARN, f"disk: only {free_mib:,} MiB free under {path}")
            return Check(OK, f"disk: {free_mib / 1024:,.0f} GiB free under {path}")
    return Check(WARN, f"disk: could not read the free space under {path}")


Gpus = dict[str, tuple[str, int, int]]  # index -> (uuid, used MiB, total MiB)


def _gpu_checks(argv: Sequence[str], unit_text: str, sections: dict[str, str], own: set[int],
                known: set[int] | None = None) -> list[Check]:
    gpus: Gpus = {}
    for line in sections.get("gpus", "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 4 and parts[0].isdigit() and parts[2].isdigit() and parts[3].isdigit():
            gpus[parts[0]] = (parts[1], int(parts[2]), int(parts[3]))
    if not gpus:
        return [Check(WARN, "GPUs: nvidia-smi did not answer; GPU checks skipped")]
    visible = _visible_gpus(service_environment(unit_text))
    names = visible if visible is not None else sorted(gpus, key=int)
    checks = []
    missing = [g for g in names if g not in gpus and not any(u == g for u, _, _ in gpus.values())]
    if missing:
        checks.append(Check(FAIL, f"GPUs: CUDA_VISIBLE_DEVICES names {', '.join(missing)}, which this host does "
                                  f"not have (it has {', '.join(sorted(gpus, key=int))})"))
    tp = int(first_flag(argv, "--tp-size", "--tensor-parallel-size") or "1")
    dp = int(first_flag(argv, "--dp-size", "--data-parallel-size") or "1")
    if tp * dp > len(names):
        checks.append(Check(FAIL, f"GPUs: tp {tp} x dp {dp} needs {tp * dp} GPUs; {len(names)} are visible"))
    present = [g for g in names if g in gpus][: max(tp * dp, 1)]
    checks += _memory_checks(argv, gpus, present, _foreign_use(sections, gpus, own), known)
    return checks


def _foreign_use(sections: dict[str, str], gpus: Gpus, own: set[int]) -> dict[str, list[tuple[int, int]]]:
    """GPU index -> (pid, MiB) of the compute apps that are not the unit's own."""
    others: dict[str, list[tuple[int, int]]] = {}
    uuid_to_index = {u: i for i, (u, _, _) in gpus.items()}
    for line in sections.get("gpuapps", "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[1].isdigit() and parts[2].isdigit() and int(parts[1]) not in own:
            idx = uuid_to_index.get(parts[0])
            if idx is not None:
                others.setdefault(idx, []).append((int(parts[1]), int(parts[2])))
    return others


def _memory_checks(argv: Sequence[str], gpus: Gpus, present: list[str],
                   others: dict[str, list[tuple[int, int]]], known: set[int] | None = None) -> list[Check]:
    """Does the new mem-fraction (vLLM: gpu-memory-utilization) fit next to the memory other processes hold?
    The worst GPU decides. When the processes whose owner the probes established (`known`) are already enough to
    refuse, the refusal names only them: a holder seen by one `nvidia-smi` query and gone (or not yet probed) by
    the time of `ps` must not turn a refusal that stands on its own into a warning."""
    if known is not None:
        grounded = {g: [(p, m) for p, m in held if p in known] for g, held in others.items()}
        refusal = _memory_checks(argv, gpus, present, {g: h for g, h in grounded.items() if h})
        if refusal and refusal[0].status == FAIL:
            return refusal
    engine = engine_for(argv)
    mem_name = engine.mem_flag.removeprefix("--")
    frac_s = first_flag(argv, engine.mem_flag) or (str(engine.mem_default) if engine.mem_default is not None else None)
    try:
        frac = float(frac_s) if frac_s is not None else None
    except ValueError:
        frac = None
    worst: tuple[str, int, int, int] | None = None
    for g in present:
        total = gpus[g][2]
        held = sum(m for _, m in others.get(g, []))
        if frac is not None:
            need = int(frac * total)
            if total - held < need and (worst is None or held > worst[1]):
                worst = (g, held, need, total)
    if worst is not None:
        g, held, need, total = worst
        pids = ", ".join(f"pid {p} ({m:,} MiB)" for p, m in others.get(g, []))
        return [Check(FAIL, f"GPU {g}: {held:,} MiB held by processes that are not the unit's ({pids}); "
                            f"{mem_name} {frac} needs {need:,} of its {total:,} MiB",
                      holders=tuple(p for p, _ in others.get(g, [])))]
    if not present:
        return []
    held_any = {g: sum(m for _, m in others.get(g, [])) for g in present}
    what = (f"{mem_name} {frac}" if frac is not None else "the engine's default mem-fraction" if engine.mem_flag
            else "what the engine allocates")
    if any(held_any.values()):
        worst_g = max(held_any, key=lambda k: held_any[k])
        return [Check(WARN, f"GPU {worst_g}: {held_any[worst_g]:,} MiB held by other processes; {what} still fits")]
    return [Check(OK, f"GPUs {','.join(present)}: present, no memory held outside the unit ({what} fits)")]
