"""Masking of secrets in text that leaves pitcrew (evidence lines, chat renderings, audit rows, logs).

`redact(text)` for strings; `redact_obj(value)` walks JSON-like structures. `redact` replaces the
secret part of what looks like a credential by `[REDACTED]` and keeps the rest of the line exactly as
it was, so quoted evidence stays recognisable: Slack tokens (`xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`,
`xoxs-`, `xapp-`, `xoxe.`/`xoxe-` refresh tokens), `Bearer`/`Basic` and `Authorization:` values,
OpenAI-style `sk-...` keys, Hugging Face `hf_...` tokens, GitHub tokens, AWS access key ids and secret
keys, PEM private key blocks (whole or truncated to one line), the values of `password=`, `token=`,
`api_key=`, `secret=` style assignments and `--api-key`/`--hf-token` command-line flags, and the
password of `scheme://user:password@host` URLs. Numbers after `#token:` in SGLang's `Decode batch`
lines are not secrets and stay.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "[REDACTED]"

_PRIVATE_KEY_BLOCK = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)", re.DOTALL
)
_TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\bxoxe\.xox[a-z]-[A-Za-z0-9.-]{6,}"),
    re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{6,}"),
    re.compile(r"\bxapp-\d-[A-Za-z0-9-]{6,}"),
    re.compile(r"\b(?:sk|pk|rk)-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{16,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]{8,})")
_AUTH_HEADER = re.compile(
    r"(?i)\b(authorization|x-api-key|api-key)(\s*[:=]\s*)(?!bearer\b|basic\b)([^\s\"',;]+)"
)
_ASSIGNMENT = re.compile(
    r"(?i)\b((?:[a-z0-9]+[_-])*(?:password|passwd|pwd|token|api[_-]?key|secret|secret[_-]?key|"
    r"access[_-]?key|client[_-]?secret|signing[_-]?secret|private[_-]?key|credentials?))"
    r"(\s*=\s*|[\"']\s*:\s*|\s*:\s*(?=[\"']))([\"']?)([^\s\"',;&)}\]]+)"
)
_URL_PASSWORD = re.compile(r"(?i)(://[^/\s:@]+:)([^@\s/]{3,})(@)")
_FLAG = re.compile(
    r"(?i)(--(?:api-key|hf-token|token|password|admin-api-key|slack-token|secret)(?:=|\s+))([^\s\"']+)"
)


def _mask_assignment(m: re.Match[str]) -> str:
    value = m.group(4)
    if value.lower() in {"none", "null", "false", "true", "''", '""'} or value.startswith("[REDACTED"):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}"


def redact(text: str) -> str:
    """Return `text` with secrets masked; text without secrets comes back unchanged."""
    if not text:
        return text
    out = text
    if "PRIVATE KEY" in out:
        out = _PRIVATE_KEY_BLOCK.sub(MASK, out)
    for pattern in _TOKEN_PATTERNS:
        out = pattern.sub(MASK, out)
    out = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", out)
    out = _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", out)
    out = _FLAG.sub(lambda m: f"{m.group(1)}{MASK}", out)
    out = _ASSIGNMENT.sub(_mask_assignment, out)
    if "://" in out:
        out = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", out)
    return out


def redact_obj(value: Any) -> Any:
    """Redact every string inside a JSON-like value (dicts, lists, tuples, strings)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_obj(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_obj(v) for v in value]
    return value
