"""`Doctor`: is each configured host set up the way pitcrew needs it? Read-only checks, in parallel.

For each host, concurrently with the others: SSH first (reachable, and the host key matches the pinned one —
a changed key is ✗ and nothing else is tried on that host), then, concurrently, each under its own deadline:

* unit    — ``systemctl show`` + ``systemctl cat`` as the login user: the unit is loaded from the file pitcrew
            edits, runs an engine pitcrew knows (`services.units.detect_engine`), is active, needs no daemon-reload;
* flags   — the engine's own ``--help`` read on the host and the unit's ``ExecStart=`` checked against it
            (preflight's reading, `services.experiments.check_flags`: SGLang's `--help`, vLLM's `--help=all`);
* sudo    — ``sudo -n -l`` (lists, runs nothing) against `services.hosts.sudoers_rule`; what is missing is named
            and the rule to install printed;
* journal — ``journalctl -u UNIT`` readable by the login user, and the journal persistent (``--header``'s files
            under /var/log/journal, not only /run);
* gpu     — ``nvidia-smi`` answers;
* disk    — free space under /var/log (the journal) and the model's filesystem, preflight's thresholds;
* health  — the server URL's ``/health`` answers 200 (from where pitcrew runs, as the benchmarks reach it).

Nothing here changes a host: every command is a read, none runs through sudo.
"""

from __future__ import annotations

import asyncio
import dataclasses
import posixpath
import shlex
import time
from collections.abc import Awaitable, Callable, Sequence

import httpx

from services.diagnosis import split_sections
from services.doctor.report import HOSTS_DOC, DoctorReport, Finding, HostReport, Status
from services.doctor.sudo import allowed_commands, compare, needed_commands
from services.engines import ENGINES, detect_engine, engine_display, get_flag
from services.errors import HostError, HostKeyMismatch, PitcrewError, UnitError
from services.experiments import EngineFlagCache, check_flags, disk_check
from services.hosts import Host, HostPool, HostSpec, sudoers_rule
from services.httpclient import http_client
from services.journal import parse_show
from services.units import read_exec_start

__all__ = ["DEFAULT_TIMEOUT_S", "Doctor"]

DEFAULT_TIMEOUT_S = 10.0
MARK = "@@pitcrew-section "
ORDER = ("ssh", "unit", "engine", "flags", "sudo", "journal", "gpu", "disk", "health")
_STATUS = {"✓": "ok", "⚠": "warn", "✗": "fail"}
_JOURNAL_DENIED = ("insufficient permissions", "not seeing messages from other users", "Permission denied")

# $1 unit: what systemd loaded, and the unit file as systemd reads it (drop-ins included)
_UNIT_SCRIPT = (
    f'echo "{MARK}show"; systemctl show "$1" --no-pager '
    "-p LoadState,ActiveState,SubState,FragmentPath,NeedDaemonReload 2>&1; "
    f'echo "{MARK}cat"; systemctl cat --no-pager "$1" 2>/dev/null; exit 0'
)
# $1 unit: read the unit's journal as the login user; the files the journal is kept in; the user's groups
_JOURNAL_SCRIPT = (
    f'echo "{MARK}read"; journalctl -u "$1" -n 1 --no-pager -o cat 2>&1; echo "exit=$?"; '
    f'echo "{MARK}files"; journalctl --header 2>/dev/null | sed -n "s/^File path: //p"; '
    f'echo "{MARK}dirs"; for d in /var/log/journal /run/log/journal; do [ -d "$d" ] && echo "$d"; done; '
    f'echo "{MARK}groups"; id -nG; exit 0'
)
# $@ paths: free space under each, one `df -Pk` per path
_DISK_SCRIPT = f'for p in "$@"; do echo "{MARK}$p"; df -Pk "$p" 2>&1; done; exit 0'

Check = Callable[[Host], Awaitable[list[Finding]]]


def _is_local(path: str) -> bool:
    return path.startswith("/")


class Doctor:
    """Runs the checks on the hosts of a pool (see the module docstring). Changes nothing on any host."""

    def __init__(self, hosts: HostPool, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 flags: EngineFlagCache | None = None) -> None:
        self.hosts = hosts
        self.timeout_s = timeout_s
        self.flags = flags or EngineFlagCache(help_timeout_s=timeout_s)

    async def run(self, names: Sequence[str] | None = None) -> DoctorReport:
        """Every check on every named host (all hosts when `names` is empty or None), hosts in parallel."""
        t0 = time.monotonic()
        chosen = list(names) if names else self.hosts.names()
        reports = await asyncio.gather(*(self.host(self.hosts.get(n)) for n in chosen))
        return DoctorReport(list(reports), time.monotonic() - t0)

    async def host(self, host: Host) -> HostReport:
        spec = host.spec
        t0 = time.monotonic()
        report = HostReport(spec.name, f"{spec.user}@{spec.address}:{spec.port}, {spec.unit}")
        ssh = await self._guard("ssh", self._ssh(host))
        if ssh[0].status == "warn":  # the SSH step itself did not finish: nothing else on SSH can
            ssh = [dataclasses.replace(ssh[0], status="fail", fix=self._unreachable_fix(spec),
                                       text=f"no answer over SSH within {self.timeout_s:g} s")]
        report.findings += ssh
        if any(f.status == "fail" for f in ssh):
            if not any(f.text.startswith("host key") for f in ssh):
                report.findings += await self._guard("health", self._health(spec))
            report.seconds = time.monotonic() - t0
            return report
        parts = await asyncio.gather(
            self._unit_and_flags(host),
            self._guard("sudo", self._sudo(host)),
            self._guard("journal", self._journal(host)),
            self._guard("gpu", self._gpu(host)),
            self._guard("health", self._health(spec)),
        )
        for part in parts:
            report.findings += part
        report.findings.sort(key=lambda f: ORDER.index(f.check) if f.check in ORDER else len(ORDER))
        report.seconds = time.monotonic() - t0
        return report

    async def _guard(self, check: str, work: Awaitable[list[Finding]], timeout_s: float | None = None) -> list[Finding]:
        """A check under its deadline; one that cannot finish is ⚠ (unknown), one that raised is ⚠ with why. Each
        finding carries the check's time."""
        limit = timeout_s or self.timeout_s
        t0 = time.monotonic()
        try:
            found = await asyncio.wait_for(work, limit)
        except TimeoutError:
            found = [Finding(check, "warn", f"did not answer within {limit:g} s; not checked",
                             "run `pitcrew doctor HOST --timeout 60` when the host is less busy")]
        except (HostError, PitcrewError, OSError) as e:
            found = [Finding(check, "warn", f"could not be checked: {e}")]
        took = time.monotonic() - t0
        return [dataclasses.replace(f, seconds=took) for f in found]

    # -- ssh -------------------------------------------------------------------------------------

    async def _ssh(self, host: Host) -> list[Finding]:
        spec = host.spec
        try:
            res = await host.run(["id", "-un"], timeout=self.timeout_s)
        except HostKeyMismatch as e:
            return [Finding("ssh", "fail", f"host key: {e} Nothing else was checked on this host.",
                            f"confirm the host's new key out of band (on the host: `ssh-keygen -lf "
                            f"/etc/ssh/ssh_host_ed25519_key.pub`; from here: `ssh-keyscan -p {spec.port} "
                            f"{spec.address}`) and only then replace its line in {spec.known_hosts}")]
        except HostError as e:
            return [Finding("ssh", "fail", str(e), self._unreachable_fix(spec))]
        who = res.stdout.strip() or spec.user
        return [Finding("ssh", "ok", f"{who}@{spec.address}:{spec.port} reachable; host key matches the pin "
                                     f"in {spec.known_hosts}")]

    @staticmethod
    def _unreachable_fix(spec: HostSpec) -> str:
        return (f"check that sshd listens on {spec.address}:{spec.port} and that the bot's public key "
                f"({spec.client_key}.pub) is in ~{spec.user}/.ssh/authorized_keys ({HOSTS_DOC} §1)")

    # -- the unit, its engine and its flags --------------------------------------------------

    async def _unit_and_flags(self, host: Host) -> list[Finding]:
        seen: list[tuple[str, ...]] = []  # the unit's ExecStart= argv, once read
        found = await self._guard("unit", self._unit(host, seen))
        if not seen:
            return [*found, *await self._guard("disk", self._disk(host, ()))]
        argv = seen[0]
        flags, disk = await asyncio.gather(self._guard("flags", self._flags(host, argv)),
                                           self._guard("disk", self._disk(host, argv)))
        return [*found, *flags, *disk]

    async def _unit(self, host: Host, seen: list[tuple[str, ...]]) -> list[Finding]:
        spec = host.spec
        path = f"{spec.unit_dir.rstrip('/')}/{spec.unit}"
        res = await host.run(["bash", "-c", _UNIT_SCRIPT, "pitcrew-doctor", spec.unit], timeout=self.timeout_s)
        sections = split_sections(res.stdout)
        show = parse_show(sections.get("show", ""))
        load = show.get("LoadState", "")
        if load != "loaded":
            why = f"LoadState={load}" if load else (sections.get("show", "").strip()[-200:] or "no answer")
            return [Finding("unit", "fail", f"{spec.unit} is not loaded on the host ({why})",
                            f"install the engine's unit as {path} ({HOSTS_DOC} §4) and run `sudo systemctl "
                            f"daemon-reload`, or set hosts[].unit to the unit that runs the engine")]
        out: list[Finding] = []
        fragment = show.get("FragmentPath", "")
        state = f"{show.get('ActiveState', '?')} ({show.get('SubState', '?')})"
        if fragment and fragment != path:
            out.append(Finding("unit", "fail", f"{spec.unit} is loaded from {fragment}, but pitcrew reads and "
                                               f"writes {path}",
                               f"set hosts[].unit_dir = \"{posixpath.dirname(fragment)}\" for {spec.name}"))
        else:
            out.append(Finding("unit", "ok", f"{spec.unit} loaded from {path}, {state}"))
        if show.get("ActiveState") != "active":
            out.append(Finding("unit", "warn", f"{spec.unit} is {state}, so it does not serve",
                               f"start it (`sudo systemctl start {spec.unit}`), or `pitcrew` `rollback` to the last "
                               "known-good configuration; `logs` says why it stopped"))
        if show.get("NeedDaemonReload") == "yes":
            out.append(Finding("unit", "warn", f"{path} changed on disk and systemd has not reloaded it: the server "
                                               "runs an older version of the file",
                               "`sudo systemctl daemon-reload` (the next try does it too)"))
        out += self._engine(spec, sections.get("cat", ""), seen)
        return out

    def _engine(self, spec: HostSpec, text: str, seen: list[tuple[str, ...]]) -> list[Finding]:
        try:
            argv = read_exec_start(text).argv
        except UnitError as e:
            return [Finding("engine", "fail", f"cannot read {spec.unit}'s ExecStart=: {e}",
                            f"give {spec.unit} exactly one ExecStart= that runs the engine ({HOSTS_DOC} §4)")]
        engine = detect_engine(argv)
        shown = " ".join(shlex.quote(w) for w in argv[:3])
        if engine == "unknown":
            return [Finding("engine", "fail", f"ExecStart= runs `{shown} …`, neither SGLang "
                                              "(`python -m sglang.launch_server`) nor vLLM (`vllm serve`)",
                            "point hosts[].unit at the unit that runs the engine")]
        seen.append(tuple(argv))
        named = next((e.name for e in ENGINES if e.name in spec.unit.lower()), None)
        if named is not None and named != engine:
            return [Finding("engine", "warn", f"{spec.unit} runs {engine_display(engine)} (`{shown} …`) though its "
                                              f"name says {engine_display(named)}",
                            "nothing to change if that is intended; pitcrew plans flags in the engine it reads")]
        return [Finding("engine", "ok", f"{engine_display(engine)} (`{shown} …`)")]

    async def _flags(self, host: Host, argv: tuple[str, ...]) -> list[Finding]:
        out = []
        for c in await check_flags(self.flags, host, argv):
            status: Status = _STATUS.get(c.status, "warn")  # type: ignore[assignment]
            text = c.text.removeprefix("flags: ")
            fix = (f"correct ExecStart= of {host.spec.unit}: the engine would refuse to start with it "
                   "(`rollback` restores the last known-good one)") if status == "fail" else None
            out.append(Finding("flags", status, text, fix))
        return out

    async def _disk(self, host: Host, argv: tuple[str, ...]) -> list[Finding]:
        paths = ["/var/log"]
        model = get_flag(argv, "--model-path") or get_flag(argv, "--model") or ""
        if _is_local(model):
            paths.append(model)
        res = await host.run(["bash", "-c", _DISK_SCRIPT, "pitcrew-doctor", *paths], timeout=self.timeout_s)
        sections = split_sections(res.stdout)
        out = []
        for path in paths:
            c = disk_check(sections.get(path, ""), path)
            status: Status = _STATUS.get(c.status, "warn")  # type: ignore[assignment]
            fix = f"free space on the filesystem of {path}" if status != "ok" else None
            out.append(Finding("disk", status, c.text.removeprefix("disk: "), fix))
        return out

    # -- sudo ----------------------------------------------------------------------------------

    async def _sudo(self, host: Host) -> list[Finding]:
        spec = host.spec
        if not spec.sudo:
            return [Finding("sudo", "ok", f"not used (hosts[].sudo = false: {spec.user} runs systemctl itself)")]
        rule = sudoers_rule(spec.user, spec.unit, spec.unit_dir)
        needed = needed_commands(rule)
        res = await host.run(["sudo", "-n", "-l"], timeout=self.timeout_s)
        listing = res.stdout + res.stderr
        allowed = allowed_commands(listing) if res.ok else []
        cmp = compare(needed, allowed)
        install = (f"install this as /etc/sudoers.d/pitcrew (mode 440; check it with `visudo -cf "
                   f"/etc/sudoers.d/pitcrew`), {HOSTS_DOC} §2:")
        if cmp.missing:
            last = listing.strip().splitlines()[-1][:160] if listing.strip() else "no rule"
            said = "" if res.ok else f" (`sudo -n -l`: {last})"
            shown = ", ".join(f"`{c}`" for c in cmp.missing[:4]) + (f" and {len(cmp.missing) - 4} more"
                                                                   if len(cmp.missing) > 4 else "")
            return [Finding("sudo", "fail", f"the rule for {spec.user} lacks {len(cmp.missing)} of the {cmp.needed} "
                                            f"commands pitcrew runs as root{said}: {shown}", install, rule)]
        if cmp.extra:
            extra = ", ".join(f"`{c}`" for c in cmp.extra[:4])
            return [Finding("sudo", "warn", f"the rule allows every command pitcrew needs, and more: {extra}",
                            "narrow it to exactly pitcrew's commands: " + install, rule)]
        return [Finding("sudo", "ok", f"the rule allows exactly the {cmp.needed} commands pitcrew runs as root")]

    # -- journal ---------------------------------------------------------------------------------

    async def _journal(self, host: Host) -> list[Finding]:
        spec = host.spec
        res = await host.run(["bash", "-c", _JOURNAL_SCRIPT, "pitcrew-doctor", spec.unit], timeout=self.timeout_s)
        sections = split_sections(res.stdout)
        read = sections.get("read", "")
        out: list[Finding] = []
        denied = next((m for m in _JOURNAL_DENIED if m in read), None)
        if denied or "exit=0" not in read:
            why = denied or read.strip()[-160:]
            out.append(Finding("journal", "fail", f"{spec.user} cannot read the journal of {spec.unit} ({why})",
                               f"`sudo usermod -aG systemd-journal {spec.user}` ({HOSTS_DOC} §1), then reconnect"))
        else:
            out.append(Finding("journal", "ok", f"`journalctl -u {spec.unit}` readable by {spec.user}"))
        files = [f for f in sections.get("files", "").splitlines() if f.strip()]
        dirs = sections.get("dirs", "").split()
        persistent = any(f.startswith("/var/log/journal/") for f in files) if files else "/var/log/journal" in dirs
        if persistent:
            out.append(Finding("journal", "ok", "persistent (kept under /var/log/journal across reboots)"))
        else:
            where = "only under /run/log/journal" if files or "/run/log/journal" in dirs else "nowhere pitcrew can see"
            out.append(Finding("journal", "warn", f"volatile: the journal is kept {where}, so a reboot loses the "
                                                  "evidence of what happened before it",
                               "`sudo mkdir -p /var/log/journal && sudo systemd-tmpfiles --create --prefix "
                               f"/var/log/journal && sudo systemctl restart systemd-journald` ({HOSTS_DOC} §3)"))
        return out

    # -- GPUs and the server ----------------------------------------------------------------------

    async def _gpu(self, host: Host) -> list[Finding]:
        res = await host.run(["nvidia-smi", "--query-gpu=index,name,memory.total",
                              "--format=csv,noheader,nounits"], timeout=self.timeout_s)
        rows = [[p.strip() for p in line.split(",")] for line in res.stdout.splitlines() if line.count(",") >= 2]
        if res.ok and rows:
            names = sorted({r[1] for r in rows})
            return [Finding("gpu", "ok", f"nvidia-smi answers: {len(rows)} GPU{'s' if len(rows) != 1 else ''} "
                                         f"({', '.join(names)})")]
        if res.exit_status == 127:
            return [Finding("gpu", "fail", f"nvidia-smi is not on {host.spec.user}'s PATH",
                            "install the NVIDIA driver's utilities (nvidia-smi) on the host")]
        why = (res.stderr or res.stdout).strip()[-200:] or f"exit {res.exit_status}, no GPUs listed"
        return [Finding("gpu", "fail", f"nvidia-smi does not answer: {why}",
                        "check the driver on the host (`nvidia-smi`, and the kernel log for Xid errors)")]

    async def _health(self, spec: HostSpec) -> list[Finding]:
        url = f"{spec.server_url}/health"
        t0 = time.monotonic()
        try:
            async with http_client(url, timeout=self.timeout_s) as client:
                r = await client.get(url)
        except httpx.HTTPError as e:
            return [Finding("health", "fail", f"{url} does not answer ({type(e).__name__})",
                            f"is {spec.unit} running and listening on that port? `pitcrew` `logs {spec.name}` says "
                            "why not; check hosts[].server_url")]
        ms = (time.monotonic() - t0) * 1000
        if r.status_code == 200:
            return [Finding("health", "ok", f"{url} answers 200 ({ms:.0f} ms)")]
        return [Finding("health", "fail", f"{url} answers HTTP {r.status_code}",
                        f"the server is up but not healthy: `pitcrew` `logs {spec.name}`")]
