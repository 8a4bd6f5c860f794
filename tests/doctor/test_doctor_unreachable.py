"""A host that does not answer SSH is ✗ within the check's deadline, and nothing else on SSH is tried."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import asyncssh

from services.doctor import Doctor
from services.hosts import HostPool, HostSpec


def _spec(tmp_path: Path, name: str, port: int) -> HostSpec:
    key = asyncssh.generate_private_key("ssh-ed25519")
    (tmp_path / f"{name}_key").write_bytes(key.export_private_key())
    (tmp_path / f"{name}_known").write_text(f"[127.0.0.1]:{port} {key.export_public_key().decode().strip()}\n")
    return HostSpec(name=name, address="127.0.0.1", port=port, user="pitcrew", client_key=tmp_path / f"{name}_key",
                    known_hosts=tmp_path / f"{name}_known", unit="sglang.service", unit_dir="/etc/systemd/system",
                    server_url=f"http://127.0.0.1:{port}", sudo=True)


async def test_a_refused_and_a_silent_host_are_crosses_within_the_deadline(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        refused_port = closed.getsockname()[1]  # nothing listens once closed

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # accepts, never sends an SSH banner (nor an HTTP answer), until the client leaves

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    silent_port = server.sockets[0].getsockname()[1]
    try:
        specs = [_spec(tmp_path, "refused", refused_port), _spec(tmp_path, "silent", silent_port)]
        async with HostPool.from_specs(specs) as pool:
            t0 = time.monotonic()
            report = await Doctor(pool, timeout_s=1.0).run()
            took = time.monotonic() - t0
    finally:
        server.close()
    assert report.exit_code == 1 and took < 5, (took, report.text())
    refused, quiet = report.hosts
    assert [(f.check, f.status) for f in refused.findings] == [("ssh", "fail"), ("health", "fail")], report.text()
    assert "Cannot reach host 'refused'" in refused.findings[0].text, report.text()
    # the silent port answers neither SSH nor HTTP: SSH is ✗, /health unknown (⚠), nothing else tried
    assert [(f.check, f.status) for f in quiet.findings] == [("ssh", "fail"), ("health", "warn")], report.text()
    assert quiet.findings[0].text == "no answer over SSH within 1 s"
    for host in report.hosts:
        assert "authorized_keys" in (host.findings[0].fix or "")
