"""The sudo rule a host has against the one pitcrew needs: ``sudo -n -l`` read, never anything run as root.

`needed_commands` lists the command lines of `services.hosts.sudoers_rule` (its ``Cmnd_Alias`` entries);
`allowed_commands` reads what ``sudo -n -l`` says the login user may run as root without a password
(sudo expands the aliases when it lists them); `compare` says which needed lines are missing and which
allowed lines go beyond what pitcrew runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SudoComparison", "allowed_commands", "compare", "needed_commands"]

# an entry of `sudo -l`: "    (root) NOPASSWD: /usr/bin/a, /usr/bin/b"; runas may be "(ALL : ALL)", tags repeat
_ENTRY = re.compile(r"^\s*\((?P<runas>[^)]*)\)\s*(?P<tags>(?:[A-Z_]+:\s*)*)(?P<cmds>.*)$")


def needed_commands(rule: str) -> list[str]:
    """The command lines a sudoers rule's ``Cmnd_Alias`` entries list, in order."""
    out: list[str] = []
    for line in rule.splitlines():
        if line.startswith("Cmnd_Alias ") and "=" in line:
            out += [c.strip() for c in line.split("=", 1)[1].split(", ") if c.strip()]
    return out


def allowed_commands(listing: str) -> list[str]:
    """What ``sudo -n -l`` says the user may run as root with no password (``ALL`` stays ``ALL``)."""
    out: list[str] = []
    listed = False
    for line in listing.splitlines():
        if "may run the following commands" in line:
            listed = True
            continue
        if not listed:
            continue
        m = _ENTRY.match(line)
        if m is None:
            continue
        runas = m.group("runas").split(":")[0].strip()
        if runas not in ("root", "ALL") or "NOPASSWD" not in m.group("tags"):
            continue  # another target user, or one that asks for a password (sudo -n refuses it)
        out += [c.strip() for c in m.group("cmds").split(", ") if c.strip()]
    return out


@dataclass(frozen=True)
class SudoComparison:
    missing: tuple[str, ...]  # needed and not allowed
    extra: tuple[str, ...]  # allowed beyond what pitcrew runs (ALL included)
    needed: int


def compare(needed: list[str], allowed: list[str]) -> SudoComparison:
    have = set(allowed)
    if "ALL" in have:
        return SudoComparison((), ("ALL",), len(needed))
    want = set(needed)
    return SudoComparison(tuple(c for c in needed if c not in have), tuple(c for c in allowed if c not in want),
                          len(needed))
