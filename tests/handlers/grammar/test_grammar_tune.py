"""`tune`: knobs with ranges or lists, the goal, the TTFT limit and the budget; round trips and plain refusals."""

from __future__ import annotations

import pytest

from handlers.commands import Tune
from handlers.grammar import parse, render
from services.errors import UserInputError

STEPS = "--speculative-num-steps"
MEM = "--mem-fraction-static"
RUNNING = "--max-running-requests"
ONE_TO_8 = tuple(str(i) for i in range(1, 9))

GOOD: list[tuple[str, Tune]] = [
    ("tune steps 1..8, mem 0.80,0.84,0.88 for throughput at 16 with ttft p95 under 500ms",
     Tune(((STEPS, ONE_TO_8), (MEM, ("0.8", "0.84", "0.88"))), 16, 500.0)),
    ("tune steps 2..4, max running 16,24,32 for throughput at c=16 in 5 restarts on gpu-1",
     Tune(((STEPS, ("2", "3", "4")), (RUNNING, ("16", "24", "32"))), 16, None, 5, "gpu-1")),
    ("tune steps=1..3 mem=0.8,0.9 for throughput at 4 with ttft below 0.5s",
     Tune(((STEPS, ("1", "2", "3")), (MEM, ("0.8", "0.9"))), 4, 500.0)),
    ("Tune steps from 1 to 3 for Throughput at 8 with TTFT p95 at most 250 ms",
     Tune(((STEPS, ("1", "2", "3")),), 8, 250.0)),
    ("optimize steps 3,1,2 , mem 0.9 , 0.85 for throughput at 2",
     Tune(((STEPS, ("3", "1", "2")), (MEM, ("0.9", "0.85"))), 2)),
    # the words of a llama.cpp unit's tune (planned in its own flags when the job runs: the draft length of its
    # --spec-type, --parallel) and of a vLLM unit's
    ("tune draft tokens 1..6, max running 1..4 for throughput at 4",
     Tune((("--speculative-num-draft-tokens", ("1", "2", "3", "4", "5", "6")), (RUNNING, ("1", "2", "3", "4"))), 4)),
    ("tune spec tokens 2..4, mem 0.9,0.95 for throughput at 16",
     Tune((("--num-speculative-tokens", ("2", "3", "4")), (MEM, ("0.9", "0.95"))), 16)),
    ("tune resume 12", Tune((), 0, resume=12)),
    ("tune resume job 12 on gpu-1", Tune((), 0, host="gpu-1", resume=12)),
]


@pytest.mark.parametrize(("text", "expected"), GOOD)
def test_tune_forms_parse_and_round_trip(text: str, expected: Tune) -> None:
    cmd = parse(text)
    assert cmd == expected
    assert parse(render(cmd)) == cmd


@pytest.mark.parametrize(("text", "message"), [
    ("tune steps 1..8", "Say what to tune for"),
    ("tune resume", "Say which tune job to resume"),
    ("tune resume x", "must be a number"),
    ("tune for throughput at 16", "Say which flags to tune"),
    ("tune 1..8 for throughput at 16", "Say which flags to tune"),
    ("tune stpes 1..8 for throughput at 16", "Did you mean 'steps'"),
    ("tune steps 1..8 for latency", "The goal is the throughput at one concurrency"),
    ("tune steps 1..8 for throughput at 0", "from 1 to 256"),
    ("tune steps 1..8 for throughput at 16 with ttft p95 over 3", "with ttft p95 under 500ms"),
    ("tune steps 1..8 for throughput at 16 with ttft p95 under 500ms please", "did not understand 'please'"),
    ("tune steps 1..8 for throughput at 16 in 0 restarts", "from 1"),
    ("tune steps 4 for throughput at 16", "at least two values"),
    ("tune steps, mem 0.8,0.9 for throughput at 16", "Give the values of steps"),
    ("tune steps 1..8, steps 2..3 for throughput at 16", "named twice"),
    ("tune steps 0..3 for throughput at 16", "from 1 to 16"),
    ("tune mem 0.8,0.9,1.5 for throughput at 16", "between 0 and 1"),
    ("tune mem 0.8..0.9 for throughput at 16", "whole-number"),
    ("tune max running 1..65 for throughput at 16", "at most 64 values"),
    ("tune steps 1..16, max running 1..64, mem 0.5,0.6,0.7,0.8,0.9 for throughput at 16", "at most 4,096"),
    ("tune steps 1..8, mem 0.8,0.9 for throughput at 16 with ttft p95 < 500ms", "never accepts.*say 'under'"),
    # Slack escapes the character
    ("tune steps 1..8 for throughput at 16 with ttft p95 &lt; 500ms", "never accepts.*say 'under'"),
])
def test_tune_refusals_are_plain_sentences(text: str, message: str) -> None:
    with pytest.raises(UserInputError, match=message):
        parse(text)
