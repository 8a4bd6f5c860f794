"""The one way pitcrew opens an HTTP client (httpx) to a server it deploys, probes or benchmarks.

Every client shares the process's one TLS context: httpx's own default (certifi's CA bundle; ``SSL_CERT_FILE`` and
``SSL_CERT_DIR`` honoured), built on first use. Left to itself httpx builds that context anew for every client,
plain-http ones included: ~20 ms of CPU each (the CA bundle parsed), on the event loop, for every health poll, test
generation, ramp, metrics read and version probe (session 9: 7.5 % of a scenario test process's samples).
Certificates are verified as before wherever the URL is https.
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


def http_client(**kwargs: Any) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` (`kwargs` as httpx's, except ``verify``) on the process's one TLS context."""
    return httpx.AsyncClient(verify=_tls(), **kwargs)
