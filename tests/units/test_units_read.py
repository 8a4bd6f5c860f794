"""Reading ExecStart= the way systemd does: continuation, comments, quoting, escapes, prefixes, refusals."""

from __future__ import annotations

import pytest
from units_testkit import SGLANG_ARGV, SGLANG_UNIT, unit_with

from services.engines import get_flag, parse_flags
from services.errors import UnitError
from services.units.editor import flag_diff, read_exec_start, unit_hash


def test_real_sglang_unit_reads_all_flags_across_continuations_and_comments() -> None:
    es = read_exec_start(SGLANG_UNIT)
    assert es.argv == SGLANG_ARGV
    assert es.prefix == ""
    start, end = es.span
    assert SGLANG_UNIT[start:].startswith("ExecStart=/usr/bin/python3")
    assert SGLANG_UNIT[:end].endswith("--port 30000 --host 0.0.0.0")
    assert SGLANG_UNIT[end:].startswith("\nRestart=always")


def test_comment_lines_inside_a_continuation_are_skipped_like_systemd() -> None:
    text = unit_with("/bin/srv \\\n# --not-a-flag 1\n  ; --nor-this 2\n  --real 3")
    assert read_exec_start(text).argv == ("/bin/srv", "--real", "3")


def test_empty_line_ends_the_continuation() -> None:
    text = unit_with("/bin/srv --a 1 \\\n\n--b 2")
    assert read_exec_start(text).argv == ("/bin/srv", "--a", "1")


def test_escaped_backslash_at_end_of_line_is_not_a_continuation() -> None:
    text = unit_with("/bin/srv --a x\\\\\n--b 2")
    assert read_exec_start(text).argv == ("/bin/srv", "--a", "x\\")


def test_backslash_followed_by_blank_is_not_a_continuation() -> None:
    with pytest.raises(UnitError):
        read_exec_start(unit_with("/bin/srv --a 1 \\ \n--b 2"))


def test_quotes_and_c_escapes_are_unquoted() -> None:
    text = unit_with("""/bin/srv "two words" 'single "q"' a"b c"d \\x41\\t\\101 "\\"" ''""")
    assert read_exec_start(text).argv == ("/bin/srv", "two words", 'single "q"', "ab cd", "A\tA", '"', "")


def test_prefixes_are_split_off_the_executable() -> None:
    es = read_exec_start(unit_with("-@+/usr/bin/python3 sglang-server --port 1"))
    assert es.prefix == "-@+"
    assert es.argv == ("/usr/bin/python3", "sglang-server", "--port", "1")
    assert read_exec_start(unit_with("!!/bin/x")).prefix == "!!"


def test_specifiers_and_variables_are_left_untouched() -> None:
    es = read_exec_start(unit_with("/bin/srv --model-path %h/models $EXTRA ${PORT} 100%%"))
    assert es.argv == ("/bin/srv", "--model-path", "%h/models", "$EXTRA", "${PORT}", "100%%")


def test_escaped_semicolon_is_a_literal_word_and_a_lone_one_is_refused() -> None:
    assert read_exec_start(unit_with("/bin/srv \\; x")).argv == ("/bin/srv", ";", "x")
    with pytest.raises(UnitError, match="several commands"):
        read_exec_start(unit_with("/bin/srv a ; /bin/other"))


def test_whitespace_around_the_equals_sign() -> None:
    text = "[Service]\n  ExecStart =  /bin/srv --a 1  \n"
    assert read_exec_start(text).argv == ("/bin/srv", "--a", "1")


def test_exec_start_outside_service_section_is_ignored() -> None:
    text = "[Unit]\nExecStart=/bin/wrong\n[Service]\nExecStart=/bin/right --x 1\n[Install]\nExecStart=/bin/no\n"
    assert read_exec_start(text).argv == ("/bin/right", "--x", "1")


def test_several_exec_start_lines_are_refused_but_the_reset_idiom_is_not() -> None:
    with pytest.raises(UnitError, match="several ExecStart"):
        read_exec_start("[Service]\nExecStart=/bin/a\nExecStart=/bin/b\n")
    assert read_exec_start("[Service]\nExecStart=/bin/a\nExecStart=\nExecStart=/bin/b\n").argv == ("/bin/b",)


@pytest.mark.parametrize(("text", "message"), [
    ("[Service]\nType=simple\n", "no ExecStart"),
    ("[Service]\r\nExecStart=/bin/a\r\n", "CR"),
    ("[Service]\nExecStart=/bin/a\x00\n", "NUL"),
    ("[Service]\nExecStart=/bin/a \"open\n", "unterminated quote"),
    ("[Service]\nExecStart=/bin/a \\q\n", "unknown escape"),
    ("[Service]\nExecStart=/bin/a \\x0\n", "malformed"),
    ("[Service]\nExecStart=/bin/a \\x00\n", "cannot represent"),
    ("[Service]\nExecStart=-\n", "no executable"),
    ("[Service\nExecStart=/bin/a\n", "section header"),
])
def test_refusals_are_unit_errors_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(UnitError, match=message):
        read_exec_start(text)


def test_get_flag_and_parse_flags() -> None:
    argv = ("/bin/srv", "-m", "mod", "--a", "1", "--b=2", "--switch", "--c", "-1", "--last")
    assert get_flag(argv, "--a") == "1"
    assert get_flag(argv, "--b") == "2"
    assert get_flag(argv, "--switch") == "true"
    assert get_flag(argv, "--c") == "-1"
    assert get_flag(argv, "--last") == "true"
    assert get_flag(argv, "--missing") is None
    assert get_flag(("/bin/x", "--sw", "pos"), "--sw", switches=frozenset({"--sw"})) == "true"
    assert get_flag(("/bin/x", "--a", "1", "--a", "2"), "--a") == "2"  # argparse: last wins
    assert [i[0] for i in parse_flags(argv)] == ["--a", "--b", "--switch", "--c", "--last"]


def test_unit_hash_is_sha256_of_the_text() -> None:
    import hashlib

    assert unit_hash(SGLANG_UNIT) == hashlib.sha256(SGLANG_UNIT.encode()).hexdigest()
    assert unit_hash(SGLANG_UNIT) != unit_hash(SGLANG_UNIT + "\n")


def test_flag_diff_lists_changed_added_and_removed_flags() -> None:
    new = SGLANG_UNIT.replace("--speculative-num-steps 3", "--speculative-num-steps 10").replace(
        "    --mem-fraction-static 0.88 \\\n", "").replace("--host 0.0.0.0", "--host 0.0.0.0 --enable-metrics")
    changes = {c.flag: (c.old, c.new) for c in flag_diff(SGLANG_UNIT, new)}
    assert changes == {"--speculative-num-steps": ("3", "10"), "--mem-fraction-static": ("0.88", None),
                       "--enable-metrics": (None, "true")}
    assert all(not c.derived for c in flag_diff(SGLANG_UNIT, new))
    assert flag_diff(SGLANG_UNIT, SGLANG_UNIT) == ()
