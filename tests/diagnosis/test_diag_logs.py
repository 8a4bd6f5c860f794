"""systemd 252/257 message classification, SGLang line parsers, restart-loop detection, redaction."""

from __future__ import annotations

import pytest

from services.diagnosis import detect_restart_loop
from services.diagnosis.signatures import signals_of as signatures
from services.engines import engine_named
from services.engines.sglang import parse_capacity, parse_decode, parse_prefill
from services.journal.entries import JournalEntry
from services.journal.systemd import SystemdEvent, classify
from services.redact import redact, redact_obj

U = "sglang.service"


def mgr(msg: str, *, t: int = 0, inv: str | None = "i1", unit: str = U, pid: int = 1, **fields: str) -> JournalEntry:
    return JournalEntry(
        f"c{t}{msg[:8]}", t, None, pid, unit, inv, 6, "systemd" if pid == 1 else "python3", msg, "journal", fields
    )


@pytest.mark.parametrize(
    ("msg", "kind", "attrs"),
    [
        (
            f"{U}: Main process exited, code=exited, status=1/FAILURE",
            "main_exited",
            {"exit_code": "exited", "exit_status": 1, "status_name": "FAILURE", "signal": None},
        ),
        (f"{U}: Main process exited, code=killed, status=9/KILL", "main_exited", {"signal": "KILL", "exit_status": 9}),
        (
            f"{U}: Main process exited, code=dumped, status=11/SEGV",
            "main_exited",
            {"exit_code": "dumped", "signal": "SEGV"},
        ),
        (f"{U}: Main process exited, code=exited, status=0/SUCCESS (success)", "main_exited", {"exit_status": 0}),
        (f"{U}: Failed with result 'exit-code'.", "failed_result", {"result": "exit-code"}),
        (f"{U}: Failed with result 'start-limit-hit'.", "failed_result", {"result": "start-limit-hit"}),
        (f"{U}: Deactivated successfully.", "deactivated", {}),
        (f"{U}: Consumed 1min 2.345s CPU time.", "consumed", {}),
        (f"{U}: Consumed 11h 10min 11.700s CPU time, 21.3G memory peak.", "consumed", {}),  # 256+/257
        (f"{U}: Scheduled restart job, restart counter is at 3.", "scheduled_restart", {"restart_counter": 3}),
        (
            f"{U}: Scheduled restart job immediately on client request, restart counter is at 4.",
            "scheduled_restart",
            {"restart_counter": 4},
        ),  # 257
        (f"{U}: Start request repeated too quickly.", "start_limit_hit", {}),
        (f"{U}: State 'stop-sigterm' timed out. Killing.", "stop_timeout", {"state": "stop-sigterm"}),
        (f"{U}: State 'final-sigterm' timed out. Skipping SIGKILL.", "stop_timeout", {"state": "final-sigterm"}),
        (
            f"{U}: Killing process 1843377 (python3) with signal SIGKILL.",
            "killing",
            {"pid": 1843377, "comm": "python3", "signal": "KILL"},
        ),
        (f"{U}: A process of this unit has been killed by the OOM killer.", "oom_kill", {}),
        (
            f"{U}: Found left-over process 4711 (sglang::schedul) in control group while starting unit. Ignoring.\n"
            "This usually indicates unclean termination of a previous run, or service implementation deficiencies.",
            "leftover_process",
            {"pid": 4711, "comm": "sglang::schedul"},
        ),
        (
            f"{U}: Unit process 4712 (VLLM::EngineCor) remains running after unit stopped.",
            "leftover_process",
            {"pid": 4712},
        ),
        (f"Started {U} - SGLang server.", "started", {}),  # Debian combined ident
        ("Started SGLang server.", "started", {}),  # upstream default: Description only, attributed by UNIT=
        (f"Stopping {U} - SGLang server...", "stopping", {}),
        (f"Stopped {U} - SGLang server.", "stopped", {}),
        (f"Failed to start {U} - SGLang server.", "failed_to_start", {}),
    ],
)
def test_systemd_252_and_257_texts(msg: str, kind: str, attrs: dict[str, object]) -> None:
    ev = classify(mgr(msg), U)
    assert ev is not None and ev.kind == kind
    for k, v in attrs.items():
        assert getattr(ev, k) == v, k


def test_classify_rejects_other_units_and_program_output() -> None:
    assert classify(mgr("other.service: Failed with result 'exit-code'."), U) is None
    assert classify(mgr("Started other.", unit="other.service"), U) is None
    assert classify(mgr("Started SGLang server.", pid=4242, unit=U), U) is None  # the program printing it
    assert classify(mgr("hello"), U) is None
    sup = classify(mgr(f"Suppressed 12 messages from {U}", pid=312, unit="systemd-journald.service"), U)
    assert sup is not None and sup.kind == "suppressed" and sup.dropped == 12


def test_clean_exit() -> None:
    ok = classify(mgr(f"{U}: Main process exited, code=killed, status=15/TERM"), U)
    bad = classify(mgr(f"{U}: Main process exited, code=killed, status=9/KILL"), U)
    assert ok is not None and ok.clean_exit and bad is not None and not bad.clean_exit


def ev(kind: str, t_s: float, inv: str | None = None, **kw: object) -> SystemdEvent:
    return SystemdEvent(kind, U, int(t_s * 1e6), f"c{t_s}", "", inv, **kw)  # type: ignore[arg-type]


def test_restart_loop_at_second_failure_within_window() -> None:
    one = [
        ev("main_exited", 0, "a", exit_code="exited", exit_status=1),
        ev("failed_result", 0.01, "a", result="exit-code"),
    ]
    assert not detect_restart_loop(one).looping
    two = [*one, ev("scheduled_restart", 10, "a", restart_counter=1), ev("failed_result", 130, "b", result="signal")]
    st = detect_restart_loop(two)
    assert st.looping and st.failures == 2 and st.restarts == 1
    far = [*one, ev("failed_result", 1300, "b", result="signal")]
    assert not detect_restart_loop(far).looping
    assert detect_restart_loop(far, window_s=1800).looping
    assert not detect_restart_loop(two, expected_invocations={"b"}).looping  # pitcrew's own restart
    assert not detect_restart_loop(two, threshold=3).looping


def test_restart_loop_without_ids_and_start_limit() -> None:
    evs = [
        ev("main_exited", 0, exit_code="exited", exit_status=1),
        ev("failed_result", 0.5, result="exit-code"),
        ev("main_exited", 60, exit_code="exited", exit_status=1),
        ev("failed_result", 60.5, result="exit-code"),
    ]
    assert detect_restart_loop(evs).failures == 2
    assert detect_restart_loop([ev("start_limit_hit", 5)], threshold=9).looping
    assert detect_restart_loop(
        [ev("failed_result", 0, "z", result="exit-code"), ev("scheduled_restart", 1, "z", restart_counter=7)]
    ).looping  # joined late
    assert not detect_restart_loop([ev("failed_result", 0, result="success")]).looping


@pytest.mark.parametrize(
    "line",
    [
        "[2025-05-01 10:00:00 TP0] Decode batch. #running-req: 1, #token: 90, token usage: 0.00, accept len: 2.10, "
        "cuda graph: True, gen throughput (token/s): 150.25, #queue-req: 0",  # 0.4.6
        "[2025-08-01 10:00:00 TP0] Decode batch. #running-req: 1, #token: 90, token usage: 0.00, accept len: 2.10, "
        "cuda graph: True, gen throughput (token/s): 150.25, #queue-req: 0,",  # 0.5.2 (trailing comma)
        "[2025-11-01 10:00:00 TP0] Decode batch, #running-req: 1, #token: 90, token usage: 0.00, accept len: 2.10, "
        "accept rate: 0.55, cuda graph: True, gen throughput (token/s): 150.25, #queue-req: 0,",  # 0.5.5
        "[2026-03-09 14:03:49] Decode batch, #running-req: 1, #token: 90, token usage: 0.00, accept len: 2.10, "
        "accept rate: 0.55, cuda graph: True, gen throughput (token/s): 150.25, #queue-req: 0",  # 0.5.9
        "[2026-06-01 10:00:00 DP0 TP0] Decode batch [1234], #running-req: 1, #full token: 90, full token usage: 0.00, "
        "mamba num: 3, mamba usage: 0.01, accept len: 2.10, accept rate: 0.55, cpu graph: True, "
        "gen throughput (token/s): 150.25, #queue-req: 0",  # 0.5.23 hybrid
    ],
)
def test_decode_batch_all_versions(line: str) -> None:
    d = parse_decode(line)
    assert d is not None and d.running_req == 1 and d.gen_throughput == 150.25 and d.accept_len == 2.10
    assert d.queue_req == 0 and d.cuda_graph is True and d.tokens == 90


def test_other_sglang_lines() -> None:
    assert parse_decode("Prefill batch, #new-seq: 1") is None
    p = parse_prefill(
        "[t TP0] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0,"
    )
    assert p is not None and (p.new_seq, p.new_token, p.queue_req) == (1, 6, 0)
    c = parse_capacity(
        "[2026-03-09 14:02:11 TP0] max_total_num_tokens=377207, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=21, context_len=262144, available_gpu_mem=10.21 GB"
    )
    assert c is not None and (c.max_total_num_tokens, c.max_running_requests, c.available_gpu_mem_gb) == (
        377207,
        21,
        10.21,
    )
    sglang, vllm = engine_named("sglang"), engine_named("vllm")
    assert sglang.is_ready_line("[2026-03-09 14:03:49] The server is fired up and ready to roll!")
    assert not sglang.is_ready_line("INFO:     Application startup complete.")  # SGLang prints it before binding
    assert vllm.is_ready_line("INFO:     Application startup complete.")
    assert "kv_not_enough" in signatures(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    )
    assert "cuda_oom" not in signatures("RuntimeError: alloc_req_slots runs out of memory. Please set a smaller number")
    assert signatures("[2026-03-09 14:03:49 TP0] Decode batch, #running-req: 1, #token: 9") == ()


def test_redaction() -> None:
    cases = {
        "SLACK_BOT_TOKEN=xoxb-1234567890-abcdefghij": "SLACK_BOT_TOKEN=[REDACTED]",
        "app token xapp-1-A0123-4567-abcdef": "app token [REDACTED]",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.x.y": "Authorization: Bearer [REDACTED]",
        "key sk-proj-abcdefghijklmnopqrstuv": "key [REDACTED]",
        "HF hf_abcdefghijklmnopqrstuvwx": "HF [REDACTED]",
        "password=hunter2 api_key=None": "password=[REDACTED] api_key=None",
        '{"token": "zzz1"}': '{"token": "[REDACTED]"}',
        "--api-key mysecret --port 30000": "--api-key [REDACTED] --port 30000",
        "id AKIAIOSFODNN7EXAMPLE": "id [REDACTED]",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----": "[REDACTED]",
        "-----BEGIN RSA PRIVATE KEY----- MIIEpAIBAAKCAQEA": "[REDACTED]",
        "postgresql://bot:hunter22@db/x": "postgresql://bot:[REDACTED]@db/x",
    }
    for text, want in cases.items():
        assert redact(text) == want, text
    keep = (
        "[t TP0] Decode batch, #running-req: 4, #token: 9071, token usage: 0.01, gen throughput (token/s): 5",
        "max_new_tokens=128 skip_tokenizer_init=False",
        "",
    )
    for text in keep:
        assert redact(text) == text
    assert redact_obj({"a": ["password=abc1", 3]}) == {"a": ["password=[REDACTED]", 3]}
