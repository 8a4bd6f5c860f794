"""The Slack Web API client pitcrew builds itself (never Bolt's default, never OAuth).

`build_web_client()` returns a `bot.slack_pacer.PacedWebClient` with a base URL (a fake Slack in
tests) and a timeout. Rate limits are not retried here: every call takes its turn from the
workspace's `SlackPacer`, which holds a method for its ``Retry-After`` after a 429 (one path for
that, not a second one inside the SDK). Connection errors retry — but a request that may already
have reached Slack (a timeout or a dropped connection mid-answer) is not blindly retried for methods
that post something, since that could post twice: those failures go back to the outbox, which
checks before re-posting.
"""

from __future__ import annotations

import asyncio

from aiohttp import ClientConnectorError, ClientOSError, ServerConnectionError, ServerDisconnectedError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack_pacer import PacedWebClient, SlackPacer

# Methods that create something: retrying them after an ambiguous failure may duplicate it.
NON_IDEMPOTENT = ("chat.postMessage", "chat.postEphemeral", "files.completeUploadExternal",
                  "chat.scheduleMessage")


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
                     pacer: SlackPacer | None = None, max_wait_s: float = 30.0) -> PacedWebClient:
    """The Web API client for Slack (or a fake at ``base_url``), paced by ``pacer`` (one per workspace)."""
    url = base_url or AsyncWebClient.BASE_URL
    if not url.endswith("/"):
        url += "/"
    return PacedWebClient(token=token, base_url=url, timeout=int(max(1, timeout_s)),
                          retry_handlers=[SafeConnectionErrorHandler()], pacer=pacer or SlackPacer(),
                          max_wait_s=max_wait_s)
