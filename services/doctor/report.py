"""What `doctor` found: one `Finding` per check line (✓ / ⚠ / ✗ and the exact fix), per host, and the whole run.

Owns the report's value types and its two renderings: lines for people (the CLI and chat) and a JSON
document for automation. A ✗ anywhere makes the run fail (`DoctorReport.ok` is False, the CLI exits 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["HOSTS_DOC", "MARKS", "DoctorReport", "Finding", "HostReport", "Status"]

Status = Literal["ok", "warn", "fail"]
MARKS: dict[Status, str] = {"ok": "✓", "warn": "⚠", "fail": "✗"}
HOSTS_DOC = "docs/HOSTS.md"


@dataclass(frozen=True)
class Finding:
    """One check line: which check, its status, what was seen, and the exact fix (with a file to install, if any)."""

    check: str  # ssh, unit, engine, flags, sudo, journal, gpu, disk, health
    status: Status
    text: str
    fix: str | None = None
    snippet: str | None = None  # a file to install verbatim (the sudoers rule)
    seconds: float = 0.0  # how long the check took (its commands on the host included)

    def lines(self) -> list[str]:
        out = [f"{MARKS[self.status]} {self.check}: {self.text}"]
        if self.fix and self.status != "ok":
            out.append(f"    fix: {self.fix}")
        if self.snippet and self.status != "ok":
            out += [f"      {line}" for line in self.snippet.rstrip("\n").splitlines()]
        return out

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "text": self.text, "fix": self.fix,
                "snippet": self.snippet, "seconds": round(self.seconds, 3)}


@dataclass
class HostReport:
    """Every finding on one host, in check order."""

    name: str
    target: str  # user@address:port, unit
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: Status) -> int:
        return sum(1 for f in self.findings if f.status == status)

    @property
    def ok(self) -> bool:
        return self.count("fail") == 0

    def lines(self) -> list[str]:
        head = f"{self.name} ({self.target}): "
        fails, warns = self.count("fail"), self.count("warn")
        head += "all ✓" if not fails and not warns else f"{fails} ✗, {warns} ⚠"
        return [f"{head} · {self.seconds:.1f} s", *(f"  {line}" for f in self.findings for line in f.lines())]

    def to_json(self) -> dict[str, Any]:
        return {"host": self.name, "target": self.target, "ok": self.ok, "seconds": round(self.seconds, 3),
                "findings": [f.to_json() for f in self.findings]}


@dataclass
class DoctorReport:
    """The whole run: one `HostReport` per host asked about, in the order asked."""

    hosts: list[HostReport] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(h.ok for h in self.hosts)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def lines(self) -> list[str]:
        failing = [h.name for h in self.hosts if not h.ok]
        verdict = "no ✗" if not failing else f"✗ on {', '.join(failing)}"
        out = [f"pitcrew doctor · {len(self.hosts)} host{'s' if len(self.hosts) != 1 else ''} · "
               f"{self.seconds:.1f} s · {verdict}"]
        for host in self.hosts:
            out += host.lines()
        out.append(f"What each host needs and why: {HOSTS_DOC}")
        return out

    def text(self) -> str:
        return "\n".join(self.lines())

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "seconds": round(self.seconds, 3), "doc": HOSTS_DOC,
                "hosts": [h.to_json() for h in self.hosts]}
