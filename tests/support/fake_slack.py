"""A fake Slack Web API for tests and benchmarks: an aiohttp server on a free loopback port.

It answers the methods pitcrew calls the way Slack does (``auth.test``, ``chat.postMessage``,
``chat.update``, ``chat.postEphemeral``, ``conversations.history``/``replies`` with message
metadata, ``users.info``, ``conversations.info``, ``files.getUploadURLExternal`` + the upload URL
+ ``files.completeUploadExternal``, ``apps.connections.open``, ``views.publish`` — the last Home view
per user in ``home_views``), records every call, and can be
told to misbehave: HTTP 429 with ``Retry-After``, 5xx, ``ok: false`` errors, slow answers (the
call is processed, then the answer is late — the case that tempts a client into posting twice).
`duplicates()` lists idempotency keys (from message metadata) that were posted more than once.
`fail_for()` makes a method misbehave for a stretch of time (a 429 storm), and `early_calls()` lists
calls that arrived before the ``Retry-After`` this fake gave for their method (per channel for
``chat.postMessage``/``chat.postEphemeral``, per workspace for the rest, as Slack applies them).

Point a client at it with ``AsyncWebClient(base_url=fake.base_url)``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

IDEMPOTENCY_EVENT = "pitcrew_message"


@dataclass
class Fault:
    """One programmed misbehaviour, used ``times`` times by calls to ``method`` ("*" = any)."""

    method: str
    kind: str  # "429" | "5xx" | "error" | "slow" | "slow_before"
    times: int = 1
    retry_after: int = 1
    error: str = "internal_error"
    status: int = 503
    delay_s: float = 0.0
    until: float | None = None  # monotonic end of a timed fault (``fail_for``); then ``times`` is ignored


PER_CHANNEL_LIMIT = frozenset({"chat.postMessage", "chat.postEphemeral"})


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    status: int
    ok: bool
    at: float = field(default_factory=time.monotonic)


@dataclass
class Message:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None
    metadata: dict[str, Any] | None
    user: str
    edits: int = 0
    ephemeral_for: str | None = None


class FakeSlack:
    """In-memory Slack workspace with a Web API; start with ``await fake.start()``."""

    def __init__(self, *, token: str = "xoxb-fake-token", bot_user_id: str = "UBOT",
                 bot_id: str = "BBOT", team_id: str = "T0001") -> None:
        self.token = token
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.team_id = team_id
        self.calls: list[Call] = []
        self.messages: list[Message] = []
        self.ephemerals: list[Message] = []
        self.files: dict[str, dict[str, Any]] = {}
        self.users: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, dict[str, Any]] = {}
        self.usergroups: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self.holds: dict[tuple[str, str | None], float] = {}  # Retry-After given, per limit key
        self.early: list[tuple[Call, float]] = []  # (call, seconds before its hold ended)
        self._last_ts = 0.0
        self._file_ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.changed = asyncio.Event()
        self.sockets: list[web.WebSocketResponse] = []
        self.socket_acks: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []  # bodies POSTed to response URLs
        self._envelopes = itertools.count(1)
        self.home_tab_enabled = True
        self.home_views: dict[str, dict[str, Any]] = {}  # user -> the Home view last published for them

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    async def start(self) -> FakeSlack:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/api/{method}", self._handle)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/socket", self._socket)
        app.router.add_post("/response/{rid}", self._response_url)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None and server.sockets  # type: ignore[attr-defined]
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeSlack:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- programming ---------------------------------------------------------------------------

    def add_user(self, user_id: str, name: str, *, real_name: str | None = None) -> None:
        self.users[user_id] = {"id": user_id, "name": name, "real_name": real_name or name,
                               "profile": {"display_name": name, "real_name": real_name or name}}

    def add_channel(self, channel_id: str, name: str, *, is_member: bool = True) -> None:
        self.channels[channel_id] = {"id": channel_id, "name": name, "is_member": is_member,
                                     "is_channel": True}

    def add_usergroup(self, handle: str, users: list[str]) -> None:
        gid = f"S{len(self.usergroups) + 1:04d}"
        self.usergroups.append({"id": gid, "handle": handle, "name": handle, "users": list(users)})

    def fail(self, method: str, kind: str, *, times: int = 1, retry_after: int = 1,
             error: str = "internal_error", status: int = 503, delay_s: float = 0.0) -> None:
        """Make the next ``times`` calls of ``method`` misbehave (see `Fault`)."""
        self.faults.append(Fault(method, kind, times, retry_after, error, status, delay_s))

    def fail_for(self, method: str, kind: str, *, seconds: float, retry_after: int = 1,
                 error: str = "internal_error", status: int = 503, delay_s: float = 0.0) -> None:
        """Make every call of ``method`` ("*" = any) misbehave for the next ``seconds``."""
        self.faults.append(Fault(method, kind, 1, retry_after, error, status, delay_s,
                                 until=time.monotonic() + seconds))

    # -- inspection ----------------------------------------------------------------------------

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def posted(self, channel: str | None = None, *, thread_ts: str | None = None,
               top_level: bool = False) -> list[Message]:
        out = [m for m in self.messages if channel is None or m.channel == channel]
        if thread_ts is not None:
            out = [m for m in out if m.thread_ts == thread_ts]
        if top_level:
            out = [m for m in out if m.thread_ts is None]
        return out

    def idempotency_keys(self) -> list[str]:
        keys = []
        for m in self.messages:
            payload = (m.metadata or {}).get("event_payload") or {}
            if isinstance(payload.get("idempotency_key"), str):
                keys.append(payload["idempotency_key"])
        return keys

    def early_calls(self) -> list[tuple[Call, float]]:
        """Calls made before the Retry-After this fake had given for their method (and channel)."""
        return list(self.early)

    def duplicates(self) -> dict[str, int]:
        """Idempotency keys posted more than once, with their counts (empty = no duplicate)."""
        return {k: n for k, n in Counter(self.idempotency_keys()).items() if n > 1}

    async def wait_for(self, predicate: Any, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Wait until ``predicate(self)`` is true (re-checked after every call)."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("fake Slack: condition not met in time")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(remaining, 0.2))
            except TimeoutError:
                pass

    # -- server --------------------------------------------------------------------------------

    def _take_fault(self, method: str) -> Fault | None:
        now = time.monotonic()
        for f in self.faults:
            if f.until is not None:
                if now < f.until and f.method in (method, "*"):
                    return f
                continue
            if f.times > 0 and f.method in (method, "*"):
                f.times -= 1
                return f
        return None

    async def _args(self, request: web.Request) -> dict[str, Any]:
        args: dict[str, Any] = dict(request.query)
        if request.can_read_body:
            ctype = request.content_type
            if ctype == "application/json":
                body = await request.json()
                if isinstance(body, dict):
                    args.update(body)
            else:
                form = await request.post()
                args.update({k: v for k, v in form.items() if isinstance(v, str)})
        for k in ("blocks", "metadata", "files", "view"):
            if isinstance(args.get(k), str):
                try:
                    args[k] = json.loads(args[k])
                except ValueError:
                    pass
        return args

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await self._args(request)
        limit_key = self._limit_key(method, args)
        arrived = time.monotonic()
        hold_until = self.holds.get(limit_key, 0.0)
        early_by = hold_until - arrived if arrived < hold_until else None
        fault = self._take_fault(method)
        if fault is not None and fault.kind == "slow_before":
            await asyncio.sleep(fault.delay_s)
        if early_by is not None:
            self.early.append((Call(method, args, 0, False), early_by))
        if fault is not None and fault.kind == "429":
            self.holds[limit_key] = max(hold_until, time.monotonic() + fault.retry_after)
            return self._record(method, args, 429, {"ok": False, "error": "ratelimited"},
                                headers={"Retry-After": str(fault.retry_after)})
        if fault is not None and fault.kind == "5xx":
            return self._record(method, args, fault.status, {"ok": False, "error": "service_unavailable"})
        if fault is not None and fault.kind == "error":
            return self._record(method, args, 200, {"ok": False, "error": fault.error})
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip() or args.get("token", "")
        if method not in ("api.test",) and token not in (self.token, "xapp-fake-token"):
            return self._record(method, args, 200, {"ok": False, "error": "invalid_auth"})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return self._record(method, args, 200, {"ok": False, "error": "unknown_method"})
        body = handler(args, request)
        if fault is not None and fault.kind == "slow":
            await asyncio.sleep(fault.delay_s)  # processed, then the answer comes late
        return self._record(method, args, 200, body)

    @staticmethod
    def _limit_key(method: str, args: dict[str, Any]) -> tuple[str, str | None]:
        channel = args.get("channel") or args.get("channel_id")
        return (method, str(channel) if method in PER_CHANNEL_LIMIT and channel else None)

    def _record(self, method: str, args: dict[str, Any], status: int, body: dict[str, Any],
                headers: dict[str, str] | None = None) -> web.Response:
        self.calls.append(Call(method, args, status, bool(body.get("ok"))))
        self.changed.set()
        return web.json_response(body, status=status, headers=headers)

    async def _upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if file_id not in self.files:
            return web.Response(status=404, text="no such upload")
        data = await request.read()
        self.files[file_id]["data"] = data
        self.calls.append(Call("upload", {"file_id": file_id, "bytes": len(data)}, 200, True))
        self.changed.set()
        return web.Response(text="OK - " + str(len(data)))

    def _next_ts(self) -> str:
        # Real-time based like Slack's (history `oldest` filters work), strictly increasing.
        self._last_ts = max(self._last_ts + 0.000001, time.time())
        return f"{self._last_ts:.6f}"

    def response_url(self, rid: str = "r") -> str:
        """A slash command's response_url served by this fake."""
        return f"http://127.0.0.1:{self.port}/response/{rid}"

    async def _response_url(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.responses.append({"rid": request.match_info["rid"], **body})
        self.calls.append(Call("response_url", body, 200, True))
        self.changed.set()
        return web.Response(text="ok")

    # -- Socket Mode ---------------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.sockets.append(ws)
        self.changed.set()
        await ws.send_json({"type": "hello", "num_connections": len(self.sockets),
                            "connection_info": {"app_id": "A1"},
                            "debug_info": {"host": "fake", "approximate_connection_time": 3600}})
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self.socket_acks.append(json.loads(msg.data))
                    self.changed.set()
        finally:
            self.sockets.remove(ws)
            self.changed.set()
        return ws

    async def socket_send(self, kind: str, payload: dict[str, Any]) -> str:
        """Push an envelope (``slash_commands``, ``events_api``, ``interactive``) to the first
        connected Socket Mode client; returns its envelope id (the client must ack it)."""
        if not self.sockets:
            raise RuntimeError("no Socket Mode connection")
        envelope_id = f"env-{next(self._envelopes)}"
        await self.sockets[0].send_json({"envelope_id": envelope_id, "type": kind, "payload": payload,
                                         "accepts_response_payload": kind != "events_api",
                                         "retry_attempt": 0, "retry_reason": ""})
        return envelope_id

    # -- methods -------------------------------------------------------------------------------

    def _m_api_test(self, args: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        return {"ok": True, "args": args}

    def _m_auth_test(self, _a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        return {"ok": True, "url": "https://fake.slack.test/", "team": "Fake", "user": "pitcrew",
                "team_id": self.team_id, "user_id": self.bot_user_id, "bot_id": self.bot_id,
                "is_enterprise_install": False}

    def _channel_error(self, channel: str | None) -> dict[str, Any] | None:
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        info = self.channels.get(channel)
        if self.channels and info is None:
            return {"ok": False, "error": "channel_not_found"}
        if info is not None and not info.get("is_member", True):
            return {"ok": False, "error": "not_in_channel"}
        return None

    def _m_chat_postMessage(self, a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        err = self._channel_error(a.get("channel"))
        if err:
            return err
        if not a.get("text") and not a.get("blocks"):
            return {"ok": False, "error": "no_text"}
        thread_ts = a.get("thread_ts") or None  # users' messages are not stored here: any ts goes
        msg = Message(channel=a["channel"], ts=self._next_ts(), text=a.get("text", ""),
                      blocks=list(a.get("blocks") or []), thread_ts=thread_ts,
                      metadata=a.get("metadata") if isinstance(a.get("metadata"), dict) else None,
                      user=self.bot_user_id)
        self.messages.append(msg)
        return {"ok": True, "channel": msg.channel, "ts": msg.ts, "message": self._as_json(msg)}

    def _m_chat_update(self, a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        for m in self.messages:
            if m.channel == a.get("channel") and m.ts == a.get("ts"):
                if "text" in a:
                    m.text = a["text"]
                if "blocks" in a:
                    m.blocks = list(a["blocks"] or [])
                m.edits += 1
                return {"ok": True, "channel": m.channel, "ts": m.ts, "text": m.text}
        return {"ok": False, "error": "message_not_found"}

    def _m_chat_postEphemeral(self, a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        err = self._channel_error(a.get("channel"))
        if err:
            return err
        if not a.get("user"):
            return {"ok": False, "error": "user_not_in_channel"}
        msg = Message(channel=a["channel"], ts=self._next_ts(), text=a.get("text", ""),
                      blocks=list(a.get("blocks") or []), thread_ts=a.get("thread_ts") or None,
                      metadata=None, user=self.bot_user_id, ephemeral_for=a["user"])
        self.ephemerals.append(msg)
        return {"ok": True, "message_ts": msg.ts}

    def _as_json(self, m: Message) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "message", "ts": m.ts, "text": m.text, "user": m.user,
                             "bot_id": self.bot_id, "blocks": m.blocks}
        if m.thread_ts:
            d["thread_ts"] = m.thread_ts
        if m.metadata:
            d["metadata"] = m.metadata
        return d

    def _m_conversations_history(self, a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        err = self._channel_error(a.get("channel"))
        if err:
            return err
        oldest = float(a.get("oldest") or 0)
        msgs = [m for m in self.messages if m.channel == a["channel"] and m.thread_ts is None
                and float(m.ts) >= oldest]
        return {"ok": True, "messages": [self._as_json(m) for m in reversed(msgs)], "has_more": False}

    def _m_conversations_replies(self, a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        parent = [m for m in self.messages if m.channel == a.get("channel") and m.ts == a.get("ts")]
        if not parent:
            return {"ok": False, "error": "thread_not_found"}
        msgs = parent + [m for m in self.messages if m.channel == a.get("channel")
                         and m.thread_ts == a.get("ts")]
        return {"ok": True, "messages": [self._as_json(m) for m in msgs], "has_more": False}

    def _m_users_info(self, a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        user = self.users.get(a.get("user", ""))
        if user is None:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "user": user}

    def _m_usergroups_list(self, a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        with_users = str(a.get("include_users", "")).lower() in ("1", "true")
        groups = [g if with_users else {k: v for k, v in g.items() if k != "users"} for g in self.usergroups]
        return {"ok": True, "usergroups": groups}

    def _m_conversations_info(self, a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        info = self.channels.get(a.get("channel", ""))
        if info is None:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": info}

    def _m_views_publish(self, a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        view = a.get("view")
        if not a.get("user_id") or not isinstance(view, dict) or not isinstance(view.get("blocks"), list):
            return {"ok": False, "error": "invalid_arguments"}
        if view.get("type") == "home" and not self.home_tab_enabled:
            return {"ok": False, "error": "not_enabled"}
        if len(view["blocks"]) > 100 or len(json.dumps(view)) > 250_000:
            return {"ok": False, "error": "view_too_large" if len(view["blocks"]) <= 100 else "invalid_blocks"}
        self.home_views[str(a["user_id"])] = view
        return {"ok": True, "view": {"id": f"V{len(self.calls):06d}", "type": view.get("type"), **view}}

    def _m_apps_connections_open(self, _a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}

    def _m_files_getUploadURLExternal(self, a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        if not a.get("filename") or not str(a.get("length", "")).isdigit():
            return {"ok": False, "error": "invalid_arguments"}
        file_id = f"F{next(self._file_ids):06d}"
        self.files[file_id] = {"id": file_id, "filename": a["filename"], "length": int(a["length"]),
                               "data": None, "shared": False}
        return {"ok": True, "upload_url": f"http://127.0.0.1:{self.port}/upload/{file_id}",
                "file_id": file_id}

    def _m_files_completeUploadExternal(self, a: dict[str, Any], _r: web.Request) -> dict[str, Any]:
        files = a.get("files")
        if not isinstance(files, list) or not files:
            return {"ok": False, "error": "invalid_arguments"}
        out = []
        for f in files:
            rec = self.files.get(f.get("id", ""))
            if rec is None or rec["data"] is None:
                return {"ok": False, "error": "file_not_found"}
            channel = a.get("channel_id")
            if channel:
                err = self._channel_error(channel)
                if err:
                    return err
            rec.update(shared=True, title=f.get("title"), channel=channel,
                       thread_ts=a.get("thread_ts") or None)
            out.append({"id": rec["id"], "name": rec["filename"], "title": f.get("title")})
        return {"ok": True, "files": out}
