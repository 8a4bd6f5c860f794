"""What a simulated GPU host under real systemd holds: the setup script run in its overlay before systemd boots.

A GPU host as pitcrew expects to find one (docs: the host-side page): a ``pitcrew`` login user in the
``systemd-journal`` group (``journalctl -u`` without sudo), a sudoers rule that allows exactly the commands
pitcrew runs as root and nothing else (`sudoers_rule`), OpenSSH's ``sshd`` on a loopback port with the
simulated host's key, D-Bus (non-root ``systemctl show`` asks systemd over the system bus), journald with a
persistent journal, the engine unit in ``/etc/systemd/system``, and what a GPU host has that this machine
cannot: ``nvidia-smi`` (the sim's, reading the GPU ledger in the state directory), the engine's Python
package (``sglang`` 0.5.9 on ``/usr/bin/python3``'s path, the fake server behind it) and ``/opt/vllm/bin/vllm``.

Everything is written inside the overlay; the removals (``*.wants``, the default target, generators) become
whiteouts in its throwaway upper layer and never touch the machine's files.
"""

from __future__ import annotations

import shlex
import uuid
from dataclasses import dataclass
from pathlib import Path

TARGET = "pitcrew-sim.target"
SSHD_UNIT = "pitcrew-sshd.service"
SSHD_CONFIG = "/etc/ssh/sshd_config.pitcrew-sim"
USER = "pitcrew"
UNIT_DIR = "/etc/systemd/system"
SUDOERS = "/etc/sudoers.d/pitcrew"


def sudoers_rule(user: str, unit: str, unit_dir: str = UNIT_DIR) -> str:
    """The sudoers rule pitcrew needs on a host whose engine runs as `unit` (the file under /etc/sudoers.d).

    These are the exact command lines pitcrew runs through ``sudo -n --``: the unit's systemctl verbs,
    ``daemon-reload``, the atomic unit-file upload (install into a temporary name beside the unit, then
    ``mv -T`` over it), reading the unit file back, and signals for ``kill-stale`` (operator-confirmed)."""
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


@dataclass(frozen=True)
class HostLayout:
    """The parameters of one host's setup (all paths are the same inside and outside the namespace)."""

    hostname: str
    ssh_port: int
    host_key: Path
    client_public_key: str
    unit: str
    unit_text: str
    sim_dir: Path
    repo: Path
    environment: dict[str, str]
    sudoers: str | None = None  # None: `sudoers_rule(USER, unit)`; "": no rule at all
    reach: tuple[Path, ...] = ()  # more paths the login user must reach (a real engine and its model)

    def script(self) -> str:
        """The bash script `boot.sh` runs chrooted in the overlay before it execs systemd."""
        q = shlex.quote
        rule = sudoers_rule(USER, self.unit) if self.sudoers is None else self.sudoers
        shim = self.sim_dir / "lib" / "python"
        parts = [
            *base_setup(self.hostname, [SSHD_UNIT], self.environment),
            # the login user pitcrew connects as; '*' (not '!') so sshd does not treat it as locked
            f"id -u {USER} >/dev/null 2>&1 || useradd -m -p '*' -s /bin/bash -G systemd-journal {USER}",
            f"install -d -m 700 -o {USER} -g {USER} /home/{USER}/.ssh",
            _file(f"/home/{USER}/.ssh/authorized_keys", self.client_public_key.strip() + "\n"),
            f"chown {USER}:{USER} /home/{USER}/.ssh/authorized_keys && chmod 600 /home/{USER}/.ssh/authorized_keys",
            f"rm -f {SUDOERS}",
            *([_file(SUDOERS, rule), f"chmod 440 {SUDOERS}", f"visudo -cq -f {SUDOERS}"] if rule else []),
            _file(SSHD_CONFIG, self._sshd_config()),
            _file(f"{UNIT_DIR}/{SSHD_UNIT}",
                  "[Unit]\nDescription=OpenSSH server (simulated GPU host)\nAfter=network.target\n\n"
                  f"[Service]\nExecStartPre=/usr/sbin/sshd -t -f {SSHD_CONFIG}\n"
                  f"ExecStart=/usr/sbin/sshd -D -e -f {SSHD_CONFIG}\n"
                  "RuntimeDirectory=sshd\nRuntimeDirectoryMode=0755\nRestart=on-failure\n"),
            _file(f"{UNIT_DIR}/{self.unit}", self.unit_text),
            # what a GPU host has and this machine cannot: the engine's package and nvidia-smi
            _file("/usr/lib/python3/dist-packages/pitcrew-sim-engines.pth",
                  f"{shim}\n{self.sim_dir / 'lib' / 'vllm'}\n"),
            _file("/usr/bin/nvidia-smi",
                  f"#!/bin/sh\nSIMHOST_DIR={q(str(self.sim_dir))} exec /usr/bin/python3 -S "
                  f"{q(str(self.sim_dir / 'bin' / 'nvidia-smi'))} \"$@\"\n"),
            "chmod 755 /usr/bin/nvidia-smi",
            "mkdir -p /opt/vllm/bin",
            _file("/opt/vllm/bin/vllm",
                  f"#!/usr/bin/python3\nimport sys\nsys.path.insert(0, {str(self.repo)!r})\n"
                  "from simhost.vllm.serve import main\nsys.exit(main(sys.argv[1:]))\n"),
            "chmod 755 /opt/vllm/bin/vllm",
            # the pitcrew user must reach the source tree and the state directory through their parents
            *(f"p={q(str(path))}; while [ \"$p\" != / ]; do p=$(dirname \"$p\"); chmod o+x \"$p\"; done"
              for path in (self.repo, self.sim_dir, *self.reach)),
        ]
        return "\n".join(parts) + "\n"

    def _sshd_config(self) -> str:
        return "\n".join([
            f"Port {self.ssh_port}", "ListenAddress 127.0.0.1", f"HostKey {self.host_key}",
            "AuthorizedKeysFile .ssh/authorized_keys", "PidFile /run/sshd-pitcrew-sim.pid", "UsePAM no",
            "PermitRootLogin no", f"AllowUsers {USER}", "PubkeyAuthentication yes", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "AllowAgentForwarding no", "AllowTcpForwarding no",
            "X11Forwarding no", "PrintMotd no", "MaxStartups 100", "LogLevel INFO",
            "Subsystem sftp internal-sftp", ""])


def base_setup(hostname: str, wants: list[str], environment: dict[str, str] | None = None) -> list[str]:
    """The setup lines of any host: nothing of the image starts (no ``*.wants``, no default target, no generators:
    whiteouts in the overlay), a hostname and machine id of its own, and our target pulling in journald (the
    tmpfiles setup gives the journal its group and ACLs, the flush makes it persistent), D-Bus and `wants`."""
    q = shlex.quote
    env = " ".join(q(f"{k}={v}") for k, v in sorted((environment or {}).items()))
    return [
        "set -euo pipefail",
        "umask 022",
        "rm -rf /etc/systemd/system/*.wants /usr/lib/systemd/system/*.wants /etc/systemd/system/default.target",
        "rm -f /usr/lib/systemd/system-generators/* /etc/systemd/system-generators/* 2>/dev/null || true",
        "ln -sf /dev/null /etc/systemd/system/systemd-journald-audit.socket",
        f"echo {q(hostname)} > /etc/hostname",
        f"printf '127.0.1.1\\t%s\\n' {q(hostname)} >> /etc/hosts",
        f"echo {uuid.uuid4().hex} > /etc/machine-id",
        "mkdir -p /var/log/journal /etc/systemd/system.conf.d",
        _file("/etc/systemd/system.conf.d/pitcrew-sim.conf", f"[Manager]\nDefaultEnvironment={env}\n"),
        _file(f"{UNIT_DIR}/{TARGET}",
              "[Unit]\nDescription=pitcrew simulated GPU host\n"
              "Wants=systemd-journald.service systemd-tmpfiles-setup.service systemd-journal-flush.service "
              f"dbus.socket {' '.join(wants)}\n"),
    ]


def _file(path: str, text: str) -> str:
    """A heredoc writing `text` to `path` (quoted: nothing in it is expanded)."""
    marker = "PITCREW_SIM_EOF"
    assert marker not in text
    return f"cat > {shlex.quote(path)} <<'{marker}'\n{text}{'' if text.endswith(chr(10)) else chr(10)}{marker}"
