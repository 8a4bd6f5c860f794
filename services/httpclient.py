"""The one way pitcrew opens an HTTP client (httpx) to a server it deploys, probes or benchmarks.

A client names the server it talks to. An https server's clients share the process's one TLS context: httpx's own
default (certifi's CA bundle; ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` honoured, certificates verified), built on first
use; a plain-http server's get none (there is nothing to verify, and a short-lived process such as the benchmark
child need not parse the CA bundle at all). Left to itself httpx builds that context anew for every client, plain-http
ones included: ~20 ms of CPU each (the CA bundle parsed), on the event loop, for every health poll, test generation,
ramp, metrics read and version probe (session 9: 7.5 % of a scenario test process's samples). The benchmark's own
requests are not made here: its streams and its plain reads (`/metrics`, `/v1/models`) go through its connections
(`services.bench.conn`), so the benchmark child imports no client library.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx

__all__ = ["http_client"]


@functools.cache
def _tls() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def http_client(server: str, **kwargs: Any) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` for requests to the server at URL `server` (`kwargs` as httpx's, except ``verify``)."""
    return httpx.AsyncClient(verify=_tls() if server.lower().startswith("https:") else False, **kwargs)
