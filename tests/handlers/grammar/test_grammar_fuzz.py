"""Fuzzing the grammar: only user errors, canonical render round trips, nothing unsafe gets through."""

from __future__ import annotations

import dataclasses
import re

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from handlers.commands import Command, Schedule
from handlers.grammar import HOST_RE, parse, render
from handlers.grammar_args import lookup_flag
from handlers.registry import COMMANDS
from services.engines.sglang.flags import FLAGS
from services.errors import UserInputError

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SAFE = re.compile(r"[A-Za-z0-9._:/=+,-]*")

VERBS = [w for info in COMMANDS for w in info.words] + ["kill stale", "@pitcrew", "/pitcrew"]
FLAG_WORDS = [f.short for f in FLAGS] + [f.name for f in FLAGS] + ["stpes", "--nope"]
WORDS = st.one_of(
    st.sampled_from(VERBS),
    st.sampled_from(FLAG_WORDS),
    st.sampled_from(["on", "to", "with", "and", "at", "for", "from", "incident", "job", "pid", "c", "day",
                     "monday", "weekday", "6h", "30m", "02:00", "9am", "every", "gpu-1", "GPU-2", "r3",
                     "#4", "..", ",", "=", "off", "true", "EAGLE", "eagle3", "-1", "0.85", "1..5", "c=1,4"]),
    st.integers(-5, 300).map(str),
    st.builds(lambda k, v: f"{k}={v}", st.sampled_from(FLAG_WORDS), st.sampled_from(["1", "0.5", "on", "x"])),
    st.text(alphabet="abcdefgh0123456789.-_:/", min_size=1, max_size=6),
)
SOUP = st.lists(WORDS, min_size=1, max_size=9).map(" ".join)


def _strings(obj: object) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, tuple):
        return [s for item in obj for s in _strings(item)]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [s for f in dataclasses.fields(obj) if f.name != "command_text"
                for s in _strings(getattr(obj, f.name))]
    return []


def _check_command(cmd: Command) -> None:
    for s in _strings(cmd):
        assert SAFE.fullmatch(s), s
    if isinstance(cmd, Schedule):
        assert cmd.command_text == render(cmd.command)
    host = getattr(cmd, "host", None)
    if host is not None:
        assert HOST_RE.fullmatch(host) and ".." not in host
    assert parse(render(cmd)) == cmd


@SETTINGS
@given(st.text(max_size=120))
def test_any_text_gives_a_command_or_a_user_error(text: str) -> None:
    try:
        cmd = parse(text)
    except UserInputError as err:
        assert str(err) and "\n" not in str(err)
        return
    _check_command(cmd)


@SETTINGS
@given(SOUP)
def test_word_soup_gives_a_command_or_a_user_error(text: str) -> None:
    try:
        cmd = parse(text)
    except UserInputError as err:
        assert str(err) and "\n" not in str(err)
        return
    _check_command(cmd)


VALID = ["try 10 steps", "try steps=10 mem=0.85 on gpu-2", "sweep steps 1,2,4,8 c=1,8", "bench c=1,4,16",
         "status gpu-1", "rollback gpu-1 to 3", "every day at 02:00 sweep steps 1..5 on gpu-1",
         "kill-stale gpu-1 48213", "again with 12", "try draft-model=/models/x"]
METAS = [*";&|$`'\"\\<>(){}[]*?!~^%\n\r\x00\x1b", "\u201c", "\u2019", "$(id)", "`id`", "\n/bin/sh"]


@SETTINGS
@given(st.sampled_from(VALID), st.sampled_from(METAS), st.data())
def test_a_metacharacter_anywhere_in_a_valid_command_is_refused(text: str, meta: str, data: st.DataObject) -> None:
    pos = data.draw(st.integers(0, len(text)))
    bad = text[:pos] + meta + text[pos:]
    assume(bad.strip() not in ("?", "help?"))
    try:
        parse(bad)
    except UserInputError:
        return
    raise AssertionError(f"accepted {bad!r}")


# ---- generated valid commands: the forgiving forms all parse, and render round trips ----------------

_KEYWORDS = {"on", "to", "c", "conc", "concurrency", "with", "and", "the", "please", "of", "for", "host", "last",
             "incident", "inc", "lines", "pid", "process", "job", "jobs", "revision", "rev", "from", "values",
             "over", "in", "at", "vs", "versus"}
HOSTS = st.from_regex(r"[a-z][a-z0-9_-]{0,10}(\.[a-z0-9]{1,5})?", fullmatch=True).filter(
    lambda h: h not in _KEYWORDS and h not in VERBS and not re.fullmatch(r"r?[0-9]+|rev[0-9]+", h)
    and all(h != w.lower() and h != w.lower().lstrip("-") for w in FLAG_WORDS)
    # nor a switch's name (every engine's, aliases too): `on <switch>` turns it on, it is not a host (take_host)
    and (lookup_flag(h) is None or lookup_flag(h).kind != "bool")
    and h not in ("true", "false", "yes", "no", "off", "enable", "disable", "enabled", "disabled"))


@st.composite
def flag_pair(draw: st.DrawFn) -> tuple[str, str]:
    f = draw(st.sampled_from([f for f in FLAGS if f.kind != "str"]))
    if f.kind == "int":
        value = str(draw(st.integers(int(f.minimum or 1), min(int(f.maximum or 100), 100000))))
    elif f.kind == "float":
        value = f"{draw(st.integers(1, 99)) / 100:.2f}"
    elif f.kind == "choice":
        value = draw(st.sampled_from(f.choices))
        value = value.lower() if draw(st.booleans()) else value
    else:
        value = draw(st.sampled_from(["on", "off", "true", "false"]))
    name = draw(st.sampled_from([f.short, f.name, *f.aliases]))
    form = draw(st.sampled_from(["eq", "space", "reverse"]))
    if form == "eq":
        return f.name, f"{name}={value}"
    if form == "reverse" and f.kind in ("int", "float"):
        return f.name, f"{value} {name}"
    return f.name, f"{name} {value}"


def _levels() -> st.SearchStrategy[str]:
    return st.lists(st.integers(1, 256), min_size=1, max_size=8).map(lambda xs: "c=" + ",".join(map(str, xs)))


@st.composite
def valid_texts(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["try", "sweep", "bench", "status", "rollback", "history", "logs", "ids",
                                 "schedule"]))
    host = draw(st.none() | HOSTS)
    on = f" on {host}" if host else ""
    if kind == "schedule":
        when = draw(st.sampled_from(["every day at 02:00", "every monday at 9:30", "every 6h", "hourly",
                                     "every weekday at 7pm", "daily at 23:59", "every 45 minutes"]))
        return f"{when} {draw(st.sampled_from(['bench', 'status', 'sweep steps 1..4', 'try steps 5']))}{on}"
    if kind == "try":
        pairs = [p for _, p in draw(st.lists(flag_pair(), min_size=1, max_size=3, unique_by=lambda p: p[0]))]
        lv = draw(st.none() | _levels())
        return "try " + draw(st.sampled_from([" ", " and ", ", "])).join(pairs) + (f" {lv}" if lv else "") + on
    if kind == "sweep":
        name = draw(st.sampled_from(["steps", "topk", "--speculative-num-draft-tokens", "max-running"]))
        a = draw(st.integers(1, 10))
        b = draw(st.integers(1, 10).filter(lambda x: x != a))
        spec = draw(st.sampled_from([f"{a}..{b}", f"{a},{b}", f"from {a} to {b}", f"{a} {b}"]))
        lv = draw(st.none() | _levels())
        return f"sweep {name} {spec}" + (f" {lv}" if lv else "") + on
    if kind == "bench":
        lv = draw(st.none() | _levels())
        return "bench" + (f" {lv}" if lv else "") + on
    if kind in ("status", "history", "logs"):
        n = draw(st.none() | st.integers(1, 100))
        tail = f" {n}" if n is not None and kind != "status" else ""
        return f"{kind}{on}{tail}"
    if kind == "rollback":
        rev = draw(st.none() | st.integers(1, 9999))
        return f"rollback{on}" + (f" to {rev}" if rev else "")
    verb = draw(st.sampled_from(["cancel", "show", "ack", "mute", "unschedule", "kill-stale", "compare"]))
    a, b = draw(st.integers(2, 99999)), draw(st.integers(1, 99999))
    return {"compare": f"compare {a} {b}", "kill-stale": f"kill-stale{on} {a}"}.get(verb, f"{verb} {a}")


@SETTINGS
@given(valid_texts(), st.sampled_from(["", "@pitcrew ", "/pitcrew ", "<@U0ABC> "]), st.booleans())
def test_generated_commands_parse_and_round_trip(text: str, mention: str, upper: bool) -> None:
    cmd = parse(mention + (text.upper() if upper and "=" not in text else text))
    _check_command(cmd)
