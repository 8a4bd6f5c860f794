"""Rewriting ExecStart= flags: only the changed words move, layout is kept, unsafe edits are refused."""

from __future__ import annotations

import difflib

import pytest
from units_testkit import ONE_LINE_UNIT, SGLANG_UNIT, unit_with

from services.engines.sglang.flags import apply_changes
from services.errors import UnitError
from services.units.editor import read_exec_start, rewrite_exec_start


def _changed_lines(old: str, new: str) -> list[str]:
    return [d for d in difflib.ndiff(old.splitlines(), new.splitlines()) if d[:1] in "+-"]


def test_same_argv_returns_identical_text() -> None:
    assert rewrite_exec_start(SGLANG_UNIT, read_exec_start(SGLANG_UNIT).argv) is SGLANG_UNIT


def test_try_10_steps_changes_steps_and_the_pinned_draft_tokens_only() -> None:
    plan = apply_changes(read_exec_start(SGLANG_UNIT).argv, {"steps": "10"})
    new = rewrite_exec_start(SGLANG_UNIT, plan.new_argv)
    assert _changed_lines(SGLANG_UNIT, new) == [
        "-     --speculative-num-steps 3 \\", "+     --speculative-num-steps 10 \\",
        "-     --speculative-num-draft-tokens 4 \\", "+     --speculative-num-draft-tokens 11 \\",
    ]
    assert read_exec_start(new).argv == plan.new_argv
    assert [(c.flag, c.old, c.new, c.derived) for c in plan.diff] == [
        ("--speculative-num-steps", "3", "10", False), ("--speculative-num-draft-tokens", "4", "11", True)]


def test_removing_a_flag_on_its_own_line_drops_the_line() -> None:
    plan = apply_changes(read_exec_start(SGLANG_UNIT).argv, {"mem": None})
    new = rewrite_exec_start(SGLANG_UNIT, plan.new_argv)
    assert _changed_lines(SGLANG_UNIT, new) == ["-     --mem-fraction-static 0.88 \\"]
    assert read_exec_start(new).argv == plan.new_argv


def test_removing_the_words_of_the_last_line_moves_the_end_of_the_continuation() -> None:
    argv = read_exec_start(SGLANG_UNIT).argv[:-4]  # drop --port 30000 --host 0.0.0.0
    new = rewrite_exec_start(SGLANG_UNIT, argv)
    assert "    --mem-fraction-static 0.88\nRestart=always" in new
    assert read_exec_start(new).argv == argv
    assert new.endswith(SGLANG_UNIT[SGLANG_UNIT.index("Restart=always"):])


def test_removing_one_word_of_a_shared_line_keeps_the_rest_of_the_line() -> None:
    argv = read_exec_start(SGLANG_UNIT).argv
    new_argv = argv[:-4] + argv[-2:]  # drop --port 30000, keep --host 0.0.0.0
    new = rewrite_exec_start(SGLANG_UNIT, new_argv)
    assert _changed_lines(SGLANG_UNIT, new) == ["-     --port 30000 --host 0.0.0.0", "+     --host 0.0.0.0"]


def test_appended_flags_go_on_new_continuation_lines_of_a_multi_line_exec_start() -> None:
    plan = apply_changes(read_exec_start(SGLANG_UNIT).argv, {"cuda-graph-max-bs": "16", "no-cuda-graph": "on"})
    new = rewrite_exec_start(SGLANG_UNIT, plan.new_argv)
    assert _changed_lines(SGLANG_UNIT, new) == [
        "-     --port 30000 --host 0.0.0.0", "+     --port 30000 --host 0.0.0.0 \\",
        "+     --cuda-graph-max-bs 16 \\", "+     --disable-cuda-graph"]
    assert read_exec_start(new).argv == plan.new_argv


def test_single_line_exec_start_stays_single_line() -> None:
    plan = apply_changes(read_exec_start(ONE_LINE_UNIT).argv, {"steps": "5", "mem": "0.8"})
    new = rewrite_exec_start(ONE_LINE_UNIT, plan.new_argv)
    assert len(new.splitlines()) == len(ONE_LINE_UNIT.splitlines())
    assert "--speculative-num-steps 5 --speculative-eagle-topk 1 --speculative-num-draft-tokens=6 --port 30000 " \
           "--mem-fraction-static 0.8\n" in new
    assert read_exec_start(new).argv == plan.new_argv


def test_inserted_words_go_after_the_word_before_them() -> None:
    text = unit_with("/bin/srv --a 1 \\\n    --b 2")
    new = rewrite_exec_start(text, ("/bin/srv", "--a", "1", "--x", "9", "--b", "2"))
    assert "ExecStart=/bin/srv --a 1 --x 9 \\\n    --b 2\n" in new


def test_values_needing_quotes_are_quoted_and_read_back_unchanged() -> None:
    text = unit_with("/bin/srv --name old")
    for value in ("two words", 'q"uote', "back\\slash", "tab\there", "new\nline", ";", "", "ünï"):
        new = rewrite_exec_start(text, ("/bin/srv", "--name", value))
        assert read_exec_start(new).argv == ("/bin/srv", "--name", value), value
        assert new.count("\n") == text.count("\n")


def test_a_quoted_word_that_stays_keeps_its_quoting() -> None:
    text = unit_with("""/bin/srv --title "my server" --port 1""")
    new = rewrite_exec_start(text, ("/bin/srv", "--title", "my server", "--port", "2"))
    assert 'ExecStart=/bin/srv --title "my server" --port 2\n' in new


def test_prefix_and_specifiers_survive_an_edit() -> None:
    text = unit_with("-/usr/bin/python3 -m srv --model-path %h/m $OPTS --port 1")
    new = rewrite_exec_start(text, ("/usr/bin/python3", "-m", "srv", "--model-path", "%h/m", "$OPTS", "--port", "2"))
    assert "ExecStart=-/usr/bin/python3 -m srv --model-path %h/m $OPTS --port 2\n" in new
    assert read_exec_start(new).prefix == "-"


def test_changing_the_executable_is_refused() -> None:
    with pytest.raises(UnitError, match="executable"):
        rewrite_exec_start(SGLANG_UNIT, ("/bin/sh", "-c", "evil"))
    with pytest.raises(UnitError, match="emptied"):
        rewrite_exec_start(SGLANG_UNIT, ())


def test_editing_a_word_that_spans_a_line_break_is_refused_but_keeping_it_works() -> None:
    text = unit_with('/bin/srv --title "my \\\n  server" --port 1')
    argv = read_exec_start(text).argv
    assert argv == ("/bin/srv", "--title", "my    server", "--port", "1")
    assert read_exec_start(rewrite_exec_start(text, (*argv[:-1], "2"))).argv == (*argv[:-1], "2")
    with pytest.raises(UnitError, match="spans a line break"):
        rewrite_exec_start(text, ("/bin/srv", "--title", "x", "--port", "1"))


def test_everything_outside_exec_start_is_byte_identical() -> None:
    plan = apply_changes(read_exec_start(SGLANG_UNIT).argv, {"steps": "7", "mem": "0.9", "tp": "8"})
    new = rewrite_exec_start(SGLANG_UNIT, plan.new_argv)
    start, end = read_exec_start(SGLANG_UNIT).span
    nstart, nend = read_exec_start(new).span
    assert new[:nstart] == SGLANG_UNIT[:start]
    assert new[nend:] == SGLANG_UNIT[end:]
    assert "# speculative decoding with the MTP draft heads\n" in new and "    ; memory\n" in new
