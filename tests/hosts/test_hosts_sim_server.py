"""The simulated host's own SSH server: keys, exec semantics, process ending, confined SFTP."""

from __future__ import annotations

import os

import asyncssh
import pytest
from hosts_kit import read, wait_dead

from services.errors import HostError, HostUnreachable
from simhost.ssh import rotate_host_key, start_ssh_server


def _connect(server, **kwargs):
    options = {"username": server.user, "client_keys": [str(server.client_key)],
               "known_hosts": str(server.known_hosts), "config": [], "agent_path": None, **kwargs}
    return asyncssh.connect(server.host, server.port, **options)


async def test_keys_are_generated_once_reused_and_rotated(tmp_path):
    first = await start_ssh_server(tmp_path, env={}, path_prefix=[])
    host_key, client_key = read(first.host_key), read(first.client_key)
    assert read(first.known_hosts).startswith(f"[127.0.0.1]:{first.port} ssh-ed25519 ")
    assert read(first.client_public_key).split()[1] in read(tmp_path / "ssh" / "authorized_keys")
    assert (first.client_key.stat().st_mode & 0o077) == 0
    await first.close()

    second = await start_ssh_server(tmp_path, env={}, path_prefix=[])
    try:
        assert (read(second.host_key), read(second.client_key)) == (host_key, client_key)
        assert read(second.known_hosts).startswith(f"[127.0.0.1]:{second.port} ")
    finally:
        await second.close()

    rotate_host_key(tmp_path)
    assert read(tmp_path / "ssh" / "host_key") != host_key
    assert read(tmp_path / "ssh" / "client_key") == client_key


async def test_exec_runs_bash_in_root_with_the_given_environment(tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    server = await start_ssh_server(tmp_path, env={"SIM_MARK": "x y"}, path_prefix=[tools])
    try:
        async with _connect(server) as conn:
            result = await conn.run('pwd; echo "$SIM_MARK"; echo "$PATH"; echo "$PYTHONUNBUFFERED"; '
                                    'echo "$BASH_VERSION" | cut -c1')
            cwd, mark, path, unbuffered, bash = result.stdout.splitlines()
            assert cwd == str(tmp_path.resolve()) and mark == "x y" and unbuffered == "1"
            assert path.startswith(f"{tools}:") and bash.isdigit()
            shell = await conn.run()  # a shell request (no command) is refused
            assert shell.exit_status == 1 and "not supported" in shell.stderr
    finally:
        await server.close()


async def test_wrong_user_or_key_is_refused(tmp_path):
    server = await start_ssh_server(tmp_path, env={}, path_prefix=[])
    try:
        with pytest.raises(asyncssh.PermissionDenied):
            await _connect(server, username="root")
        other = asyncssh.generate_private_key("ssh-ed25519")
        with pytest.raises(asyncssh.PermissionDenied):
            await asyncssh.connect(server.host, server.port, username=server.user, client_keys=[other],
                                   known_hosts=str(server.known_hosts), config=[], agent_path=None)
    finally:
        await server.close()


@pytest.mark.parametrize("how", ["channel-close", "disconnect", "signal"])
async def test_the_whole_process_group_ends(tmp_path, how):
    server = await start_ssh_server(tmp_path, env={}, path_prefix=[])
    try:
        conn = await _connect(server)
        proc = await conn.create_process("sleep 30 & echo $!; echo $$; wait")
        child = int(await proc.stdout.readline())
        shell = int(await proc.stdout.readline())
        if how == "channel-close":
            proc.close()
        elif how == "disconnect":
            conn.abort()
        else:
            proc.send_signal("TERM")
        assert await wait_dead(child) and await wait_dead(shell)
        if how == "signal":
            await proc.wait_closed()
            assert proc.exit_status != 0
        conn.close()
    finally:
        await server.close()


async def test_server_close_ends_running_commands(tmp_path):
    server = await start_ssh_server(tmp_path, env={}, path_prefix=[])
    conn = await _connect(server)
    proc = await conn.create_process("echo $$; exec sleep 30")
    pid = int(await proc.stdout.readline())
    await server.close()
    assert await wait_dead(pid)
    conn.close()


async def test_sftp_is_confined_to_root(sim_target, tmp_path):
    server = sim_target.server
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    os.symlink(outside, sim_target.root / "escape")
    async with _connect(server) as conn, conn.start_sftp_client() as sftp:
        for path in ("/etc/hostname", f"{sim_target.root}/../{outside.name}/x",
                     f"{sim_target.root}/escape/x", "../x"):
            with pytest.raises(asyncssh.SFTPPermissionDenied):
                async with sftp.open(path, "wb") as handle:
                    await handle.write(b"x")
        with pytest.raises(asyncssh.SFTPError):
            await sftp.symlink("/etc/passwd", f"{sim_target.root}/link")
        assert await sftp.realpath(".") == str(sim_target.root.resolve())
        async with sftp.open("relative.txt", "wb") as handle:
            await handle.write(b"in root")
        await sftp.posix_rename("relative.txt", "moved.txt")
    assert read(sim_target.root / "moved.txt") == "in root"
    assert list(outside.iterdir()) == []

    host = sim_target.host()
    with pytest.raises(HostError) as refused:
        await host.upload(f"{outside}/unit.service", b"x", timeout=5)
    assert "Permission denied" in str(refused.value)
    assert list(outside.iterdir()) == []


async def test_sim_host_after_server_close_is_unreachable(sim_target):
    host = sim_target.host()
    assert (await host.run(["true"], timeout=5)).ok
    await sim_target.server.close()
    with pytest.raises(HostUnreachable):
        await host.run(["true"], timeout=5)
    sim_target.server = None


def test_known_hosts_line_for_port_22():
    from simhost.ssh import known_hosts_line

    key = asyncssh.generate_private_key("ssh-ed25519")
    assert known_hosts_line("10.0.0.5", 22, key).startswith("10.0.0.5 ssh-ed25519 ")
    assert known_hosts_line("10.0.0.5", 2222, key).startswith("[10.0.0.5]:2222 ssh-ed25519 ")
