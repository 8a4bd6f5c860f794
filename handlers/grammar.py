"""The chat command grammar: text in, one typed `Command` out — forgiving in wording, strict in meaning.

Owns `parse` (and `render`, its inverse: canonical text that parses back to the same command).
Before any word is read, the whole text is checked: one line, plain ASCII, no shell
metacharacters, quotes or NUL, at most `MAX_LEN` characters. Then the first word picks the
command's declaration (`handlers.registry`), whose parser (`handlers.grammar_rules`) reads the
rest. Every refusal is a `UserInputError` (or `UnknownCommand`) whose message
is one or two plain sentences.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from handlers.commands import Command, Help
from handlers.grammar_args import HOST_RE, MAX_CONCURRENCY, MAX_LEVELS, MAX_SWEEP_VALUES, NUM, parse_host
from handlers.registry import BY_WORD, spec_of
from handlers.spec import CommandSpec, Said
from services.engines import lookup_flag
from services.errors import UnknownCommand, UserInputError

__all__ = ["HOST_RE", "MAX_CONCURRENCY", "MAX_LEN", "MAX_LEVELS", "MAX_SWEEP_VALUES", "parse", "parse_host", "render"]

MAX_LEN = 500
_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t._:/=+,#@-")
_MENTION = re.compile(r"^\s*(?:<@[A-Za-z0-9]+(?:\|[A-Za-z0-9._-]*)?>|[@/]pitcrew\b|pitcrew\s*[:,])\s*", re.I)
# Slack turns host-like words into links: <http://gpu-1.lab|gpu-1.lab> or <http://gpu-1.lab>
_SLACK_LINK = re.compile(r"<(?:https?://)([A-Za-z0-9._-]{1,253})/?(?:\|([A-Za-z0-9._-]{1,253}))?>")


def _describe_char(c: str) -> str:
    if c in "\n\r":
        return "a line break"
    if c == "\x00":
        return "a NUL byte"
    if ord(c) < 0x20 or ord(c) == 0x7F:
        return "a control character"
    if c in "\"'\u201c\u201d\u2018\u2019`":
        return "a quote"
    if ord(c) > 0x7F:
        return f"the character '{c}' (only plain ASCII is accepted)"
    return f"'{c}'"


def _sanitize(text: str) -> str:
    if not isinstance(text, str):
        raise UserInputError("A command must be text.")
    text = text.replace("\u00a0", " ")
    text = re.sub(r"(?<=[0-9])[\u2013\u2014](?=[0-9])", "..", text)
    text = re.sub(r"[\u2013\u2014](?=[A-Za-z])", "--", text)
    for c in text:
        if c not in _ALLOWED:
            if c == "?" and text.strip() in ("?", "help?"):
                continue
            hint = " For a limit say 'under', e.g. 'ttft p95 under 500ms'." if c in "<>" or "&lt;" in text else ""
            raise UserInputError(f"That command contains {_describe_char(c)}. pitcrew never accepts shell "
                                 f"characters, quotes, line breaks or NUL bytes in a command.{hint}")
    if len(text) > MAX_LEN:
        raise UserInputError(f"That command is too long (at most {MAX_LEN} characters).")
    return text


def _tokens(text: str) -> list[str]:
    text = re.sub(r"\s*,\s*", ",", text)
    text = re.sub(r"\s*=\s*", "=", text)
    text = re.sub(r"\s*\.\.\s*", "..", text)
    return text.split()


def parse(text: str) -> Command:
    """Parse one chat command. Raises `UserInputError` (or `UnknownCommand`) and nothing else."""
    if isinstance(text, str):
        text = _MENTION.sub("", text, count=1)
        text = _SLACK_LINK.sub(lambda m: m.group(2) or m.group(1), text)
    clean = _sanitize(text)
    if clean.strip() in ("?", "help?"):
        return Help()
    tokens = _tokens(clean)
    if not tokens:
        raise UserInputError("Say a command, or 'help' for the list.")
    return _parse_tokens(tokens)


def render(cmd: Command) -> str:
    """Canonical text for a command; ``parse(render(cmd)) == cmd``."""
    return spec_of(cmd).render(cmd)


class _Grammar:
    """What parsers may ask of the grammar (`handlers.spec.Grammar`)."""

    def spec_for(self, word: str) -> CommandSpec[Any] | None:
        return BY_WORD.get(word)

    def spec_of(self, cmd: Command) -> CommandSpec[Any]:
        return spec_of(cmd)

    def words(self) -> list[str]:
        return list(BY_WORD)

    def parse_words(self, tokens: list[str]) -> Command:
        return _parse_tokens(tokens)

    def render(self, cmd: Command) -> str:
        return render(cmd)


_GRAMMAR = _Grammar()


def _parse_tokens(tokens: list[str]) -> Command:
    verb = tokens[0].lower()
    args = tokens[1:]
    if verb == "kill" and args and args[0].lower() == "stale":
        verb, args = "kill-stale", args[1:]
    spec = BY_WORD.get(verb)
    if spec is None:
        raise _unknown(verb, tokens)
    cmd: Command = spec.parse(Said(verb, args, _GRAMMAR))
    return cmd


def _unknown(verb: str, tokens: list[str]) -> UnknownCommand:
    shown = verb[:40]
    if lookup_flag(verb.partition("=")[0]) is not None or NUM.fullmatch(verb):
        guess = "try " + " ".join(tokens)[:60]
        return UnknownCommand(f"I don't know the command '{shown}'. Did you mean '{guess}'?", suggestion=guess)
    words = [w for w in BY_WORD if len(w) > 2]
    close = difflib.get_close_matches(verb, words, n=1, cutoff=0.6)
    if close:
        return UnknownCommand(f"I don't know the command '{shown}'. Did you mean '{close[0]}'?",
                              suggestion=close[0])
    return UnknownCommand(f"I don't know the command '{shown}'. Say 'help' for the list.")
