"""The Slack side of outbox delivery: `SlackDeliverer` posts, edits and threads outbox items.

An item whose key already has a message is an edit (``chat.update``, progress in place); an item
with a parent goes in the parent's thread; attachments follow with ``files_upload_v2`` in the
thread. Every posted message carries its idempotency key in Slack message metadata, and a retry
after an ambiguous failure (timeout, dropped connection) first looks for a message with that key
in the channel or thread, so an item is never shown twice. Every call goes through the client's
`bot.slack_pacer.SlackPacer`: before an item's first call the deliverer asks it whether that method
may go now, and if not (a ``Retry-After`` hold, an empty budget) puts the item back for exactly that
long without calling Slack — so an edit that superseded one held back by a 429 keeps the hold.
Rate limits Slack does send become `RetryLater` with its ``Retry-After``.

Slack-specific hints ride in the payload under ``"slack"``: ``thread_ts`` (reply under a message
that is not ours, e.g. a mention), ``user`` (target of an ephemeral reply), ``blocks``/``text``
(pre-rendered blocks, e.g. a clicked message's receipt).
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery import RetryLater
from bot.render import SlackMessage, render_plain_fallback, render_reply
from bot.slack_pacer import SlackHeld, SlackPacer, retry_after_of
from handlers.contract import Attachment, Reply
from services.store import SYSTEM, AuditLog, MessageRef

if TYPE_CHECKING:
    from services.store import OutboxItem

log = logging.getLogger(__name__)

IDEMPOTENCY_EVENT = "pitcrew_message"
_RECORDED_KEY = re.compile(r"^(job|incident):(\d+)$")
TRANSPORT = "slack"
# Errors that will not fix themselves quickly; retried with a long delay so an operator can act.
_SLOW_ERRORS = {"channel_not_found", "not_in_channel", "is_archived", "restricted_action",
                "missing_scope", "invalid_auth", "account_inactive", "token_revoked", "not_authed"}
_NO_HISTORY = {"missing_scope", "not_in_channel", "channel_not_found", "not_allowed_token_type",
               "thread_not_found", "method_not_supported_for_channel_type"}
_BAD_BLOCKS = {"invalid_blocks", "invalid_blocks_format", "msg_too_long", "too_many_blocks",
               "invalid_attachments"}


class SlackDeliveryError(Exception):
    """Slack refused the item with an error that does not say "wait" (retried by the loop)."""


class SlackDeliverer:
    """`bot.delivery.Deliverer` for Slack."""

    transport = TRANSPORT

    def __init__(self, client: AsyncWebClient, *, lookback_s: float = 6 * 3600.0,
                 slow_error_retry_s: float = 60.0, audit: AuditLog | None = None) -> None:
        self.client = client
        self.lookback_s = lookback_s
        self.slow_error_retry_s = slow_error_retry_s
        self.audit = audit
        self.team_url: str | None = None  # from auth.test, e.g. https://acme.slack.com/

    def permalink(self, ref: MessageRef) -> str | None:
        """The message's permalink, built the way Slack writes them
        (``https://<team>.slack.com/archives/<channel>/p<ts without the dot>``, the form
        ``chat.getPermalink`` returns: https://docs.slack.dev/reference/methods/chat.getPermalink),
        so recording it costs no API call."""
        if not self.team_url or ref.ts.startswith(("response_url:", "ephemeral")):
            return None
        link = f"{self.team_url.rstrip('/')}/archives/{ref.channel}/p{ref.ts.replace('.', '')}"
        if ref.thread_ts:
            link += f"?thread_ts={ref.thread_ts}&cid={ref.channel}"
        return link

    async def _link_in_audit(self, item: OutboxItem, ref: MessageRef) -> None:
        """A job's or incident's message, once posted, is linked from the audit log."""
        m = _RECORDED_KEY.match(item.key)
        link = self.permalink(ref)
        if self.audit is None or m is None or link is None:
            return
        try:
            await self.audit.record(None, actor=SYSTEM, action="chat_message",
                                    detail={m.group(1): int(m.group(2)), "key": item.key, "permalink": link})
        except Exception as exc:  # the message is out; the link is a convenience
            log.warning("could not record the permalink of %s (%s)", item.key, type(exc).__name__)

    async def deliver(self, item: OutboxItem, *, existing: MessageRef | None,
                      parent: MessageRef | None) -> MessageRef:
        pacer: SlackPacer | None = getattr(self.client, "pacer", None)
        if pacer is not None:
            method, channel = self._first_call(item, existing=existing, parent=parent)
            wait = pacer.ready_in(method, channel)
            if wait > 0.0:
                raise RetryLater(f"slack pacing: {method} may go in {wait:.1f}s", retry_after=wait, exact=True)
        try:
            return await self._deliver(item, existing=existing, parent=parent)
        except SlackApiError as exc:
            raise self._classify(exc) from exc
        except SlackHeld as exc:
            raise RetryLater(str(exc), retry_after=exc.retry_after, exact=True) from exc

    @staticmethod
    def _first_call(item: OutboxItem, *, existing: MessageRef | None,
                    parent: MessageRef | None) -> tuple[str, str]:
        """The method and channel an item's delivery starts with."""
        hints: dict[str, Any] = item.payload.get("slack") or {}
        channel = parent.channel if parent is not None else item.channel
        if item.payload.get("ephemeral") and hints.get("user"):
            return "chat.postEphemeral", channel
        if existing is not None:
            return "chat.update", existing.channel
        if item.attempts > 0:  # a retry first looks for an earlier post of it
            threaded = parent is not None or bool(hints.get("thread_ts"))
            return ("conversations.replies" if threaded else "conversations.history"), channel
        return "chat.postMessage", channel

    def _classify(self, exc: SlackApiError) -> Exception:
        resp = exc.response
        status = getattr(resp, "status_code", 200)
        error = str(resp.get("error", "")) if resp is not None else ""
        retry_after = retry_after_of(exc)
        if retry_after is not None:
            # The pacer now holds the method; other methods and channels go on.
            return RetryLater(f"slack rate limited (Retry-After {retry_after:g}s)",
                              retry_after=retry_after, exact=True)
        if status >= 500:
            return RetryLater(f"slack HTTP {status}", retry_after=None)
        if error in _SLOW_ERRORS:
            return RetryLater(f"slack: {error}", retry_after=self.slow_error_retry_s)
        return SlackDeliveryError(f"slack: {error or status}")

    async def _deliver(self, item: OutboxItem, *, existing: MessageRef | None,
                       parent: MessageRef | None) -> MessageRef:
        payload = item.payload
        hints: dict[str, Any] = payload.get("slack") or {}
        reply = Reply.from_json(payload)
        messages = self._messages(reply, hints)
        try:
            return await self._deliver_rendered(item, reply, hints, messages, existing=existing, parent=parent)
        except SlackApiError as exc:
            # A slash command in a channel the bot is not in (a DM, a private channel): answer
            # through the command's response_url (valid 30 minutes), and say how to get threads.
            error = exc.response.get("error") if exc.response is not None else None
            url = hints.get("response_url")
            if error not in ("not_in_channel", "channel_not_found") or not url or existing or parent:
                raise
            await self._respond(str(url), messages[0], ephemeral=reply.ephemeral)
            return MessageRef(transport=TRANSPORT, channel=item.channel,
                              ts=f"response_url:{item.idempotency_key}", thread_ts=None)

    async def _deliver_rendered(self, item: OutboxItem, reply: Reply, hints: dict[str, Any],
                                messages: list[SlackMessage], *, existing: MessageRef | None,
                                parent: MessageRef | None) -> MessageRef:
        if reply.ephemeral and hints.get("user"):
            return await self._ephemeral(item, messages, user=str(hints["user"]), parent=parent,
                                         thread_ts=hints.get("thread_ts"))
        if existing is not None:
            ref = await self._update(item, existing, messages[0], reply)
            if ref is not None:
                await self._followups(item, ref, messages[1:])
                return ref
            # the message was deleted: post it again as a new one
        thread_ts = parent.ts if parent is not None else hints.get("thread_ts")
        channel = parent.channel if parent is not None else item.channel
        ref = await self._post_once(item, channel, messages[0], reply, thread_ts=thread_ts, part=0)
        await self._followups(item, ref, messages[1:])
        if existing is None:
            await self._link_in_audit(item, ref)
        return ref

    def _messages(self, reply: Reply, hints: dict[str, Any]) -> list[SlackMessage]:
        if isinstance(hints.get("blocks"), list):
            return [SlackMessage(text=str(hints.get("text") or reply.text or "pitcrew")[:3000],
                                 blocks=tuple(hints["blocks"]))]
        return render_reply(reply, lead=hints.get("asked"))

    async def _ephemeral(self, item: OutboxItem, messages: list[SlackMessage], *, user: str,
                         parent: MessageRef | None, thread_ts: str | None) -> MessageRef:
        channel = parent.channel if parent is not None else item.channel
        ts_thread = parent.ts if parent is not None else thread_ts
        first_ts = ""
        for msg in messages:
            kwargs: dict[str, Any] = {"channel": channel, "user": user, "text": msg.text,
                                      "blocks": list(msg.blocks)}
            if ts_thread:
                kwargs["thread_ts"] = ts_thread
            resp = await self.client.chat_postEphemeral(**kwargs)
            first_ts = first_ts or str(resp.get("message_ts", ""))
        return MessageRef(transport=TRANSPORT, channel=channel, ts=first_ts or "ephemeral",
                          thread_ts=ts_thread)

    async def _update(self, item: OutboxItem, existing: MessageRef, msg: SlackMessage,
                      reply: Reply) -> MessageRef | None:
        try:
            await self.client.chat_update(channel=existing.channel, ts=existing.ts, text=msg.text,
                                          blocks=list(msg.blocks))
        except SlackApiError as exc:
            error = exc.response.get("error") if exc.response is not None else None
            if error == "message_not_found":
                log.info("message for %s is gone; posting it again", item.key)
                return None
            if error in _BAD_BLOCKS:
                plain = render_plain_fallback(reply)
                await self.client.chat_update(channel=existing.channel, ts=existing.ts,
                                              text=plain.text, blocks=[])
            else:
                raise
        await self._upload(item, existing.channel, existing.thread_ts or existing.ts, msg.files)
        return existing

    async def _post_once(self, item: OutboxItem, channel: str, msg: SlackMessage, reply: Reply | None,
                         *, thread_ts: str | None, part: int) -> MessageRef:
        """Post unless a previous attempt already did (found by the idempotency key)."""
        key = item.idempotency_key if part == 0 else f"{item.idempotency_key}/{part}"
        if item.attempts > 0:
            found = await self._find_posted(channel, key, thread_ts=thread_ts)
            if found is not None:
                log.info("%s was already posted (ts %s); not posting again", key, found)
                return MessageRef(transport=TRANSPORT, channel=channel, ts=found, thread_ts=thread_ts)
        kwargs: dict[str, Any] = {
            "channel": channel, "text": msg.text, "blocks": list(msg.blocks),
            "metadata": {"event_type": IDEMPOTENCY_EVENT,
                         "event_payload": {"idempotency_key": key, "key": item.key}},
            "unfurl_links": False, "unfurl_media": False,
        }
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        try:
            resp = await self.client.chat_postMessage(**kwargs)
        except SlackApiError as exc:
            error = exc.response.get("error") if exc.response is not None else None
            if error not in _BAD_BLOCKS or reply is None:
                raise
            plain = render_plain_fallback(reply)
            kwargs.update(text=plain.text, blocks=[])
            resp = await self.client.chat_postMessage(**kwargs)
        ts = str(resp["ts"])
        channel = str(resp.get("channel") or channel)
        await self._upload(item, channel, thread_ts or ts, msg.files)
        return MessageRef(transport=TRANSPORT, channel=channel, ts=ts, thread_ts=thread_ts)

    async def _followups(self, item: OutboxItem, ref: MessageRef, rest: list[SlackMessage]) -> None:
        thread = ref.thread_ts or ref.ts
        for i, msg in enumerate(rest, start=1):
            await self._post_once(item, ref.channel, msg, None, thread_ts=thread, part=i)

    async def _upload(self, item: OutboxItem, channel: str, thread_ts: str,
                      files: tuple[Attachment, ...]) -> None:
        if not files:
            return
        uploads = [{"content": f.content, "filename": f.filename, "title": f.title or f.filename}
                   for f in files]
        await self.client.files_upload_v2(channel=channel, thread_ts=thread_ts, file_uploads=uploads)

    async def _respond(self, url: str, msg: SlackMessage, *, ephemeral: bool) -> None:
        note = {"type": "context", "elements": [{"type": "mrkdwn", "text":
                "Invite pitcrew to this channel (`/invite @pitcrew`) to get job threads here."}]}
        blocks = [*list(msg.blocks)[:49], note]
        body = {"response_type": "ephemeral" if ephemeral else "in_channel", "text": msg.text,
                "blocks": blocks, "replace_original": False}
        timeout = aiohttp.ClientTimeout(total=10)
        async with aiohttp.ClientSession(timeout=timeout) as session, session.post(url, json=body) as resp:
            if resp.status >= 300:
                raise RetryLater(f"response_url answered HTTP {resp.status}", retry_after=5.0)

    async def _find_posted(self, channel: str, key: str, *, thread_ts: str | None) -> str | None:
        """The ts of a message we already posted with this idempotency key, if any."""
        try:
            if thread_ts:
                resp = await self.client.conversations_replies(channel=channel, ts=thread_ts, limit=200,
                                                               include_all_metadata=True)
            else:
                oldest = f"{time.time() - self.lookback_s:.6f}"
                resp = await self.client.conversations_history(channel=channel, oldest=oldest, limit=200,
                                                               include_all_metadata=True)
        except SlackApiError as exc:
            if retry_after_of(exc) is not None:
                raise  # a rate limit: `deliver` puts the item back for exactly its Retry-After
            error = exc.response.get("error") if exc.response is not None else None
            if error in _NO_HISTORY:
                # We may not read this conversation (scope, membership): the post itself will tell.
                log.info("cannot read %s history (%s); posting %s without the check", channel, error, key)
                return None
            raise RetryLater(f"cannot check for an earlier post (slack: {error})", retry_after=2.0) from exc
        except (TimeoutError, SlackClientError, OSError) as exc:
            # Without the history we cannot prove it was not posted: wait rather than risk a double.
            raise RetryLater(f"cannot check for an earlier post ({type(exc).__name__})",
                             retry_after=2.0) from exc
        for m in resp.get("messages") or []:
            meta = m.get("metadata") or {}
            if (meta.get("event_payload") or {}).get("idempotency_key") == key:
                return str(m["ts"])
        return None
