"""Reading and editing a systemd unit file's ``ExecStart=`` line, the way systemd parses it.

Owns: finding the one ``ExecStart=`` of the ``[Service]`` section (sections, comments and
continuations read by `services.units.syntax` exactly as ``src/shared/conf-parser.c`` does), its
words and ``-@:+!`` prefix, a token-level rewriter that changes only the words that differ and
keeps every other byte of the file as it was, `flag_diff` (what changed between two units' flags) and
`unit_engine` (the engine a unit file launches).

Words are returned *before* specifier (``%h``) and environment (``$FOO``) expansion: those are left
untouched, so reading and writing back never changes them. Anything the editor cannot handle
safely (several commands, CR line endings, NUL bytes, a changed executable, an edit inside a word
that spans a line break) raises `UnitError` instead of guessing.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from services.engines import FlagChange, detect_engine, parse_flags
from services.errors import UnitError
from services.units.syntax import WS, Line, Logical, check_text, logical_lines, quote_word, split_words

__all__ = [
    "ExecStart",
    "flag_diff",
    "quote_word",
    "read_exec_start",
    "rewrite_exec_start",
    "unit_engine",
    "unit_hash",
]

_PREFIX_CHARS = "-@:+!"


@dataclass(frozen=True)
class ExecStart:
    """The one ``ExecStart=`` of a unit: prefix (``-@:+!``), words, and its span in the text."""

    prefix: str
    argv: tuple[str, ...]
    span: tuple[int, int]  # [start, end) in the text: the key's first char to the end of its last line


@dataclass(frozen=True)
class _Token:
    value: str
    start: int  # offsets in the unit text
    end: int
    line: int  # index into _Region.lines of the line holding the token's first char
    crosses_line: bool



@dataclass(frozen=True)
class _Region:
    exec_start: ExecStart
    lines: tuple[Line, ...]
    tokens: tuple[_Token, ...]


def unit_hash(text: str) -> str:
    """The sha256 hex digest of the unit text (UTF-8): the revision identity."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()




def _find_region(text: str) -> _Region:
    check_text(text)
    section: str | None = None
    found: list[tuple[Logical, int]] = []
    for logical in logical_lines(text):
        joined = "".join(logical.chars)
        lead = len(joined) - len(joined.lstrip(WS))
        stripped = joined.strip(WS)
        if not stripped:
            continue
        if stripped.startswith("["):
            if not stripped.endswith("]"):
                raise UnitError("The unit file has a malformed section header.")
            section = stripped[1:-1]
            continue
        eq = stripped.find("=")
        if eq <= 0 or section != "Service":
            continue
        if stripped[:eq].strip(WS) != "ExecStart":
            continue
        value_start = lead + eq + 1
        while value_start < len(joined) and joined[value_start] in WS:
            value_start += 1
        value = joined[value_start:].rstrip(WS)
        if not value:
            found.clear()  # "ExecStart=" resets the list, as in drop-ins
            continue
        found.append((logical, value_start))
    if not found:
        raise UnitError("The unit file has no ExecStart= in its [Service] section.")
    if len(found) > 1:
        raise UnitError("The unit file has several ExecStart= lines; pitcrew edits only units with one.")
    logical, value_start = found[0]
    joined = "".join(logical.chars)
    value = joined[value_start:].rstrip(WS)
    words = split_words(value)
    if not words:
        raise UnitError("ExecStart= is empty.")
    tokens: list[_Token] = []
    for word, ws, we in words:
        a = value_start + ws
        b = value_start + we - 1
        tokens.append(_Token(word, logical.offsets[a], logical.offsets[b] + 1, logical.line_of[a],
                             logical.line_of[a] != logical.line_of[b]))
    first = tokens[0].value
    k = 0
    while k < len(first) and first[k] in _PREFIX_CHARS:
        k += 1
    prefix, exe = first[:k], first[k:]
    if not exe:
        raise UnitError("ExecStart= names no executable.")
    argv = (exe, *(t.value for t in tokens[1:]))
    content_lines = [ln for ln in logical.lines if not ln.comment]
    span = (logical.offsets[0], content_lines[-1].end)
    return _Region(ExecStart(prefix, argv, span), tuple(logical.lines), tuple(tokens))


def read_exec_start(text: str) -> ExecStart:
    """The unit's single ``ExecStart=``: prefix, words (specifiers untouched) and span."""
    return _find_region(text).exec_start




def rewrite_exec_start(text: str, new_argv: Sequence[str]) -> str:
    """Return ``text`` with ExecStart='s words changed to ``new_argv``; nothing else moves.

    Words that stay keep their exact bytes; a changed word is replaced where it stood; a removed
    word is cut with the blank before it (a line left without words is dropped); added words go
    after the word that precedes them, on its line — or, for words appended at the end of a
    multi-line ExecStart=, on new continuation lines indented like the last one.
    """
    region = _find_region(text)
    old = list(region.exec_start.argv)
    new = list(new_argv)
    if not new:
        raise UnitError("ExecStart= cannot be emptied.")
    if new[0] != old[0]:
        raise UnitError("pitcrew changes only flags; the executable of ExecStart= stays as it is.")
    if new == old:
        return text
    tokens = region.tokens
    # per line: list of (start, end, replacement) edits; appended words handled separately
    edits: list[tuple[int, int, str]] = []
    removed: set[int] = set()
    appended: list[str] = []
    sm = difflib.SequenceMatcher(a=old[1:], b=new[1:], autojunk=False)
    for tag, a1, a2, b1, b2 in sm.get_opcodes():
        if tag == "equal":
            continue
        i1, i2, j1, j2 = a1 + 1, a2 + 1, b1 + 1, b2 + 1
        for k in range(i1, i2):
            if tokens[k].crosses_line:
                raise UnitError("A word to change in ExecStart= spans a line break; edit it by hand.")
        repl = [quote_word(w) for w in new[j1:j2]]
        if tag == "replace" and i2 - i1 == j2 - j1:
            for k, r, w in zip(range(i1, i2), repl, new[j1:j2], strict=True):
                raw = text[tokens[k].start:tokens[k].end]
                edits.append((tokens[k].start, tokens[k].end, _requote(raw, old[k], w) or r))
            continue
        if i2 > i1:
            # replace the first old word with all new words, remove the rest
            if repl:
                edits.append((tokens[i1].start, tokens[i1].end, " ".join(repl)))
                first_removed = i1 + 1
            else:
                first_removed = i1
            removed.update(range(first_removed, i2))
        elif i1 == len(old):
            appended.extend(repl)
        else:
            prev = tokens[i1 - 1]
            edits.append((prev.end, prev.end, " " + " ".join(repl)))
    return _apply(text, region, edits, removed, appended)


Edit = tuple[int, int, str]


def _requote(raw: str, old: str, new: str) -> str | None:
    """``new`` in the quotes ``raw`` used for ``old`` (``'{"a": 3}'`` -> ``'{"a": 5}'``), or None.

    Only for a word wholly inside one pair of quotes with no escapes, and a new word that needs
    none: then the unit keeps its own quoting and every byte of the word but the changed ones.
    """
    if len(raw) < 2 or raw[0] not in "'\"" or raw[-1] != raw[0] or raw[1:-1] != old or "\\" in raw:
        return None
    q = raw[0]
    if q in new or "\\" in new or "%" in new or "$" in new or any(ord(c) < 0x20 or ord(c) == 0x7F for c in new):
        return None
    return q + new + q


def _apply(text: str, region: _Region, edits: list[Edit], removed: set[int], appended: list[str]) -> str:
    """Lay out the word edits: drop removed words (and lines left empty), fix continuations, append words."""
    kept = [t for i, t in enumerate(region.tokens) if i not in removed]
    dropped_lines = _dropped_lines(region, kept)
    edits = edits + _removal_edits(text, region, removed, dropped_lines)
    lines = region.lines
    content = [i for i, ln in enumerate(lines) if not ln.comment and i not in dropped_lines]
    line_edits: list[Edit] = [(lines[li].start, lines[li].newline_end, "") for li in dropped_lines]
    # continuation markers: every kept content line but the last must continue, the last must not
    multi = len(content) > 1 or bool(appended and len([ln for ln in lines if not ln.comment]) > 1)
    line_edits += _continuation_edits(text, region, content, must_continue_last=bool(appended) and multi)
    if appended:
        line_edits.append(_append_edit(text, lines[content[-1]], kept, appended, multi))
    return _splice(text, edits + line_edits)


def _dropped_lines(region: _Region, kept: list[_Token]) -> set[int]:
    """Continuation lines whose every word is removed (never the first line)."""
    lines = region.lines
    with_tokens = {tok.line for tok in region.tokens}
    return {li for li in with_tokens
            if li != 0 and not any(t.start <= lines[li].end and t.end > lines[li].start for t in kept)}


def _removal_edits(text: str, region: _Region, removed: set[int], dropped_lines: set[int]) -> list[Edit]:
    """Cut each run of adjacent removed words on a kept line, with the blanks that separated it."""
    tokens, lines = region.tokens, region.lines
    runs: list[list[int]] = []
    for idx in sorted(removed):
        tok = tokens[idx]
        if tok.line in dropped_lines:
            continue
        if tok.crosses_line:
            raise UnitError("A word to remove from ExecStart= spans a line break; edit it by hand.")
        if runs and runs[-1][-1] == idx - 1 and tokens[runs[-1][-1]].line == tok.line:
            runs[-1].append(idx)
        else:
            runs.append([idx])
    out: list[Edit] = []
    for run in runs:
        first_tok, last_tok = tokens[run[0]], tokens[run[-1]]
        line = lines[first_tok.line]
        cut = first_tok.start
        while cut > line.start and text[cut - 1] in " \t":
            cut -= 1
        if cut == line.start:
            # first words on their line: cut the blanks after them instead
            end = last_tok.end
            while end < line.end and text[end] in " \t":
                end += 1
            out.append((first_tok.start, end, ""))
        else:
            out.append((cut, last_tok.end, ""))
    return out


def _continuation_edits(text: str, region: _Region, content: list[int], *, must_continue_last: bool) -> list[Edit]:
    out: list[Edit] = []
    for li in content:
        ln = region.lines[li]
        must_continue = li != content[-1] or must_continue_last
        if ln.continued and not must_continue:
            cut = ln.end - 1
            while cut > ln.start and text[cut - 1] in " \t":
                cut -= 1
            out.append((cut, ln.end, ""))
        elif not ln.continued and must_continue:
            out.append((ln.end, ln.end, " \\"))
    return out


def _append_edit(text: str, last: Line, kept: list[_Token], appended: list[str], multi: bool) -> Edit:
    """New words: one `--flag value` group per continuation line when the unit is laid out that way."""
    if not multi:
        last_tok_end = max(t.end for t in kept)
        return (last_tok_end, last_tok_end, " " + " ".join(appended))
    body = text[last.start:last.end]
    indent = body[:len(body) - len(body.lstrip(" \t"))] or "    "
    groups: list[list[str]] = []
    for w in appended:
        if w.startswith("--") or not groups:
            groups.append([w])
        else:
            groups[-1].append(w)
    chunk = " \\\n".join(indent + " ".join(g) for g in groups)
    return (last.end, last.end, "\n" + chunk)


def _splice(text: str, edits: list[Edit]) -> str:
    out: list[str] = []
    pos = 0
    for start, end, repl in sorted(edits, key=lambda e: (e[0], e[1])):
        if start < pos:
            raise UnitError("pitcrew could not lay out this ExecStart= edit safely; edit it by hand.")
        out.append(text[pos:start])
        out.append(repl)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _flag_map(argv: Sequence[str], switches: frozenset[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for flag, value, _, _ in parse_flags(argv, switches):
        out[flag] = "true" if value is None else value
    return out


def flag_diff(old_text: str, new_text: str, switches: frozenset[str] = frozenset()) -> tuple[FlagChange, ...]:
    """The flags whose values differ between two units' ExecStart= (in the new unit's order)."""
    old = _flag_map(read_exec_start(old_text).argv, switches)
    new = _flag_map(read_exec_start(new_text).argv, switches)
    changes: list[FlagChange] = []
    for flag, value in new.items():
        if old.get(flag) != value:
            changes.append(FlagChange(flag, old.get(flag), value))
    for flag, value in old.items():
        if flag not in new:
            changes.append(FlagChange(flag, value, None))
    return tuple(changes)


def unit_engine(text: str) -> str:
    """The name of the engine a unit file launches (`services.engines.detect_engine`); ``unknown`` when its
    ExecStart= cannot be read."""
    try:
        return detect_engine(read_exec_start(text).argv)
    except UnitError:
        return "unknown"
