"""The Slack Web API client pitcrew builds itself (never Bolt's default, never OAuth).

`build_web_client()` returns an `AsyncWebClient` with a base URL (a fake Slack in tests), a
timeout, and two retry handlers: rate limits (HTTP 429) wait Slack's ``Retry-After`` (capped) and
retry; connection errors retry — but a request that may already have reached Slack (a timeout
or a dropped connection mid-answer) is not blindly retried for methods that post something, since
that could post twice: those failures go back to the outbox, which checks before re-posting.
"""

from __future__ import annotations

import asyncio
import random

from aiohttp import ClientConnectorError, ClientOSError, ServerConnectionError, ServerDisconnectedError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

# Methods that create something: retrying them after an ambiguous failure may duplicate it.
NON_IDEMPOTENT = ("chat.postMessage", "chat.postEphemeral", "files.completeUploadExternal",
                  "chat.scheduleMessage")


class RetryAfterHandler(AsyncRetryHandler):
    """Retry HTTP 429 after the ``Retry-After`` Slack sent (plus a little jitter, capped)."""

    def __init__(self, max_retry_count: int = 1, *, max_wait_s: float = 30.0) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.max_wait_s = max_wait_s

    async def _can_retry_async(self, *, state: RetryState, request: HttpRequest,
                               response: HttpResponse | None = None,
                               error: Exception | None = None) -> bool:
        return response is not None and response.status_code == 429

    async def prepare_for_next_attempt_async(self, *, state: RetryState, request: HttpRequest,
                                             response: HttpResponse | None = None,
                                             error: Exception | None = None) -> None:
        wait = 1.0
        if response is not None:
            for k, v in response.headers.items():
                if k.lower() == "retry-after":
                    try:
                        wait = float(v[0] if isinstance(v, list) else v)
                    except (TypeError, ValueError):
                        wait = 1.0
        wait = min(self.max_wait_s, max(0.0, wait)) * (1 + 0.1 * random.random())
        state.next_attempt_requested = True
        await asyncio.sleep(wait)
        state.increment_current_attempt()


class SafeConnectionErrorHandler(AsyncRetryHandler):
    """Retry connection errors; for posting methods only when the request never left."""

    def __init__(self, max_retry_count: int = 1) -> None:
        super().__init__(max_retry_count=max_retry_count)

    async def _can_retry_async(self, *, state: RetryState, request: HttpRequest,
                               response: HttpResponse | None = None,
                               error: Exception | None = None) -> bool:
        if error is None or isinstance(error, asyncio.TimeoutError):
            return False
        if isinstance(error, ClientConnectorError):
            return True  # could not connect: nothing was sent
        if not isinstance(error, ServerConnectionError | ServerDisconnectedError | ClientOSError):
            return False
        return not any(request.url.endswith("/" + m) for m in NON_IDEMPOTENT)


def build_web_client(token: str, *, base_url: str | None = None, timeout_s: float = 10.0,
                     rate_limit_retries: int = 1, max_retry_after_s: float = 30.0) -> AsyncWebClient:
    """The Web API client for Slack (or a fake at ``base_url``)."""
    url = base_url or AsyncWebClient.BASE_URL
    if not url.endswith("/"):
        url += "/"
    return AsyncWebClient(
        token=token, base_url=url, timeout=int(max(1, timeout_s)),
        retry_handlers=[SafeConnectionErrorHandler(),
                        RetryAfterHandler(rate_limit_retries, max_wait_s=max_retry_after_s)])
