"""The sudoers rule pitcrew needs on a host, and how to recognise sudo's refusal of a command.

pitcrew runs as root exactly these command lines, always as ``sudo -n -- ARGV`` (never a shell): the unit's
``systemctl`` verbs, ``daemon-reload``, the atomic unit upload (``install`` of the staged file into a temporary
name beside the unit, then ``mv -f -T`` over it, ``rm -f --`` of the temporary on failure), ``cat --`` of the unit
file, and signals to a pid for ``kill-stale``. `sudoers_rule` is that list as a file for ``/etc/sudoers.d/``;
docs/HOSTS.md shows it for the default unit.
"""

from __future__ import annotations

__all__ = ["refusal", "sudoers_rule"]

# What sudo 1.9 prints (to stderr, exit 1) when a rule does not allow the command under -n, or the user has none.
_REFUSALS = ("sudo: a password is required", "is not allowed to execute", "is not in the sudoers file",
             "may not run sudo on", "sudo: a terminal is required")


def sudoers_rule(user: str, unit: str, unit_dir: str = "/etc/systemd/system") -> str:
    """The /etc/sudoers.d/ file that allows `user` exactly what pitcrew runs as root for `unit`."""
    unit_path = f"{unit_dir.rstrip('/')}/{unit}"
    tmp = f"{unit_dir.rstrip('/')}/.{unit}.pitcrew-*.tmp"
    home = f"/home/{user}"
    alias = "PITCREW_" + "".join(c if c.isalnum() else "_" for c in unit.upper())
    verbs = ", ".join(f"/usr/bin/systemctl {v} {unit}" for v in ("start", "stop", "restart", "reset-failed"))
    return (
        f"# pitcrew: exactly what the bot runs as root for {unit} (see docs/HOSTS.md)\n"
        f"Cmnd_Alias {alias}_CTL = /usr/bin/systemctl daemon-reload, {verbs}, /usr/bin/systemctl show {unit} *, "
        f"/usr/bin/systemctl cat {unit}\n"
        f"Cmnd_Alias {alias}_FILE = /usr/bin/install -m 644 {home}/.pitcrew-upload-* {tmp}, "
        f"/usr/bin/mv -f -T {tmp} {unit_path}, /usr/bin/rm -f -- {tmp}, /usr/bin/cat -- {unit_path}\n"
        f"Cmnd_Alias {alias}_KILL = /usr/bin/kill -TERM [0-9]*, /usr/bin/kill -KILL [0-9]*, /usr/bin/kill -0 [0-9]*\n"
        f"Defaults:{user} !requiretty\n"
        f"{user} ALL=(root) NOPASSWD: {alias}_CTL, {alias}_FILE, {alias}_KILL\n"
    )


def refusal(status: int, stderr: str) -> bool:
    """Whether a ``sudo -n --`` command's exit and stderr are sudo refusing it (the command itself never ran)."""
    return status == 1 and any(marker in stderr for marker in _REFUSALS)
