"""Secret redaction: masks tokens, keys and passwords in any text before it is shown or stored.

`redact(text)` for strings; `redact_obj(value)` walks JSON-like structures. Used for evidence
lines, audit rows, chat messages and logs.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "[REDACTED]"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
                re.S), MASK),
    (re.compile(r"\bxox[abposer]-[A-Za-z0-9-]{8,}"), MASK),
    (re.compile(r"\bxapp-[A-Za-z0-9-]{8,}"), MASK),
    (re.compile(r"\b(?:sk|pk|rk)-(?:proj-|live-|test-)?[A-Za-z0-9_-]{16,}"), MASK),
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}"), MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), MASK),
    (re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), MASK),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + MASK),
    (re.compile(r"(?i)(authorization\s*[:=]\s*)(?!bearer\b)[^\s,;]{8,}"), r"\1" + MASK),
    (re.compile(r"(?i)\b((?:api[_-]?key|access[_-]?token|auth[_-]?token|token|secret|password|passwd|pwd)"
                r"[\"']?\s*[:=]\s*[\"']?)([^\s\"',;&]{4,})"), r"\1" + MASK),
    (re.compile(r"(?i)(://[^/\s:@]+:)([^@\s/]{3,})(@)"), r"\1" + MASK + r"\3"),
)


def redact(text: str) -> str:
    """Return `text` with every recognised secret replaced by ``[REDACTED]``."""
    if not text:
        return text
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def redact_obj(value: Any) -> Any:
    """Redact every string inside a JSON-like value (dicts, lists, tuples, strings)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_obj(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_obj(v) for v in value]
    return value
