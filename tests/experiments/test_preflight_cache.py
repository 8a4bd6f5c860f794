"""The engine flag cache: a slow first read does not hold up the chat preview, and it is read once per version."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from services.errors import HostError
from services.experiments.preflight import EngineFlagCache, check_flags
from services.hosts.contract import CommandResult, HostSpec
from simhost.sglang import args as sim_args
from simhost.sglang.args import build_parser
from simhost.sglang.flags_059 import FLAGS_059

ARGV = ("/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", "/m", "--port", "1")


@dataclass
class SlowEngineHost:
    """A host whose engine prints its --help after `delay` seconds (real SGLang imports torch first)."""

    delay: float
    version: str = "0.5.9"
    runs: list[str] = field(default_factory=list)

    @property
    def spec(self) -> HostSpec:
        return HostSpec("gpu-9", "127.0.0.1", 22, "u", Path("/k"), Path("/kh"), "sglang.service", "/etc", "http://x")

    async def run(self, argv, *, timeout, input=None, check=False, sudo=False):  # type: ignore[no-untyped-def]
        self.runs.append(argv[3])
        if argv[3] == "pitcrew-version":
            out = self.version + "\n"
        else:
            await asyncio.sleep(self.delay)
            out = "@@pitcrew-section help\n" + build_parser().format_help() + "@@pitcrew-section types\n{}\n"
        return CommandResult(tuple(argv), 0, out, "", 0.0)


async def test_a_slow_first_read_is_a_warning_then_fills_the_cache() -> None:
    host = SlowEngineHost(delay=0.3)
    cache = EngineFlagCache()
    with pytest.raises(HostError, match=r"longer than 0\.05 s"):
        await cache.get(host, "sglang", ARGV[0], wait_s=0.05)  # type: ignore[arg-type]
    (line,) = await check_flags(cache, host, ARGV, wait_s=0.05)  # type: ignore[arg-type]
    assert line.status == "⚠" and "still reading it" in line.text
    await asyncio.sleep(0.5)
    checks = await check_flags(cache, host, ARGV, wait_s=0.05)  # type: ignore[arg-type]
    assert checks[0].status == "✓"
    assert cache.reads == 1 and host.runs.count("pitcrew-help") == 1


async def test_a_new_version_is_read_again_and_names_flags_it_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    host = SlowEngineHost(delay=0.0)
    cache = EngineFlagCache()
    first = await cache.get(host, "sglang", ARGV[0])  # type: ignore[arg-type]
    assert first is not None and first.cli.version == "0.5.9" and first.removed == {}
    # the host is upgraded to an engine without --trust-remote-code
    monkeypatch.setattr(sim_args, "FLAGS_059", tuple(f for f in FLAGS_059 if f.names[0] != "--trust-remote-code"))
    host.version = "0.6.0"
    again = await cache.get(host, "sglang", ARGV[0])  # type: ignore[arg-type]
    assert again is not None and again.cli.version == "0.6.0" and cache.reads == 2
    assert again.removed == {"--trust-remote-code": "0.5.9"}
    checks = await check_flags(cache, host, (*ARGV, "--trust-remote-code"))  # type: ignore[arg-type]
    texts = [c.line() for c in checks]
    assert "✗ sglang 0.6.0 refuses the command line: `launch_server.py: error: unrecognized arguments: " \
           "--trust-remote-code`" in texts
    assert "⚠ sglang 0.6.0: --trust-remote-code was accepted by sglang 0.5.9 on this host and is not by 0.6.0 " \
           "(removed or renamed)" in texts
