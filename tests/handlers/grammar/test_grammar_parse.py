"""The chat grammar: every command form, forgiving wording, strict meaning, clear refusals."""

from __future__ import annotations

import pytest

from handlers.commands import (
    Ack,
    Again,
    Bench,
    Cancel,
    Command,
    Compare,
    Confirm,
    Deny,
    Diff,
    Help,
    History,
    KillStale,
    Logs,
    Mute,
    Queue,
    Rollback,
    Schedule,
    Schedules,
    ScheduleSpec,
    Show,
    Status,
    Sweep,
    Try,
    Unschedule,
)
from handlers.grammar import parse, render
from services.errors import UnknownCommand, UserInputError

STEPS = "--speculative-num-steps"
MEM = "--mem-fraction-static"

EXAMPLES: list[tuple[str, Command]] = [
    ("try 10 steps", Try(((STEPS, "10"),))),
    ("try steps=10 mem=0.85 on gpu-2", Try(((STEPS, "10"), (MEM, "0.85")), host="gpu-2")),
    ("try --speculative-num-steps 10", Try(((STEPS, "10"),))),
    ("try --speculative-num-steps=10", Try(((STEPS, "10"),))),
    ("try steps 10", Try(((STEPS, "10"),))),
    ("Try Steps = 10 , mem 0.8 on GPU-2", Try(((STEPS, "10"), (MEM, "0.8")), host="gpu-2")),
    ("try 10 steps and mem 0.85", Try(((STEPS, "10"), (MEM, "0.85")))),
    ("try algo=eagle3 topk 1", Try((("--speculative-algorithm", "EAGLE3"), ("--speculative-eagle-topk", "1")))),
    ("try no-cuda-graph", Try((("--disable-cuda-graph", "true"),))),
    ("try no-cuda-graph off on gpu-1", Try((("--disable-cuda-graph", "false"),), host="gpu-1")),
    # `on <switch>` turns it on; `on <other flag word>` is a host (pp: vLLM's --pipeline-parallel-size, tp: SGLang's)
    ("try on no-cuda-graph", Try((("--disable-cuda-graph", "true"),))),
    ("try steps 5 on pp", Try(((STEPS, "5"),), host="pp")),
    ("try steps 5 on tp", Try(((STEPS, "5"),), host="tp")),
    ("sweep steps 1..2 on pp", Sweep(STEPS, ("1", "2"), host="pp")),
    # right after a switch, `on` is its value when another flag follows, and a host name otherwise
    ("try no-cuda-graph on schedule lpm", Try((("--disable-cuda-graph", "true"), ("--schedule-policy", "lpm")))),
    ("try no-cuda-graph on --speculative-algorithm EAGLE",
     Try((("--disable-cuda-graph", "true"), ("--speculative-algorithm", "EAGLE")))),
    ("try no-cuda-graph on gpu-2", Try((("--disable-cuda-graph", "true"),), host="gpu-2")),
    ("try steps 4 c=1,4", Try(((STEPS, "4"),), concurrency=(1, 4))),
    ("set tp 8", Try((("--tp-size", "8"),))),
    ("sweep steps 1..5", Sweep(STEPS, ("1", "2", "3", "4", "5"))),
    ("sweep steps 1,2,4,8 c=1,8", Sweep(STEPS, ("1", "2", "4", "8"), concurrency=(1, 8))),
    ("sweep steps 1 .. 3 on gpu-1", Sweep(STEPS, ("1", "2", "3"), host="gpu-1")),
    ("sweep steps from 2 to 4", Sweep(STEPS, ("2", "3", "4"))),
    ("sweep 1..3 steps", Sweep(STEPS, ("1", "2", "3"))),
    ("sweep steps=5..3", Sweep(STEPS, ("5", "4", "3"))),
    ("sweep mem 0.8,0.85,0.9 at c=1", Sweep(MEM, ("0.8", "0.85", "0.9"), concurrency=(1,))),
    ("sweep steps 1 2 4", Sweep(STEPS, ("1", "2", "4"))),
    ("bench", Bench()),
    ("bench c=1,4,16", Bench(concurrency=(1, 4, 16))),
    ("benchmark concurrency 1,2 on gpu-3", Bench(concurrency=(1, 2), host="gpu-3")),
    ("bench gpu-1", Bench(host="gpu-1")),
    ("status", Status()),
    ("status gpu-1", Status("gpu-1")),
    ("status of gpu-1", Status("gpu-1")),
    ("queue", Queue()),
    ("cancel 42", Cancel(42)),
    ("cancel job #42", Cancel(42)),
    ("rollback", Rollback()),
    ("rollback gpu-1", Rollback("gpu-1")),
    ("rollback gpu-1 to 3", Rollback("gpu-1", 3)),
    ("rollback to revision 7", Rollback(None, 7)),
    ("revert on gpu-1 to r2", Rollback("gpu-1", 2)),
    ("show 42", Show(42)),
    ("show job 42", Show(42)),
    ("compare 41 42", Compare(41, 42)),
    ("compare #41 vs #42", Compare(41, 42)),
    ("history", History()),
    ("history gpu-1 20", History("gpu-1", 20)),
    ("history 5", History(None, 5)),
    ("diff", Diff()),
    ("diff gpu-1", Diff("gpu-1")),
    ("help", Help()),
    ("help try", Help("try")),
    ("help benchmark", Help("bench")),
    ("help flags", Help("flags")),
    ("help steps", Help(STEPS)),
    ("?", Help()),
    ("yes", Confirm()),
    ("y", Confirm()),
    ("confirm ab12", Confirm("ab12")),
    ("no", Deny()),
    ("kill-stale gpu-1 48213", KillStale("gpu-1", 48213)),
    ("kill stale pid 48213 on gpu-1", KillStale("gpu-1", 48213)),
    ("kill-stale 48213", KillStale(None, 48213)),
    ("mute 7", Mute(7, 60)),
    ("mute incident 7 for 2h", Mute(7, 120)),
    ("mute 7 90 minutes", Mute(7, 90)),
    ("mute 7 1d", Mute(7, 1440)),
    ("ack 7", Ack(7)),
    ("ack incident #7", Ack(7)),
    ("logs", Logs()),
    ("logs gpu-1 50", Logs("gpu-1", None, 50)),
    ("logs incident 7", Logs(None, 7, None)),
    ("logs 20", Logs(None, None, 20)),
    ("again", Again()),
    ("again with 12", Again(value="12")),
    ("again 12", Again(value="12")),
    ("again with steps 12", Again(changes=((STEPS, "12"),))),
    ("again steps=6 mem=0.85", Again(changes=((STEPS, "6"), (MEM, "0.85")))),
    ("schedules", Schedules()),
    ("unschedule 3", Unschedule(3)),
    ("@pitcrew status", Status()),
    ("/pitcrew try 10 steps", Try(((STEPS, "10"),))),
    ("<@U0ABC123> queue", Queue()),
    ("pitcrew: queue", Queue()),
    ("status <http://gpu-1.lab|gpu-1.lab>", Status("gpu-1.lab")),
    ("try 4 steps on <http://gpu-2.example.com>", Try(((STEPS, "4"),), host="gpu-2.example.com")),
    ("  STATUS   GPU-1  ", Status("gpu-1")),
    ("try \u2014speculative-num-steps 4", Try(((STEPS, "4"),))),
    ("sweep steps 1\u20133", Sweep(STEPS, ("1", "2", "3"))),
]


@pytest.mark.parametrize(("text", "expected"), EXAMPLES, ids=[t for t, _ in EXAMPLES])
def test_examples_parse_and_render_round_trips(text: str, expected: Command) -> None:
    got = parse(text)
    assert got == expected
    assert parse(render(got)) == got


@pytest.mark.parametrize(("text", "spec", "command"), [
    ("every day at 02:00 sweep steps 1..5 on gpu-1", ScheduleSpec("cron", hour=2, minute=0),
     Sweep(STEPS, ("1", "2", "3", "4", "5"), host="gpu-1")),
    ("every monday at 09:30 bench on gpu-1", ScheduleSpec("cron", hour=9, minute=30, day_of_week="mon"),
     Bench(host="gpu-1")),
    ("every 6h bench", ScheduleSpec("interval", every_seconds=21600), Bench()),
    ("every 30 minutes status gpu-2", ScheduleSpec("interval", every_seconds=1800), Status("gpu-2")),
    ("every weekday at 8am bench c=1", ScheduleSpec("cron", hour=8, minute=0, day_of_week="mon-fri"),
     Bench(concurrency=(1,))),
    ("every sat,sun at 11:15pm try steps 4", ScheduleSpec("cron", hour=23, minute=15, day_of_week="sat,sun"),
     Try(((STEPS, "4"),))),
    ("daily at 2:05 bench", ScheduleSpec("cron", hour=2, minute=5), Bench()),
    ("hourly status", ScheduleSpec("interval", every_seconds=3600), Status()),
    ("every 2 days bench", ScheduleSpec("interval", every_seconds=172800), Bench()),
])
def test_schedules(text: str, spec: ScheduleSpec, command: Command) -> None:
    got = parse(text)
    assert isinstance(got, Schedule)
    assert got.cron == spec
    assert got.command == command
    assert parse(got.command_text) == command
    assert parse(render(got)) == got


def test_schedule_spec_helpers() -> None:
    spec = ScheduleSpec("cron", hour=9, minute=30, day_of_week="mon")
    assert spec.describe() == "every mon at 09:30"
    assert spec.cron_kwargs() == {"hour": 9, "minute": 30, "day_of_week": "mon"}
    assert ScheduleSpec("interval", every_seconds=5400).describe() == "every 90m"


@pytest.mark.parametrize("text", [
    "try steps 10; rm -rf /", "try steps=$(reboot)", "status gpu-1 && reboot", "try steps `id`",
    "try steps 10 | tee", "try steps 10 > /etc/passwd", "try 'steps' 10", 'try "steps" 10',
    "try steps 10\nrollback", "try steps 10\rx", "status\x00", "try steps 10\\", "status gpu-1 *",
    "bench (c=1)", "try steps {1}", "try ~steps", "try steps 10!", "status gpu\u20101", "try st\u00e9ps 1",
    "status %h", "try steps 10 \u201con\u201d",
])
def test_shell_metacharacters_anywhere_are_refused(text: str) -> None:
    with pytest.raises(UserInputError, match="never accepts shell characters"):
        parse(text)


@pytest.mark.parametrize(("text", "message"), [
    ("", "Say a command"),
    ("   ", "Say a command"),
    ("x" * 501, "too long"),
    ("try", "Say what to try"),
    ("try steps", "Give a value for steps"),
    ("try steps 99", "from 1 to 16"),
    ("try mem 1.2", "between 0 and 1"),
    ("try stpes 10", "Did you mean 'steps'"),
    ("try 10 stpes", "Did you mean 'steps'"),
    ("try 10", "can't tell which flag"),
    ("try steps=10 steps=4", "given twice"),
    ("try steps 4 on Bad_Host!", "never accepts"),
    ("try steps 4 on -gpu", "not a valid host name"),
    ("try steps 4 on gpu..1", "not a valid host name"),
    ("status " + "a" * 64, "not a valid host name"),
    ("try steps 4 on gpu-1 on gpu-2", "one host"),
    ("try algo=eagel", "Did you mean EAGLE"),
    ("sweep steps 1..13", "at most 12"),
    ("sweep steps 1,2,3,4,5,6,7,8,9,10,11,12,13", "at most 12"),
    ("sweep steps 1..999999999", "at most 12"),
    ("sweep steps 0..3", "from 1 to 16"),
    ("sweep steps 4", "at least two"),
    ("sweep mem 0.8..0.9", "whole-number"),
    ("sweep 1..5", "which flag"),
    ("sweep stpes 1..5", "Did you mean 'steps'"),
    ("bench c=0", "from 1 to 256"),
    ("bench c=257", "from 1 to 256"),
    ("bench c=1,2,3,4,5,6,7,8,9", "At most 8"),
    ("bench c=x", "must be a number"),
    ("bench c=1 c=2", "once"),
    ("status gpu-1 gpu-2", "at most a host"),
    ("queue now", "takes nothing"),
    ("cancel", "Say which job"),
    ("cancel 1 2", "Say which job"),
    ("cancel abc", "must be a number"),
    ("cancel 0", "from 1"),
    ("cancel 99999999999", "must be a number"),
    ("compare 1", "which two jobs"),
    ("rollback gpu-1 to 3 4", "one revision"),
    ("history gpu-1 500", "from 1 to 100"),
    ("logs gpu-1 1000", "from 1 to 500"),
    ("logs gpu-1 incident 3", "not both"),
    ("kill-stale gpu-1", "Say which process"),
    ("kill-stale gpu-1 1", "from 2"),
    ("mute", "Say which incident"),
    ("mute 7 for ever", "Say how long"),
    ("mute 7 30d", "1 minute to 7 days"),
    ("help nonsense", "no help on"),
    ("help statsu", "Did you mean 'help status'"),
    ("yes a b", "Say just 'yes'"),
    ("every day bench", "Say the time"),
    ("every day at 25:00 bench", "00:00 to 23:59"),
    ("every day at 13pm bench", "1 to 12"),
    ("every day at noonish bench", "not a time of day"),
    ("every 5m bench", "10 minutes"),
    ("every 40d bench", "30 days"),
    ("every fortnight bench", "Say when"),
    ("every day at 02:00", "Say what to run"),
    ("every day at 02:00 rollback", "can be scheduled"),
    ("every 6h every 6h bench", "can be scheduled"),
])
def test_refusals_are_plain_sentences(text: str, message: str) -> None:
    with pytest.raises(UserInputError, match=message) as err:
        parse(text)
    msg = str(err.value)
    assert msg.endswith((".", "?")) and "\n" not in msg and len(msg) < 300
    assert msg.count(". ") + msg.count("? ") <= 2


@pytest.mark.parametrize(("text", "suggestion"), [
    ("stauts", "status"), ("rollbak gpu-1", "rollback"), ("swep steps 1..5", "sweep"), ("histroy", "history"),
    ("10 steps", "try 10 steps"), ("steps=10", "try steps=10"),
])
def test_unknown_commands_suggest(text: str, suggestion: str) -> None:
    with pytest.raises(UnknownCommand, match="Did you mean") as err:
        parse(text)
    assert err.value.fields["suggestion"] == suggestion


def test_unknown_command_without_close_match_points_to_help() -> None:
    with pytest.raises(UnknownCommand, match="Say 'help'"):
        parse("xyzzy")
