"""Time words of the grammar: schedule specs (``every day at 02:00``, ``every monday at 09:30``,
``every 6h``) and durations (``30m``, ``2h``, ``1d``, ``90 minutes``).

Owns only the parsing of these words into `ScheduleSpec` and minutes; `handlers.grammar` calls it.
Bounds: schedule intervals from 10 minutes to 30 days, mute durations from 1 minute to 7 days.
"""

from __future__ import annotations

import re

from handlers.commands import ScheduleSpec
from services.errors import UserInputError

__all__ = ["MAX_INTERVAL_S", "MIN_INTERVAL_S", "parse_duration_minutes", "parse_schedule_spec"]

MIN_INTERVAL_S = 600
MAX_INTERVAL_S = 30 * 86400
MAX_MUTE_MIN = 7 * 1440

_DAYS = {
    "mon": "mon", "monday": "mon", "mondays": "mon",
    "tue": "tue", "tues": "tue", "tuesday": "tue", "tuesdays": "tue",
    "wed": "wed", "wednesday": "wed", "wednesdays": "wed",
    "thu": "thu", "thur": "thu", "thurs": "thu", "thursday": "thu", "thursdays": "thu",
    "fri": "fri", "friday": "fri", "fridays": "fri",
    "sat": "sat", "saturday": "sat", "saturdays": "sat",
    "sun": "sun", "sunday": "sun", "sundays": "sun",
}
_GROUPS = {"weekday": "mon-fri", "weekdays": "mon-fri", "weekend": "sat,sun", "weekends": "sat,sun",
           "mon-fri": "mon-fri"}
_UNITS = {"m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
          "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
          "d": 86400, "day": 86400, "days": 86400}
_DURATION = re.compile(r"([0-9]{1,6})([a-z]+)")
_TIME = re.compile(r"([0-9]{1,2})(?::([0-9]{2}))?(am|pm)?")


def _seconds(tokens: list[str]) -> tuple[int, int] | None:
    """Parse ``6h`` / ``6 hours`` / ``hour`` at the start of tokens: (seconds, tokens used)."""
    if not tokens:
        return None
    first = tokens[0].lower()
    m = _DURATION.fullmatch(first)
    if m and m.group(2) in _UNITS:
        return int(m.group(1)) * _UNITS[m.group(2)], 1
    if first.isdigit() and len(first) <= 6 and len(tokens) > 1 and tokens[1].lower() in _UNITS:
        return int(first) * _UNITS[tokens[1].lower()], 2
    if first in ("hour", "minute"):
        return _UNITS[first], 1
    return None


def parse_duration_minutes(tokens: list[str]) -> int:
    """``30m``, ``2h``, ``1d``, ``90 minutes`` or a bare number of minutes -> minutes (1 .. 7 days)."""
    got = _seconds(tokens)
    if got is None and len(tokens) == 1 and tokens[0].isdigit() and len(tokens[0]) <= 6:
        got = int(tokens[0]) * 60, 1
    if got is None or got[1] != len(tokens):
        raise UserInputError("Say how long, e.g. '30m', '2h' or '1d'.")
    minutes = got[0] // 60
    if not 1 <= minutes <= MAX_MUTE_MIN:
        raise UserInputError("A mute lasts from 1 minute to 7 days.")
    return minutes


def _time_of_day(tokens: list[str]) -> tuple[int, int, int]:
    """``02:00`` / ``9:30`` / ``2am`` / ``2 pm`` / ``noon`` -> (hour, minute, tokens used)."""
    if not tokens:
        raise UserInputError("Say the time, e.g. 'at 02:00'.")
    first = tokens[0].lower()
    if first == "noon":
        return 12, 0, 1
    if first == "midnight":
        return 0, 0, 1
    used = 1
    if len(tokens) > 1 and tokens[1].lower() in ("am", "pm") and re.fullmatch(r"[0-9:]+", first):
        first += tokens[1].lower()
        used = 2
    m = _TIME.fullmatch(first)
    if not m:
        raise UserInputError(f"'{tokens[0][:20]}' is not a time of day; write it like 02:00 or 9:30.")
    hour, minute = int(m.group(1)), int(m.group(2) or 0)
    if m.group(3):
        if not 1 <= hour <= 12:
            raise UserInputError("With am/pm the hour goes from 1 to 12.")
        hour = hour % 12 + (12 if m.group(3) == "pm" else 0)
    if hour > 23 or minute > 59:
        raise UserInputError("A time of day goes from 00:00 to 23:59.")
    return hour, minute, used


def _days(word: str) -> str | None:
    if word in _GROUPS:
        return _GROUPS[word]
    parts = word.split(",")
    out: list[str] = []
    for p in parts:
        if p not in _DAYS:
            return None
        if _DAYS[p] not in out:
            out.append(_DAYS[p])
    return ",".join(out)


def parse_schedule_spec(verb: str, args: list[str]) -> tuple[ScheduleSpec, list[str]]:
    """Read the ``every ...`` part; return the spec and the remaining tokens (the command)."""
    if verb == "hourly":
        return ScheduleSpec(kind="interval", every_seconds=3600), args
    tokens = list(args)
    if verb == "daily":
        tokens = ["day", *tokens]
    if not tokens:
        raise UserInputError("Say when, e.g. 'every day at 02:00 bench'.")
    word = tokens[0].lower()
    day_of_week = None if word in ("day", "days", "night") else _days(word)
    if word in ("day", "days", "night") or day_of_week is not None:
        rest = tokens[1:]
        if not rest or rest[0].lower() != "at":
            raise UserInputError(f"Say the time too, e.g. 'every {word} at 02:00 ...'.")
        hour, minute, used = _time_of_day(rest[1:])
        spec = ScheduleSpec(kind="cron", hour=hour, minute=minute, day_of_week=day_of_week)
        return spec, rest[1 + used:]
    got = _seconds(tokens)
    if got is None:
        raise UserInputError("Say when, like 'every day at 02:00', 'every monday at 09:30' or 'every 6h'.")
    seconds, used = got
    if not MIN_INTERVAL_S <= seconds <= MAX_INTERVAL_S:
        raise UserInputError("A schedule repeats every 10 minutes at the most often and every 30 days "
                             "at the least.")
    return ScheduleSpec(kind="interval", every_seconds=seconds), tokens[used:]
