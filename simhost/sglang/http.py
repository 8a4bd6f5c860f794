"""The fake server's HTTP/1.1 layer: a minimal keep-alive server on asyncio streams.

Owns request parsing (Content-Length bodies), JSON and chunked SSE responses shaped like SGLang
0.5.9's OpenAI-compatible API behind uvicorn (`server: uvicorn`, `text/event-stream`, chunked),
uvicorn's access-log line, and the endpoints: `/v1/chat/completions`, `/v1/completions` and
`/generate` (stream or not; `stream_options.include_usage`, `ignore_eos`, `max_tokens` /
`max_completion_tokens`), `/v1/models`, `/health`, `/health_generate`, `/model_info`,
`/get_model_info`, `/server_info`, `/get_server_info`, `/metrics` (with `--enable-metrics`),
`/flush_cache`. SSE chunks carry as many tokens as the decode step produced (the accept length).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

from simhost.sglang.engine import Engine, Req

WORDS = ("the", " model", " answers", " with", " a", " steady", " stream", " of", " tokens", ",", " and",
         " each", " step", " verifies", " several", " draft", " guesses", " at", " once", ".")


def token_text(start: int, n: int) -> str:
    return "".join(WORDS[(start + i) % len(WORDS)] for i in range(n))


def prompt_text(body: dict[str, Any]) -> str:
    """The request's prompt as text (a chat's messages joined)."""
    if "messages" in body:
        return "\n".join(str(m.get("content", "")) for m in body.get("messages") or [] if isinstance(m, dict))
    prompt = body.get("prompt", body.get("text", ""))
    return " ".join(str(p) for p in prompt) if isinstance(prompt, list) else str(prompt)


def count_prompt_tokens(body: dict[str, Any]) -> int:
    tokens = max(1, len(prompt_text(body)) // 4)
    return tokens + 4 * len(body.get("messages") or []) + 3 if "messages" in body else tokens


@dataclass
class _Access:
    line: str
    sink: Callable[[str], None]

    def log(self, status: int) -> None:
        if self.line:
            self.sink(f"{self.line} {status} {HTTPStatus(status).phrase}")
            self.line = ""


@dataclass
class _Progress:
    pos: int = 0
    finish: str | None = None


class App:
    """State shared by the endpoints; `status` is starting | ready | draining."""

    def __init__(self, *, engine: Engine, served_name: str, model_path: str, context_len: int,
                 server_info: Callable[[], dict[str, Any]], metrics: Callable[[], str] | None,
                 access_log: Callable[[str], None]) -> None:
        self.engine = engine
        self.served_name = served_name
        self.model_path = model_path
        self.context_len = context_len
        self.server_info = server_info
        self.metrics = metrics
        self.access_log = access_log
        self.status = "starting"
        self.health_timeout = 0.05
        self.error_log: Callable[[str], None] = lambda _msg: None
        # each generation request's prompt and whether it streams (the sim's record)
        self.received: Callable[[str, bool, int], None] | None = None
        self.last_heartbeat = time.strftime("%H:%M:%S")
        self.connections: set[asyncio.StreamWriter] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections.add(writer)
        peer = writer.get_extra_info("peername") or ("127.0.0.1", 0)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                parts = line.decode("latin-1").split()
                if len(parts) != 3:
                    return
                method, target, version = parts
                headers: dict[str, str] = {}
                while True:
                    hline = await reader.readline()
                    if hline in (b"\r\n", b"\n", b""):
                        break
                    key, _, value = hline.decode("latin-1").partition(":")
                    headers[key.strip().lower()] = value.strip()
                body = b""
                length = int(headers.get("content-length", "0") or 0)
                if length:
                    body = await reader.readexactly(length)
                path = target.split("?", 1)[0]
                access = _Access(f'{peer[0]}:{peer[1]} - "{method} {target} {version}"', self.access_log)
                status = await self.route(method, path, body, writer, access)
                access.log(status)  # no-op for streams: they log when their headers go out, as uvicorn does
                if headers.get("connection", "").lower() == "close" or writer.is_closing():
                    return
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            return
        finally:
            self.connections.discard(writer)
            writer.close()

    # ---- responses ------------------------------------------------------------------------
    @staticmethod
    def _head(status: int, ctype: str, extra: str) -> bytes:
        return (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ndate: {formatdate(usegmt=True)}\r\n"
                f"server: uvicorn\r\ncontent-type: {ctype}\r\n{extra}\r\n").encode()

    def send(self, writer: asyncio.StreamWriter, status: int, payload: Any, ctype: str = "application/json") -> int:
        data = payload if isinstance(payload, bytes) else (
            payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
        writer.write(self._head(status, ctype, f"content-length: {len(data)}\r\n") + data)
        return status

    async def route(self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter,
                    access: _Access) -> int:
        if path in ("/health", "/health_generate"):
            if self.status != "ready":
                return self.send(writer, 503, b"", "text/plain")
            if path == "/health_generate" and self.engine.halted:
                tic = time.strftime("%H:%M:%S")
                await asyncio.sleep(self.health_timeout)  # SGLang waits HEALTH_CHECK_TIMEOUT (20 s)
                self.error_log("Health check failed. Server couldn't get a response from detokenizer for last "
                               f"20 seconds. tic start time: {tic}. last_heartbeat time: {self.last_heartbeat}")
                return self.send(writer, 503, b"", "text/plain")
            return self.send(writer, 200, b"", "text/plain")
        if path == "/v1/models":
            return self.send(writer, 200, {"object": "list", "data": [{
                "id": self.served_name, "object": "model", "created": int(time.time()), "owned_by": "sglang",
                "root": self.served_name, "parent": None, "max_model_len": self.context_len}]})
        if path in ("/model_info", "/get_model_info"):
            return self.send(writer, 200, {"model_path": self.model_path, "tokenizer_path": self.model_path,
                                           "is_generation": True, "preferred_sampling_params": None,
                                           "weight_version": "default", "has_image_understanding": False,
                                           "has_audio_understanding": False, "model_type": "qwen3_5_moe",
                                           "architectures": ["Qwen3_5MoeForCausalLM"]})
        if path in ("/server_info", "/get_server_info"):
            return self.send(writer, 200, self.server_info())
        if path == "/metrics" and self.metrics is not None:
            return self.send(writer, 200, self.metrics(), "text/plain; version=0.0.4; charset=utf-8")
        if path == "/flush_cache":
            return self.send(writer, 200, "Cache flushed.\nPlease check backend logs for more details. "
                             "(When there are running or waiting requests, the operation will not be performed.)\n",
                             "text/plain")
        if method == "POST" and path in ("/v1/chat/completions", "/v1/completions", "/generate"):
            if self.status != "ready" and path != "/generate":
                return self.send(writer, 503, {"object": "error", "message": "Server is not ready", "code": 503})
            try:
                req_body = json.loads(body or b"{}")
            except ValueError:
                return self.send(writer, 400, {"object": "error", "message": "Invalid JSON body", "type":
                                               "BadRequest", "param": None, "code": 400})
            return await self.generate(path, req_body, writer, access)
        return self.send(writer, 404, {"detail": "Not Found"})

    async def generate(self, path: str, body: dict[str, Any], writer: asyncio.StreamWriter,
                       access: _Access) -> int:
        native = path == "/generate"
        params = body.get("sampling_params", {}) if native else body
        max_tokens = int(params.get("max_new_tokens") or params.get("max_completion_tokens")
                         or params.get("max_tokens") or 128 if native else
                         body.get("max_completion_tokens") or body.get("max_tokens") or 2048)
        stream = bool(body.get("stream"))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        prompt_tokens = count_prompt_tokens(body)
        if self.received is not None:
            self.received(prompt_text(body), stream, max_tokens)
        rid = uuid.uuid4().hex
        created = int(time.time())
        chat = path == "/v1/chat/completions"
        obj = "chat.completion.chunk" if chat else "text_completion"
        model_json = json.dumps(body.get("model") or self.served_name)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pieces: list[str] = []
        state = _Progress()

        def chunk(content: str | None, finish: str | None, role: bool = False) -> bytes:
            if native:
                payload = json.dumps({"text": "".join(pieces), "meta_info": {
                    "id": rid, "finish_reason": {"type": finish, "length": state.pos} if finish else None,
                    "prompt_tokens": prompt_tokens, "completion_tokens": state.pos}})
            elif chat:
                delta = ('{"role":"assistant","content":"","reasoning_content":null,"tool_calls":null}' if role
                         else f'{{"role":null,"content":{json.dumps(content)},"reasoning_content":null,'
                              f'"tool_calls":null}}')
                fin = json.dumps(finish)
                payload = (f'{{"id":"{rid}","object":"{obj}","created":{created},"model":{model_json},'
                           f'"choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":{fin},'
                           f'"matched_stop":null}}],"usage":null}}')
            else:
                payload = (f'{{"id":"{rid}","object":"{obj}","created":{created},"model":{model_json},'
                           f'"choices":[{{"index":0,"text":{json.dumps(content or "")},"logprobs":null,'
                           f'"finish_reason":{json.dumps(finish)},"matched_stop":null}}],"usage":null}}')
            data = f"data: {payload}\n\n".encode()
            return f"{len(data):x}\r\n".encode() + data + b"\r\n"

        def usage() -> dict[str, Any]:
            return {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + state.pos,
                    "completion_tokens": state.pos, "prompt_tokens_details": None, "reasoning_tokens": 0}

        def sink(n: int, finished: bool, reason: str | None) -> None:
            if writer.is_closing():
                raise ConnectionError("client went away")
            text = token_text(state.pos, n)
            state.pos += n
            pieces.append(text)
            if stream:
                writer.write(chunk(text, reason if finished and not native else None)
                             if not native else chunk(text, reason if finished else None))
            if finished:
                state.finish = reason
                if not done.done():
                    done.set_result(None)

        if stream:
            writer.write(self._head(200, "text/event-stream; charset=utf-8", "transfer-encoding: chunked\r\n"))
            access.log(200)
            if chat:
                writer.write(chunk(None, None, role=True))
        req = Req(rid=rid, prompt_tokens=prompt_tokens, max_tokens=max(1, max_tokens),
                  ignore_eos=bool(params.get("ignore_eos")), sink=sink)
        self.engine.submit(req)
        try:
            while not done.done():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(done), 1.0)
                if writer.is_closing():
                    self.engine.abort(req)
                    raise ConnectionError("client went away")
        except asyncio.CancelledError:
            self.engine.abort(req)
            raise
        if stream:
            tail = b""
            if include_usage and not native:
                payload = json.dumps({"id": rid, "object": obj, "created": created, "model": json.loads(model_json),
                                      "choices": [], "usage": usage()}, separators=(",", ":"))
                data = f"data: {payload}\n\n".encode()
                tail += f"{len(data):x}\r\n".encode() + data + b"\r\n"
            done_data = b"data: [DONE]\n\n"
            tail += f"{len(done_data):x}\r\n".encode() + done_data + b"\r\n0\r\n\r\n"
            writer.write(tail)
            await writer.drain()
            return 200
        text = "".join(pieces)
        if native:
            return self.send(writer, 200, {"text": text, "meta_info": {
                "id": rid, "finish_reason": {"type": state.finish, "length": state.pos},
                "prompt_tokens": prompt_tokens, "completion_tokens": state.pos}})
        if chat:
            choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text,
                                                              "reasoning_content": None, "tool_calls": None},
                                      "logprobs": None, "finish_reason": state.finish, "matched_stop": None}
            kind = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": state.finish,
                      "matched_stop": None}
            kind = "text_completion"
        return self.send(writer, 200, {"id": rid, "object": kind, "created": created,
                                       "model": json.loads(model_json), "choices": [choice], "usage": usage()})
