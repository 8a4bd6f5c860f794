"""The sim's `systemctl` and `nvidia-smi` as bash clients of the host's tool server: the same output, status and
stderr as the Python tool run as a command, arguments passed byte for byte, the Python tool when the server is gone,
and nothing for a client without the token."""

from __future__ import annotations

import asyncio

from simhost_kit import sh

from simhost.host import SimHost

CALLS = [
    "systemctl show sglang.service -p ActiveState,SubState,MainPID",
    "systemctl show sglang -p MainPID --value",
    "systemctl is-active sglang.service",
    "systemctl is-active nothing.service",
    "systemctl cat sglang.service",
    "systemctl frobnicate sglang.service",
    "systemctl start no-such.service",
    "systemctl",
    "nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader,nounits",
    "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
    "nvidia-smi --query-gpu=index,bogus --format=csv",
    "nvidia-smi -L",
]


def _python_tool(cmd: str) -> str:
    name, _, rest = cmd.partition(" ")
    return f"./bin/.{name}-py {rest}"


async def test_the_served_tools_answer_as_the_python_tools_do(healthy_host: SimHost) -> None:
    host = healthy_host
    assert host._tools is not None
    for cmd in CALLS:
        before = host._tools.calls
        served = await sh(host, cmd)
        assert host._tools.calls == before + 1, cmd  # answered by the server, no Python started
        assert served == await sh(host, _python_tool(cmd)), cmd
    # the plain nvidia-smi table carries the time of day: its shape, not its text
    rc, table, _ = await sh(host, "nvidia-smi")
    assert rc == 0 and "| NVIDIA-SMI 580.95.05" in table and "sglang::scheduler_TP" in table


async def test_arguments_reach_the_tool_byte_for_byte(healthy_host: SimHost) -> None:
    rc, out, err = await sh(healthy_host, "systemctl show $'two words\\nand a line' -p Id")
    assert (rc, out, err) == (0, "Id=two words\nand a line.service\n", "")
    rc, out, _ = await sh(healthy_host, "systemctl show 'ünï cødé' '' -p Id --value")
    assert rc == 0 and out.splitlines() == ["ünï cødé.service", "", ".service"]


async def test_without_its_server_a_tool_runs_the_python_tool(healthy_host: SimHost) -> None:
    host = healthy_host
    assert host._tools is not None
    expected = await sh(host, "systemctl show sglang.service -p ActiveState")
    await host._tools.close()
    calls = host._tools.calls
    assert await sh(host, "systemctl show sglang.service -p ActiveState") == expected == (
        0, "ActiveState=active\n", "")
    assert host._tools.calls == calls


async def test_a_client_without_the_token_gets_nothing(healthy_host: SimHost) -> None:
    host = healthy_host
    assert host._tools is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", host._tools.port)
    writer.write(b"not-the-token\nsystemctl\n1\nstop\0")
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()
    rc, out, _ = await sh(host, "systemctl is-active sglang.service")
    assert (rc, out) == (0, "active\n")  # the unit was not stopped
