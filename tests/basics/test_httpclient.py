"""`services.httpclient`: one TLS context per process for https servers (certificates verified), none for plain http
(real servers on loopback)."""

from __future__ import annotations

import asyncio
import datetime
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from services import httpclient
from services.httpclient import http_client


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()


@asynccontextmanager
async def _server(tls: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    server = await asyncio.start_server(_answer, "127.0.0.1", 0, ssl=tls)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def _self_signed(tmp_path: Path) -> ssl.SSLContext:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                         serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    return ctx


async def test_https_clients_share_one_tls_context_and_plain_http_builds_none(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    built: list[ssl.SSLContext] = []
    real = httpx.create_ssl_context

    def counting(*args: object, **kwargs: object) -> ssl.SSLContext:
        built.append(real())
        return built[-1]

    monkeypatch.setattr(httpx, "create_ssl_context", counting)
    httpclient._tls.cache_clear()
    try:
        async with _server() as port:
            for _ in range(5):
                url = f"http://127.0.0.1:{port}"
                async with http_client(url, timeout=5) as client:
                    assert (await client.get(f"{url}/health")).text == "ok"
        assert built == [], "a plain-http client parsed the CA bundle"
        async with _server(_self_signed(tmp_path)) as port:
            for _ in range(3):
                url = f"https://127.0.0.1:{port}"
                async with http_client(url, timeout=5) as client:
                    with pytest.raises(httpx.ConnectError):
                        await client.get(f"{url}/health")
        assert len(built) == 1
    finally:
        httpclient._tls.cache_clear()


async def test_an_https_server_whose_certificate_nobody_signed_is_refused(tmp_path: Path) -> None:
    async with _server(_self_signed(tmp_path)) as port:
        url = f"https://127.0.0.1:{port}"
        async with http_client(url, timeout=5) as client:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get(f"{url}/health")


def test_the_benchmark_child_imports_httpx_without_its_command_line() -> None:
    """The benchmark child starts for every benchmark: httpx's CLI (click, rich, pygments) is not loaded with it."""
    import subprocess
    import sys

    code = ("import sys, services.bench.process, httpx; "
            "print(sorted(m for m in ('click', 'rich', 'pygments') if m in sys.modules)); "
            "print(httpx.main.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout.split("\n")
    assert out[:2] == ["[]", "httpx"], out  # httpx's own stub `main`, not `httpx._main.main`
