"""Reading a unit's `[Service]` settings other than ExecStart=: `Environment=` and `User=`, as systemd reads them.

`Environment=` values are split into words with systemd's quoting (`services.units.syntax.split_words`),
each ``KEY=VALUE``; a later assignment of a key wins and an empty `Environment=` resets the list, as in
systemd. `User=`: the last assignment, or None (the unit runs as root).
"""

from __future__ import annotations

from services.units.syntax import WS, logical_lines, split_words

__all__ = ["service_environment", "service_user"]


def _service_assignments(text: str, key: str) -> list[str]:
    section: str | None = None
    values: list[str] = []
    for logical in logical_lines(text):
        line = "".join(logical.chars).strip(WS)
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        k, eq, v = line.partition("=")
        if eq and section == "Service" and k.strip(WS) == key:
            values.append(v.strip(WS))
    return values


def service_environment(text: str) -> dict[str, str]:
    """The unit's `Environment=` variables."""
    env: dict[str, str] = {}
    for value in _service_assignments(text, "Environment"):
        if not value:
            env.clear()
            continue
        for word, _, _ in split_words(value):
            k, eq, v = word.partition("=")
            if eq and k:
                env[k] = v
    return env


def service_user(text: str) -> str | None:
    """The unit's `User=`, or None."""
    values = _service_assignments(text, "User")
    return values[-1] if values and values[-1] else None
