"""Fixtures for the host contract suite: one command environment, two SSH servers.

``target`` is parametrized: ``sim`` is `simhost.ssh.start_ssh_server` (asyncssh), ``sshd`` is a
real OpenSSH ``sshd`` started by `simhost.openssh.start_openssh_server` on a free port with its
own config (skipped with a visible reason when sshd is not installed). Both serve the same
environment: a ``bin/`` first on ``PATH`` holding a ``sudo`` shim, ``HOME`` set to the target's
directory.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from hosts_kit import journal_backend_label

from services.hosts.contract import HostSpec
from services.hosts.ssh import SshHost
from simhost.openssh import sshd_path, start_openssh_server
from simhost.ssh import start_ssh_server

SUDO_SHIM = """#!/bin/sh
# Test shim for sudo: accepts -n and --, records the call, runs the command as is.
while [ $# -gt 0 ]; do
  case "$1" in
    -n) shift ;;
    --) shift; break ;;
    -*) echo "sudo shim: unsupported option $1" >&2; exit 1 ;;
    *) break ;;
  esac
done
printf '%s\\n' "$1" >> "$PITCREW_TEST_SUDO_LOG"
printf '%s\\n' "$*" >> "$PITCREW_TEST_SUDO_LOG.argv"
exec "$@"
"""


def pytest_report_header(config: pytest.Config) -> str:
    return (f"simulated host's journal: {journal_backend_label()} "
            "(SIMHOST_JOURNAL=python forces the sim's own journalctl)")


@dataclass
class Target:
    """One SSH server over the shared test environment, plus the hosts opened against it."""

    kind: str
    root: Path
    env: dict[str, str]
    bin: Path
    server: Any = None
    hosts: list[SshHost] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def sudo_log(self) -> Path:
        return Path(self.env["PITCREW_TEST_SUDO_LOG"])

    async def start(self, port: int = 0) -> None:
        starter = start_ssh_server if self.kind == "sim" else start_openssh_server
        self.server = await starter(self.root, env=self.env, path_prefix=[self.bin], port=port)

    async def restart(self) -> None:
        """Stop the server and start it again on the same port (keys reused)."""
        port = self.server.port
        await self.server.close()
        await self.start(port)

    def spec(self, **overrides: Any) -> HostSpec:
        base = HostSpec(
            name=f"{self.kind}-host",
            address=self.server.host,
            port=self.server.port,
            user=self.server.user,
            client_key=self.server.client_key,
            known_hosts=self.server.known_hosts,
            unit="sglang.service",
            unit_dir=str(self.work),
            server_url="http://127.0.0.1:1",
        )
        return replace(base, **overrides)

    def host(self, spec: HostSpec | None = None, **kwargs: Any) -> SshHost:
        kwargs.setdefault("on_command", self.commands.append)
        kwargs.setdefault("connect_timeout", 5.0)
        host = SshHost(spec or self.spec(), **kwargs)
        self.hosts.append(host)
        return host

    async def close(self) -> None:
        for host in self.hosts:
            await host.close()
        if self.server is not None:
            await self.server.close()


def _make_env(root: Path) -> tuple[dict[str, str], Path]:
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    (root / "work").mkdir()
    shim = bin_dir / "sudo"
    shim.write_text(SUDO_SHIM)
    shim.chmod(0o755)
    env = {
        "HOME": str(root),
        "LANG": "C.UTF-8",
        "PITCREW_TEST_SUDO_LOG": str(root / "sudo.log"),
    }
    return env, bin_dir


@pytest.fixture(params=["sim", "sshd"])
async def target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Target]:
    kind = request.param
    if kind == "sshd" and sshd_path() is None:
        pytest.skip("OpenSSH sshd is not installed (/usr/sbin/sshd): the real-sshd half is skipped")
    env, bin_dir = _make_env(tmp_path)
    tgt = Target(kind=kind, root=tmp_path, env=env, bin=bin_dir)
    await tgt.start()
    try:
        yield tgt
    finally:
        with contextlib.suppress(Exception):
            await tgt.close()


@pytest.fixture
async def sim_target(tmp_path: Path) -> AsyncIterator[Target]:
    env, bin_dir = _make_env(tmp_path)
    tgt = Target(kind="sim", root=tmp_path, env=env, bin=bin_dir)
    await tgt.start()
    try:
        yield tgt
    finally:
        with contextlib.suppress(Exception):
            await tgt.close()
