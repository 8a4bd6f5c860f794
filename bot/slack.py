"""The Slack transport: Bolt listeners, the HTTP-mode server and the Socket Mode runner.

Listeners only translate. Each acknowledges at once (nothing slow before the ack), then — in a
task this module tracks and drains on shutdown — builds a `ChatMessage`, calls the injected
``dispatch`` (the router: authorization, audit, the one place errors become text), and puts the
`Reply` in the outbox, from which `bot.slack_delivery.SlackDeliverer` posts it. Entry points:
the slash command (answer posted as a parent message), ``@pitcrew`` mentions, replies in the
threads of our messages (the thread's logical key, e.g. ``job:42``, is looked up from the stored
message refs), direct messages, and buttons (the button's value is the command text; the clicked
message is updated to show who chose what).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from contextlib import contextmanager
from typing import Any

from aiohttp import ClientSession, ClientTimeout, TCPConnector, web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery import DeliveryStats, StoreOutbox, run_delivery
from bot.render import ACTION_PREFIX, escape_mrkdwn, render_click_receipt
from bot.slack_client import build_web_client
from bot.slack_delivery import TRANSPORT, SlackDeliverer
from handlers.contract import Actor, ChatMessage, Reply
from services.errors import PitcrewError
from services.redact import redact
from services.retry import Backoff, retry_async
from services.store import AuditLog, OutboxStore, SeenKeys

log = logging.getLogger(__name__)

__all__ = ["Dispatch", "SlackBot", "build_web_client", "missing_settings_message"]

Dispatch = Callable[[ChatMessage], Awaitable[Reply]]
_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
_JOB_MESSAGE = re.compile(r"^job:\d+$")


class _DropTokenSkipped(logging.Filter):
    """Bolt warns that the client's token is 'ignored' when `authorize` is given; it is not."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "will be ignored" not in record.getMessage()


@contextmanager
def _no_oauth_env() -> Any:
    """Bolt turns OAuth on by itself when SLACK_CLIENT_ID/SECRET are set: hide them meanwhile."""
    saved = {k: os.environ.pop(k) for k in ("SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET") if k in os.environ}
    bolt_log = logging.getLogger("slack_bolt.AsyncApp")
    quiet = _DropTokenSkipped()
    bolt_log.addFilter(quiet)
    try:
        yield
    finally:
        bolt_log.removeFilter(quiet)
        os.environ.update(saved)


class SlackBot:
    """The Bolt app plus pitcrew's listeners, outbox and delivery loop for one workspace."""

    def __init__(self, *, client: AsyncWebClient, dispatch: Dispatch, store: OutboxStore,
                 signing_secret: str | None = None, command: str = "/pitcrew",
                 wake: asyncio.Event | None = None, holder: str | None = None,
                 audit: AuditLog | None = None) -> None:
        self.client = client
        self.dispatch = dispatch
        self.store = store
        self.command = command
        self.wake = wake or asyncio.Event()
        self.holder = holder or f"slack-{secrets.token_hex(4)}"
        self.outbox = StoreOutbox(store, transport=TRANSPORT, wake=self.wake)
        self.deliverer = SlackDeliverer(client, audit=audit)
        self.stats = DeliveryStats()
        self.bot_user_id: str | None = None
        self._auth: AuthorizeResult | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._seen: collections.OrderedDict[str, None] = collections.OrderedDict()
        self.seen = SeenKeys(store.db, holder=self.holder)  # event/interaction ids across replicas
        self._names: dict[str, tuple[float, str]] = {}
        self._groups: tuple[float, dict[str, tuple[str, ...]]] | None = None
        self._stop = asyncio.Event()
        self._delivery: asyncio.Task[None] | None = None
        self._runner: web.AppRunner | None = None
        self._socket: Any = None
        self.http_port: int | None = None
        self.ack_seconds: collections.deque[float] = collections.deque(maxlen=10_000)  # HTTP mode
        self._session: ClientSession | None = None

        async def _authorize(enterprise_id: str | None = None, team_id: str | None = None) -> AuthorizeResult:
            return self._auth or await self._auth_test()

        with _no_oauth_env():
            self.app = AsyncApp(client=client, signing_secret=signing_secret,
                                request_verification_enabled=signing_secret is not None,
                                authorize=_authorize, process_before_response=False)
        # Bolt injects listener arguments by parameter name: plain functions, not bound methods.

        async def on_command(ack: Any, command: dict[str, Any]) -> None:
            await self._on_command(ack, command)

        async def on_mention(event: dict[str, Any], body: dict[str, Any]) -> None:
            await self._on_mention(event, body)

        async def on_message(event: dict[str, Any], body: dict[str, Any]) -> None:
            await self._on_message(event, body)

        async def on_button(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
            await self._on_button(ack, body, action)

        self.app.command(command)(on_command)
        self.app.event("app_mention")(on_mention)
        self.app.event("message")(on_message)
        self.app.action(re.compile(f"^{ACTION_PREFIX}:"))(on_button)

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self, *, attempts: int = 5) -> None:
        """Learn who we are (``auth.test``) and start delivering the outbox."""
        if self.client.session is None or self.client.session.closed:
            # One pooled session (keep-alive) instead of a new connection per API call.
            self._session = ClientSession(timeout=ClientTimeout(total=self.client.timeout),
                                          connector=TCPConnector(limit=32))
            self.client.session = self._session
        await retry_async(self._auth_test, retry_on=(Exception,), attempts=attempts,
                          backoff=Backoff(initial_s=0.5, max_s=10.0, jitter=0.0), what="auth.test")
        if self._delivery is None:
            self._delivery = asyncio.create_task(run_delivery(
                self.store, self.deliverer, holder=self.holder, stop=self._stop, wake=self.wake,
                stats=self.stats), name="slack-delivery")

    async def serve_http(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Serve ``POST /slack/events`` and ``GET /healthz``; returns the bound port."""
        web_app = web.Application(client_max_size=2 * 1024 * 1024)
        web_app.router.add_post("/slack/events", self._http_events)
        web_app.router.add_get("/healthz", self._http_health)
        self._runner = web.AppRunner(web_app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        server = site._server
        self.http_port = int(server.sockets[0].getsockname()[1]) if server is not None else port  # type: ignore[attr-defined]
        return self.http_port

    async def start_socket_mode(self, app_token: str) -> None:
        """Connect to Slack over Socket Mode (events arrive on a websocket; no public URL)."""
        self._socket = AsyncSocketModeHandler(self.app, app_token, web_client=self.client)
        await self._socket.connect_async()

    async def aclose(self, *, drain_s: float = 10.0) -> None:
        """Stop taking requests, finish the commands in flight, then stop delivering."""
        if self._socket is not None:
            await self._socket.close_async()
            self._socket = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=drain_s)
        self._stop.set()
        if self._delivery is not None:
            try:
                await asyncio.wait_for(self._delivery, drain_s)
            except (TimeoutError, asyncio.CancelledError):
                self._delivery.cancel()
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- HTTP mode ----------------------------------------------------------------------------

    async def _http_events(self, request: web.Request) -> web.Response:
        t0 = time.perf_counter()
        bolt_req = await to_bolt_request(request)
        bolt_resp = await self.app.async_dispatch(bolt_req)
        self.ack_seconds.append(time.perf_counter() - t0)
        return await to_aiohttp_response(bolt_resp)

    async def _http_health(self, _request: web.Request) -> web.Response:
        try:
            depth = await asyncio.wait_for(self.store.depth(TRANSPORT), 2.0)
        except Exception as exc:
            return web.json_response({"ok": False, "error": type(exc).__name__}, status=503)
        return web.json_response({"ok": True, "outbox_depth": depth, "sent": self.stats.sent,
                                  "last_error": self.stats.last_error})

    # -- identity -----------------------------------------------------------------------------

    async def _auth_test(self) -> AuthorizeResult:
        resp = await self.client.auth_test()
        self.bot_user_id = resp.get("user_id")
        self.deliverer.team_url = resp.get("url") or self.deliverer.team_url
        self._auth = AuthorizeResult(enterprise_id=resp.get("enterprise_id"), team_id=resp.get("team_id"),
                                     bot_user_id=resp.get("user_id"), bot_id=resp.get("bot_id"),
                                     bot_token=self.client.token)
        return self._auth

    async def _actor(self, user_id: str, name_hint: str | None = None) -> Actor:
        return Actor(user_id=user_id, name=name_hint or await self._name(user_id), transport=TRANSPORT,
                     groups=await self._groups_of(user_id))

    async def _name(self, user_id: str) -> str:
        cached = self._names.get(user_id)
        if cached and time.monotonic() - cached[0] < 600:
            return cached[1]
        try:
            user = (await self.client.users_info(user=user_id)).get("user") or {}
            profile = user.get("profile") or {}
            name = profile.get("display_name") or user.get("real_name") or user.get("name") or user_id
        except Exception:
            return user_id  # not cached: ask again next time
        self._names[user_id] = (time.monotonic(), str(name))
        return str(name)

    async def _groups_of(self, user_id: str) -> tuple[str, ...]:
        """Handles of the Slack user groups the user is in (cached; empty without the scope)."""
        now = time.monotonic()
        if self._groups is None or now > self._groups[0]:
            members: dict[str, list[str]] = {}
            fresh_for = 300.0
            try:
                resp = await self.client.usergroups_list(include_users=True)
                for g in resp.get("usergroups") or []:
                    for u in g.get("users") or []:
                        members.setdefault(u, []).append(str(g.get("handle")))
            except Exception as exc:
                log.debug("usergroups.list unavailable (%s)", type(exc).__name__)
                fresh_for = 30.0  # no groups means fewer rights: try again soon
            self._groups = (now + fresh_for, {u: tuple(sorted(h)) for u, h in members.items()})
        return self._groups[1].get(user_id, ())

    # -- listeners (ack first, then hand off) -------------------------------------------------

    async def _on_command(self, ack: Any, command: dict[str, Any]) -> None:
        await ack()
        text = (command.get("text") or "").strip() or "help"
        channel = str(command.get("channel_id"))
        user = str(command.get("user_id"))
        source = str(command.get("trigger_id") or f"{channel}:{time.time_ns()}")
        asked = f"<@{user}>: `{self.command} {escape_mrkdwn(text)}`"
        self._spawn(self._handle(text, user=user, name=command.get("user_name"), channel=channel,
                                 thread_key=None, reply_key=f"cmd:{source}", thread_ts=None, asked=asked,
                                 response_url=command.get("response_url")))

    async def _on_mention(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        if not await self._first_time(body.get("event_id")) or not event.get("user"):
            return
        raw = event.get("text") or ""
        if self.bot_user_id:
            raw = re.sub(rf"<@{re.escape(self.bot_user_id)}(?:\|[^>]*)?>", "", raw)
        else:
            raw = _MENTION.sub("", raw, count=1)
        text = raw.strip() or "help"
        self._spawn(self._from_event(event, text))

    async def _on_message(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        if event.get("subtype") or event.get("bot_id") or not event.get("user"):
            return
        raw = event.get("text") or ""
        if self.bot_user_id and f"<@{self.bot_user_id}" in raw:
            return  # the app_mention listener answers this one
        in_thread = bool(event.get("thread_ts")) and event.get("thread_ts") != event.get("ts")
        if not in_thread and event.get("channel_type") != "im":
            return
        if not await self._first_time(body.get("event_id")):
            return
        self._spawn(self._from_event(event, raw.strip(), only_our_threads=in_thread,
                                     in_dm=not in_thread))

    async def _on_button(self, ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        self._spawn(self._click(body, action))

    # -- the work after the ack ---------------------------------------------------------------

    async def _from_event(self, event: dict[str, Any], text: str, *, only_our_threads: bool = False,
                          in_dm: bool = False) -> None:
        channel = str(event.get("channel"))
        ts = str(event.get("ts"))
        thread_ts = event.get("thread_ts")
        thread_key = await self.store.key_for_ref(TRANSPORT, channel, thread_ts) if thread_ts else None
        if only_our_threads and thread_key is None:
            return  # a thread that is not one of ours
        await self._handle(text, user=str(event["user"]), name=None, channel=channel,
                           thread_key=thread_key, reply_key=f"msg:{channel}:{ts}",
                           thread_ts=None if thread_key or in_dm else (thread_ts or ts), asked=None)

    async def _click(self, body: dict[str, Any], action: dict[str, Any]) -> None:
        if body.get("trigger_id") and not await self._first_time(f"interaction:{body['trigger_id']}"):
            return
        command = str(action.get("value") or "").strip()
        user = body.get("user") or {}
        container = body.get("container") or {}
        message = body.get("message") or {}
        channel = str((body.get("channel") or {}).get("id") or container.get("channel_id"))
        msg_ts = str(container.get("message_ts") or message.get("ts"))
        label = str((action.get("text") or {}).get("text") or command)
        clicked_key = await self.store.key_for_ref(TRANSPORT, channel, msg_ts)
        parent_ts = message.get("thread_ts") or container.get("thread_ts")
        thread_key = clicked_key
        if thread_key is None and parent_ts:
            thread_key = await self.store.key_for_ref(TRANSPORT, channel, str(parent_ts))
        who = f"<@{user.get('id')}>"
        receipt = render_click_receipt(message.get("blocks") or [], who, label)
        if clicked_key is not None and _JOB_MESSAGE.match(clicked_key):
            pass  # a job's message re-renders with its record ("confirmed by @… at …"): no transient receipt
        elif clicked_key is not None:
            await self.outbox.enqueue(clicked_key, Reply(text=f"{label} chosen"), channel=channel,
                                      extra={"slack": {"blocks": receipt, "text": message.get("text")}})
        elif container.get("is_ephemeral") and body.get("response_url"):
            await self._replace_via_response_url(str(body["response_url"]), receipt)
        else:
            try:
                await self.client.chat_update(channel=channel, ts=msg_ts, blocks=receipt,
                                              text=message.get("text") or label)
            except Exception as exc:
                log.warning("could not mark the clicked message (%s)", type(exc).__name__)
        source = str(body.get("trigger_id") or f"{channel}:{msg_ts}:{time.time_ns()}")
        await self._handle(command, user=str(user.get("id")), name=user.get("username") or user.get("name"),
                           channel=channel, thread_key=thread_key, reply_key=f"click:{source}",
                           thread_ts=None if thread_key else str(parent_ts or msg_ts),
                           asked=f"{who} chose *{escape_mrkdwn(label)}*", via_button=True)

    async def _replace_via_response_url(self, url: str, blocks: list[dict[str, Any]]) -> None:
        """Ephemeral messages cannot be edited with chat.update: use the click's response_url."""
        try:
            async with ClientSession(timeout=ClientTimeout(total=10)) as session, session.post(
                    url, json={"replace_original": True, "blocks": blocks, "text": "done"}) as resp:
                await resp.read()
        except Exception as exc:
            log.warning("could not mark the clicked ephemeral message (%s)", type(exc).__name__)

    async def _handle(self, text: str, *, user: str, name: str | None, channel: str, thread_key: str | None,
                      reply_key: str, thread_ts: str | None, asked: str | None,
                      via_button: bool = False, response_url: str | None = None) -> None:
        actor = await self._actor(user, name)
        msg = ChatMessage(text=text, actor=actor, channel=channel, thread_key=thread_key,
                          via_button=via_button)
        try:
            reply = await self.dispatch(msg)
        except Exception:
            ref = secrets.token_hex(4)
            log.exception("dispatch failed [ref %s]", ref)
            reply = Reply(text=f"Something went wrong on our side (ref `{ref}`).", tone="error")
        hints: dict[str, Any] = {"user": user}
        if thread_ts and not thread_key:
            hints["thread_ts"] = thread_ts
        if asked and not reply.ephemeral:
            hints["asked"] = asked
        if response_url:
            hints["response_url"] = response_url
        await self._enqueue_reply(reply_key, reply, channel=channel, thread_of=thread_key, hints=hints)

    async def _enqueue_reply(self, key: str, reply: Reply, *, channel: str, thread_of: str | None,
                             hints: dict[str, Any], attempts: int = 6) -> None:
        """Put the answer in the outbox; if the database stays away, post it directly once."""
        async def enqueue() -> None:
            await self.outbox.enqueue(key, reply, channel=channel, thread_of=thread_of, extra={"slack": hints})

        try:
            await retry_async(enqueue, retry_on=(Exception,), attempts=attempts,
                              backoff=Backoff(initial_s=0.2, max_s=5.0, jitter=0.0), what=f"queueing the answer {key}")
            return
        except Exception as exc:
            log.warning("could not queue the answer %s (%s)", key, type(exc).__name__)
        text = redact(reply.text)[:3000] or "(no answer)"
        try:
            await self.client.chat_postMessage(channel=channel, text=text,
                                               thread_ts=hints.get("thread_ts"))
        except Exception as exc:
            log.error("answer %s lost: database and Slack both unavailable (%s)", key, type(exc).__name__)

    def _spawn(self, coro: Awaitable[None]) -> None:
        async def guarded() -> None:
            try:
                await coro
            except Exception:
                log.exception("slack request handling failed")

        task = asyncio.create_task(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _first_time(self, event_id: Any) -> bool:
        """False for an event Slack delivers again (its retries carry the same event_id), to this process or
        to another replica (the database's `seen_keys`, kept an hour; this process alone while it is away)."""
        if not event_id:
            return True
        if event_id in self._seen:
            return False
        self._seen[str(event_id)] = None
        while len(self._seen) > 10_000:
            self._seen.popitem(last=False)
        try:
            return await self.seen.first(f"slack:{event_id}", 3600.0)
        except PitcrewError:
            return True


def missing_settings_message(missing: list[str]) -> str:
    """What `pitcrew serve` says when Slack tokens are missing."""
    lines = ["Slack is not configured; missing: " + ", ".join(missing) + ".",
             "Create the app from slack/manifest.yaml (https://api.slack.com/apps -> Create New App ->",
             "From a manifest), install it, then export the bot token (xoxb-...) and, for Socket Mode,",
             "an app-level token with connections:write (xapp-...); for HTTP mode the signing secret.",
             "No Slack workspace at hand? Try `pitcrew demo`."]
    return "\n".join(lines)
