"""Small process/file helpers for the host tests (shared by the test modules of tests/hosts)."""

from __future__ import annotations

import asyncio
import subprocess
from functools import cache
from pathlib import Path

from simhost.journal_real import JOURNALCTL, backend


def proc_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_dead(pid: int, within: float = 4.0) -> bool:
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        if not proc_alive(pid):
            return True
        await asyncio.sleep(0.05)
    return not proc_alive(pid)


def read(path: Path) -> str:
    """The text of ``path``, or "" when it does not exist."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


async def wait_for_file(path: Path, within: float = 5.0) -> str:
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        text = read(path)
        if text.strip():
            return text
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


@cache
def journal_backend_label() -> str:
    """Which `journalctl` the simulated host serves: systemd's own (with its version) reading the real
    journal written by systemd-journal-remote, or the sim's Python one (the fallback)."""
    if backend() == "python":
        return "journal=python-sim"
    try:
        words = subprocess.run([str(JOURNALCTL), "--version"], capture_output=True, text=True,
                               timeout=10).stdout.split()
    except (OSError, subprocess.SubprocessError):
        words = []
    return f"journal=systemd-{words[1] if len(words) > 1 else '?'}"
