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


async def test_a_channel_that_cannot_open_in_time_does_not_cut_the_commands_running_beside_it(target):
    """Found by the twenty-concurrent-tries test on real systemd: one command whose channel did not open before its
    deadline aborted the shared connection, and a `systemctl` running beside it was reported lost. A stalled open
    now ends only its own command while other channels use the connection."""
    host = target.host()
    assert (await host.run(["true"], timeout=5)).ok
    beside = asyncio.create_task(host.run(["sh", "-c", "sleep 1; echo done"], timeout=10))
    await asyncio.sleep(0.3)  # the long command holds its channel

    async def never_opens(conn):
        await asyncio.sleep(30)

    link = host._link
    started = time.monotonic()
    async with link.slot(["stalled"], time.monotonic() + 0.5):
        with pytest.raises(HostTimeout):
            await link.open(never_opens, time.monotonic() + 0.5, "the stalled command")
    assert time.monotonic() - started < 2
    assert (await beside).stdout == "done\n"  # not "lost while sh ran"
    assert (await host.run(["echo", "after"], timeout=5)).stdout == "after\n"
