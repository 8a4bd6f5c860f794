"""systemd's unit-file syntax, as `src/shared/conf-parser.c` and `extract_first_word` read it.

Owns the low layer of the unit editor: physical lines, backslash continuation (comment lines
inside a continuation are skipped, an empty line ends it), C escapes, word splitting of an
``ExecStart=`` value with ``EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE`` semantics, and `quote_word`, its
inverse. `services.units.editor` builds the reader and the rewriter on top of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.errors import UnitError

__all__ = ["WS", "Line", "Logical", "check_text", "logical_lines", "quote_word", "split_words"]

WS = " \t\n\r"
_SAFE_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:/=+,@%$-")
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                   "\\": "\\", '"': '"', "'": "'", "s": " "}


@dataclass(frozen=True)
class Line:
    """One physical line of the unit text (offsets into the text)."""

    start: int  # offset of the first char of the physical line
    end: int  # offset of the newline (or end of text)
    newline_end: int  # offset just past the newline
    comment: bool
    continued: bool  # ends with an unescaped backslash (the continuation marker)


def check_text(text: str) -> None:
    """Refuse text systemd would read differently from us (NUL bytes, CR line endings)."""
    if "\x00" in text:
        raise UnitError("The unit file contains a NUL byte; pitcrew will not edit it.")
    if "\r" in text:
        raise UnitError("The unit file has CR (Windows or old Mac) line endings; pitcrew will not edit it.")


def _physical_lines(text: str) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    pos = 0
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        if nl < 0:
            out.append((pos, n, n))
            break
        out.append((pos, nl, nl + 1))
        pos = nl + 1
    return out


def _ends_escaped(s: str) -> bool:
    escaped = False
    for ch in s:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
    return escaped


@dataclass
class Logical:
    """One logical line: its physical lines and its joined characters with their file offsets."""

    lines: list[Line]
    chars: list[str]
    offsets: list[int]  # file offset of every char of the joined logical line
    line_of: list[int]  # index into lines of every char


def logical_lines(text: str) -> list[Logical]:
    """Join physical lines as conf-parser.c does: comment lines skipped, trailing ``\\`` -> space."""
    result: list[Logical] = []
    current: Logical | None = None
    first = True
    for start, end, nl_end in _physical_lines(text):
        body_start = start
        if first:
            first = False
            if text.startswith("\ufeff", start):
                body_start = start + 1
        raw = text[body_start:end]
        stripped = raw.lstrip(" \t\n\r")
        if stripped and stripped[0] in "#;":
            if current is not None:
                current.lines.append(Line(start, end, nl_end, comment=True, continued=False))
            continue
        continued = _ends_escaped(raw)
        if current is None:
            current = Logical([], [], [], [])
        idx = len(current.lines)
        current.lines.append(Line(start, end, nl_end, comment=False, continued=continued))
        for i, ch in enumerate(raw):
            off = body_start + i
            if continued and off == end - 1:
                ch = " "
            current.chars.append(ch)
            current.offsets.append(off)
            current.line_of.append(idx)
        if not continued:
            result.append(current)
            current = None
    if current is not None:
        result.append(current)
    return result


def _cunescape_one(s: str, i: int) -> tuple[str, int]:
    """Decode the escape whose letter is at ``s[i]``; return (char, next index) or raise."""
    if i >= len(s):
        raise UnitError("ExecStart= ends with a lone backslash.")
    c = s[i]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], i + 1
    width = {"x": 2, "u": 4, "U": 8}.get(c)
    if width is not None:
        digits = s[i + 1:i + 1 + width]
        if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise UnitError(f"ExecStart= has a malformed \\{c} escape.")
        code = int(digits, 16)
        if code == 0 or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise UnitError(f"ExecStart= has an escape pitcrew cannot represent (\\{c}{digits}).")
        return chr(code), i + 1 + width
    if c in "01234567":
        digits = s[i:i + 3]
        if len(digits) != 3 or any(d not in "01234567" for d in digits):
            raise UnitError("ExecStart= has a malformed octal escape.")
        code = int(digits, 8)
        if code == 0:
            raise UnitError("ExecStart= has an escaped NUL byte.")
        return chr(code), i + 3
    raise UnitError(f"ExecStart= has an unknown escape \\{c}; systemd would refuse it too.")


def split_words(value: str) -> list[tuple[str, int, int]]:
    """systemd's word splitting of an ExecStart= value: (word, start, end) in ``value``."""
    words: list[tuple[str, int, int]] = []
    i = 0
    n = len(value)
    while True:
        while i < n and value[i] in WS:
            i += 1
        if i >= n:
            return words
        start = i
        if value[i] == ";" and (i + 1 == n or value[i + 1] in WS):
            raise UnitError("ExecStart= holds several commands separated by ';'; pitcrew edits only one.")
        if value.startswith("\\;", i) and (i + 2 == n or value[i + 2] in WS):
            words.append((";", start, i + 2))
            i += 2
            continue
        out: list[str] = []
        quote: str | None = None
        while i < n:
            c = value[i]
            if quote is None and c in WS:
                break
            if c == "\\":
                ch, i = _cunescape_one(value, i + 1)
                out.append(ch)
                continue
            if quote is None and c in "'\"":
                quote = c
            elif quote is not None and c == quote:
                quote = None
            else:
                out.append(c)
            i += 1
        if quote is not None:
            raise UnitError("ExecStart= has an unterminated quote.")
        words.append(("".join(out), start, i))


def quote_word(word: str) -> str:
    """Render one word for ``ExecStart=`` so systemd reads it back unchanged (before expansion)."""
    if "\x00" in word:
        raise UnitError("A word for ExecStart= cannot contain a NUL byte.")
    if word and all(c in _SAFE_WORD for c in word) and word != ";":
        return word
    out = ['"']
    for c in word:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)
