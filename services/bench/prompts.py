"""Prompts and request bodies for the benchmark client.

Owns the deterministic synthetic prompt set (seeded, about one token per word, a distinct prefix
per request so a prefix cache cannot serve them) and the loading of a JSONL prompt file (one
JSON string, or an object with `prompt`/`text`/`messages`, per line), and the pre-encoded
OpenAI-compatible streaming request bodies.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson

from services.errors import BenchmarkError

_WORD_TEXT = (
    "time person year way day thing man world life hand part child eye woman place work week case "
    "point government company number group problem fact river engine signal garden market letter "
    "window station energy silver orange planet bridge harbor lantern meadow canyon pepper copper "
    "violin thunder marble falcon glacier harvest summit velvet anchor compass quartz ember"
)
_WORDS = tuple(_WORD_TEXT.split())


def synthetic_prompt(seed: int, index: int, input_len: int) -> str:
    rng = random.Random(seed * 1_000_003 + index)
    words = rng.choices(_WORDS, k=max(input_len - 4, 1))
    return f"Request {index} seed {seed}: " + " ".join(words)


def load_prompts_file(path: Path) -> list[str | list[dict[str, Any]]]:
    """Read a JSONL prompt file (blocking: call through `asyncio.to_thread`)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BenchmarkError(f"cannot read prompts file {path}: {exc.strerror or exc}") from None
    prompts: list[str | list[dict[str, Any]]] = []
    for lineno, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise BenchmarkError(f"{path}:{lineno}: not a JSON value") from None
        if isinstance(doc, str):
            prompts.append(doc)
        elif isinstance(doc, dict) and isinstance(doc.get("messages"), list):
            prompts.append(doc["messages"])
        elif isinstance(doc, dict) and isinstance(text := doc.get("prompt", doc.get("text")), str):
            prompts.append(text)
        else:
            raise BenchmarkError(f"{path}:{lineno}: expected a string or an object with "
                                 "'prompt', 'text' or 'messages'")
    if not prompts:
        raise BenchmarkError(f"prompts file {path} holds no prompts")
    return prompts


def request_body(api: str, model: str | None, prompt: str | list[dict[str, Any]], output_len: int) -> bytes:
    body: dict[str, Any] = {
        "max_tokens": output_len, "stream": True, "stream_options": {"include_usage": True},
        "ignore_eos": True, "temperature": 0,
    }
    if model is not None:
        body["model"] = model
    if api == "chat":
        body["messages"] = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
    else:
        if isinstance(prompt, list):
            prompt = "\n".join(str(m.get("content", "")) for m in prompt)
        body["prompt"] = prompt
    return orjson.dumps(body)
