"""HostPool, argument and path checks, and secret masking in host error messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.errors import CommandFailed, HostUnreachable, NotFound, UserInputError
from services.hosts.contract import HostSpec, check_argv, check_remote_path, quote_argv
from services.hosts.pool import HostPool
from services.hosts.ssh import SshHost
from services.redact import redact


def _spec(name: str, **overrides: object) -> HostSpec:
    values: dict[str, object] = {
        "name": name, "address": "127.0.0.1", "port": 1, "user": "u", "client_key": Path("/nonexistent/k"),
        "known_hosts": Path("/nonexistent/kh"), "unit": "sglang.service", "unit_dir": "/etc/systemd/system",
        "server_url": "http://127.0.0.1:30000",
    }
    values.update(overrides)
    return HostSpec(**values)  # type: ignore[arg-type]


async def test_pool_builds_lazy_ssh_hosts_and_closes_them():
    async with HostPool.from_specs([_spec("gpu-2"), _spec("gpu-1")]) as pool:
        assert pool.names() == ["gpu-1", "gpu-2"] and len(pool) == 2 and "gpu-1" in pool
        host = pool.get("gpu-1")
        assert isinstance(host, SshHost) and host.spec.name == "gpu-1"
        with pytest.raises(NotFound):
            pool.get("gpu-9")
        with pytest.raises(UserInputError):
            pool.add(SshHost(_spec("gpu-1")))
        await pool.remove("gpu-2")
        assert pool.names() == ["gpu-1"]
    assert len(pool) == 0
    with pytest.raises(HostUnreachable):
        await host.run(["true"], timeout=1)


async def test_pool_over_the_sim_uses_one_connection_per_host(sim_target):
    pool = HostPool.from_specs([sim_target.spec()], factory=lambda spec: sim_target.host(spec))
    host = pool.get(sim_target.spec().name)
    for _ in range(3):
        assert (await host.run(["true"], timeout=5)).ok
    assert len(sim_target.server._connections) == 1
    await pool.close()


def test_argv_checks():
    assert check_argv(["echo", "a b"]) == ("echo", "a b")
    for bad in ("echo hi", b"echo", [], ["echo", 3], ["echo", "a\nb"], ["a\x00"]):
        with pytest.raises(UserInputError):
            check_argv(bad)  # type: ignore[arg-type]
    assert quote_argv(["echo", "$(id)", "it's"]) == "echo '$(id)' 'it'\"'\"'s'"
    with pytest.raises(UserInputError) as refused:
        check_argv(["echo", "x\ny"])
    assert "newline" in str(refused.value) and "x\ny" not in str(refused.value)


def test_remote_path_checks():
    assert check_remote_path("/etc/systemd/system/sglang.service") == ("/etc/systemd/system", "sglang.service")
    assert check_remote_path("/f") == ("/", "f")
    for bad in ("", "rel/x", "/a/../b", "/a/./b", "/a/", "/a/b\n", "/a\x00b", "/a/..", "/.."):
        with pytest.raises(UserInputError):
            check_remote_path(bad)


def test_redact_masks_secrets():
    text = (
        "token xoxb-1234-5678-abcdef and xapp-1-A0123456789-99 Authorization: Bearer abc.def.ghi "
        "--api-key sk-0123456789abcdefghij api_key=hunter2\n"
        "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAB3Nza\n-----END OPENSSH PRIVATE KEY-----\nafter"
    )
    masked = redact(text)
    for secret in ("xoxb-1234", "xapp-1-A0123", "abc.def.ghi", "sk-0123", "hunter2", "AAAAB3Nza"):
        assert secret not in masked
    assert masked.endswith("after")


async def test_command_failed_message_masks_secrets(sim_target):
    host = sim_target.host()
    with pytest.raises(CommandFailed) as failed:
        await host.run(["bash", "-c", "echo 'auth failed for token=xoxb-999-secret' >&2; exit 2"],
                       timeout=5, check=True)
    assert "xoxb-999" not in str(failed.value) and "xoxb-999" not in repr(failed.value.fields)
    assert "auth failed" in str(failed.value)
