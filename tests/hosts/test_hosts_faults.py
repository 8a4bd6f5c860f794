"""SSH faults: a host that hangs mid-command, one that accepts TCP but never speaks SSH."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

import pytest

from services.errors import HostTimeout, HostUnreachable
from simhost.openssh import _descendants


async def test_a_host_that_hangs_mid_command_still_meets_the_deadline(target):
    if target.kind != "sshd":
        pytest.skip("freezing the server needs it in another process: the sshd half covers it")
    host = target.host()
    assert (await host.run(["true"], timeout=5)).ok
    frozen = _descendants(target.server.pid)
    assert frozen
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(HostTimeout):
            await host.run(["echo", "never answered"], timeout=1.0)
        assert time.monotonic() - started < 2.5
    finally:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    assert (await host.run(["echo", "thawed"], timeout=5)).stdout == "thawed\n"


async def test_a_host_that_never_speaks_ssh_is_unreachable_within_the_connect_timeout(sim_target):
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        host = sim_target.host(sim_target.spec(port=port), connect_timeout=0.5)
        started = time.monotonic()
        with pytest.raises(HostUnreachable) as unreachable:
            await host.run(["true"], timeout=5)
        assert time.monotonic() - started < 2
        assert "did not answer" in str(unreachable.value)
        assert sim_target.commands == []
    finally:
        for writer in accepted:
            writer.close()
        server.close()
        await server.wait_closed()
