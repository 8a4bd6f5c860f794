"""`check_argv` against CPython argparse itself: the sim's SGLang 0.5.9 parser (all 331 flags) is the referee.

For each command line, the first error pitcrew predicts from the `--help` text (plus the parser's value types)
must be the line argparse prints when the server starts, word for word; a line argparse accepts must pass.
"""

from __future__ import annotations

import contextlib
import io
import shlex

import pytest

from services.engines import plain_launch
from services.units import check_argv, parse_help
from simhost.sglang.args import build_parser

BASE = ("/usr/bin/python3 -m sglang.launch_server --model-path /m --tp-size 4 --speculative-algorithm EAGLE "
        "--speculative-num-steps 3 --mem-fraction-static 0.88 --port 30000")


def _cli():  # type: ignore[no-untyped-def]
    parser = build_parser()
    cli = parse_help(parser.format_help(), engine="sglang", version="0.5.9")
    types = {s: getattr(a.type, "__name__", None) for a in parser._actions for s in a.option_strings if a.type}
    return cli.with_types({k: v for k, v in types.items() if v})


def _argparse_says(argv: list[str]) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(argv)
        except SystemExit as e:
            assert e.code == 2
            return err.getvalue().strip().splitlines()[-1]
    return "(accepted)"


@pytest.mark.parametrize("extra", [
    "", "--mem-fraction-static 0.95x", "--speculative-num-stepz 4", "--speculative-algorithm EAGLE4",
    "--port", "--port=abc", "--trust-remote-code=yes", "--cuda-graph-bs 1 2 x", "--cuda-graph-bs",
    "--tp 2", "--mem 0.8", "--enable-metrics", "--kv-cache-dtype fp8", "--schedule-policy priority",
    "--speculative-num-steps=-1", "--context-length 1.5", "--attention-backend fa3", "--attention-backend fa9",
    "--reasoning-parser qwen3", "--tool-call-parser nope", "--max-running-requests 0x10", "--spec 3",
    "--lora-target-modules q_proj all", "--hybrid-kvcache-ratio", "--dtype bfloat16 --dtype half",
    "--json-model-override-args {}", "--speculative-num-steps 4 extra-word",
])
def test_first_error_is_argparse_word_for_word(extra: str) -> None:
    argv = shlex.split(BASE + " " + extra)
    found = plain_launch(argv)
    assert found is not None and (found[0].name, found[1], found[2]) == ("sglang", "/usr/bin/python3", 3)
    problems = [p for p in check_argv(_cli(), argv, 3) if p.severity == "error"]
    mine = f"launch_server.py: error: {problems[0].message}" if problems else "(accepted)"
    assert mine == _argparse_says(argv[3:])


def test_required_flag_missing_is_worded_like_argparse() -> None:
    argv = ["python3", "-m", "sglang.launch_server", "--port", "1"]
    (p,) = check_argv(_cli(), argv, 3)
    assert f"launch_server.py: error: {p.message}" == _argparse_says(argv[3:])


def test_removed_and_deprecated_flags_are_named() -> None:
    cli = _cli()
    argv = shlex.split(BASE + " --enable-ep-moe --hybrid-kvcache-ratio")
    problems = check_argv(cli, argv, 3, removed={"--enable-ep-moe": "0.4.6"})
    texts = [(p.severity, p.message) for p in problems]
    assert ("error", "unrecognized arguments: --enable-ep-moe") in texts
    assert ("note", "--enable-ep-moe was accepted by sglang 0.4.6 on this host and is not by 0.5.9 "
                    "(removed or renamed)") in texts
    assert any(s == "warning" and "--swa-full-tokens-ratio" in m for s, m in texts)


def test_vllm_is_recognised_as_a_seam() -> None:
    found = plain_launch(["/opt/v/bin/vllm", "serve", "m"])
    assert found is not None and (found[0].name, found[1], found[2]) == ("vllm", "/opt/v/bin/vllm", 2)
    assert plain_launch(["/bin/sleep", "1"]) is None


def test_help_with_wrapped_help_texts_reads_the_same_table() -> None:
    """Real SGLang prints a help text under every flag (wrapped, some mentioning other flags): same table."""
    import argparse

    from simhost.sglang.flags_059 import FLAGS_059

    plain = build_parser()
    wordy = argparse.ArgumentParser(prog="launch_server.py")
    for action in plain._actions:
        if not action.option_strings or "--help" in action.option_strings:
            continue
        kw = {"dest": action.dest, "help": f"What {action.dest} does; see also --model-path and -h. " * 3}
        if action.nargs == 0:
            kw["action"] = "store_true"
        else:
            kw.update(type=action.type, choices=action.choices, nargs=action.nargs, metavar=action.metavar)
        wordy.add_argument(*action.option_strings, **kw)  # type: ignore[arg-type]
    a = parse_help(plain.format_help(), engine="sglang", version="0.5.9")
    b = parse_help(wordy.format_help(), engine="sglang", version="0.5.9")
    assert len(b.options) == len(FLAGS_059) == 331
    assert [(o.names, o.takes_value, o.nargs, o.choices) for o in a.options] == \
        [(o.names, o.takes_value, o.nargs, o.choices) for o in b.options]
