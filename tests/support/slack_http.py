"""Signed Slack requests for tests that drive a bot's HTTP mode (`POST /slack/events`): the signature Slack puts
on every request, a slash command's form body, and a click on a button of a message the bot posted (as recorded
by `support.fake_slack.FakeSlack`)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.parse
from typing import Any

from support.fake_slack import Message

FORM = "application/x-www-form-urlencoded"


def signed_headers(body: str, secret: str, content_type: str = FORM) -> dict[str, str]:
    """The headers Slack sends with `body`: its timestamp and the `v0=` HMAC-SHA256 of `v0:{ts}:{body}`."""
    ts = str(int(time.time()))
    sig = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig, "Content-Type": content_type}


def slash_command(text: str, *, user: tuple[str, str], channel: tuple[str, str], command: str = "/pitcrew",
                  trigger_id: str = "t1") -> str:
    """The form body of `command text` typed by `user` (id, name) in `channel` (id, name)."""
    return urllib.parse.urlencode({
        "team_id": "T0001", "channel_id": channel[0], "channel_name": channel[1], "user_id": user[0],
        "user_name": user[1], "command": command, "text": text, "api_app_id": "A1",
        "response_url": "http://127.0.0.1:9/resp", "trigger_id": trigger_id})


def button(message: Message, label: str) -> dict[str, Any] | None:
    """The button of `message` whose text contains `label` (None when it has none)."""
    for block in message.blocks or []:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            if label in json.dumps(element.get("text", {})):
                return dict(element)
    return None


def button_click(message: Message, element: dict[str, Any], *, user: tuple[str, str], trigger_id: str = "t2") -> str:
    """The form body of `user` (id, name) clicking `element` (from `button`) on `message`."""
    payload = {"type": "block_actions", "team": {"id": "T0001", "domain": "fake"},
               "user": {"id": user[0], "username": user[1], "team_id": "T0001"}, "api_app_id": "A1",
               "trigger_id": trigger_id, "container": {"type": "message", "message_ts": message.ts,
                                                       "channel_id": message.channel, "is_ephemeral": False},
               "channel": {"id": message.channel, "name": message.channel},
               "message": {"ts": message.ts, "text": message.text, "blocks": message.blocks},
               "actions": [{**element, "action_ts": str(time.time())}],
               "response_url": "http://127.0.0.1:9/resp"}
    return urllib.parse.urlencode({"payload": json.dumps(payload)})
