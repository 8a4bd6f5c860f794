"""Journal entry parsing edge cases (byte arrays, null, non-JSON, huge lines) and a fuzz test."""

from __future__ import annotations

import json

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from services.journal.entries import JournalEntry, ParseStats, decode_message, iter_entries, parse_entry

BASE = {
    "__CURSOR": "s=8c1d;i=1a;b=5f0e;m=3b9a;t=5f3c;x=9a8b",
    "__REALTIME_TIMESTAMP": "1773064800000000",
    "__MONOTONIC_TIMESTAMP": "700000000",
    "_PID": "1843377",
    "PRIORITY": "6",
    "SYSLOG_IDENTIFIER": "python3",
    "_SYSTEMD_UNIT": "sglang.service",
    "_SYSTEMD_INVOCATION_ID": "0b7d",
    "_TRANSPORT": "stdout",
    "_COMM": "python3",
    "_HOSTNAME": "gpu-2",
}


def line(**over: object) -> bytes:
    d: dict[str, object] = {**BASE, **over}
    return orjson.dumps({k: v for k, v in d.items() if v is not ...})


def test_string_message_and_fields() -> None:
    e = parse_entry(line(MESSAGE="hello"))
    assert isinstance(e, JournalEntry)
    assert (e.message, e.pid, e.priority, e.realtime_us, e.monotonic_us) == (
        "hello",
        1843377,
        6,
        1773064800000000,
        700000000,
    )
    assert (e.unit, e.invocation_id, e.identifier, e.transport) == ("sglang.service", "0b7d", "python3", "stdout")
    assert dict(e.fields) == {}
    assert parse_entry(line(MESSAGE="hello").decode()) == e  # str input too


def test_manager_message_prefers_unit_and_invocation_fields() -> None:
    e = parse_entry(
        line(
            MESSAGE="sglang.service: Failed with result 'timeout'.",
            _PID="1",
            _SYSTEMD_UNIT="init.scope",
            UNIT="sglang.service",
            INVOCATION_ID="abcd",
            MESSAGE_ID="d9b373ed55a64feb8242e02dbe79a49c",
            UNIT_RESULT="timeout",
            CODE_LINE="1",
        )
    )
    assert e is not None and e.unit == "sglang.service" and e.invocation_id == "abcd"
    assert e.fields == {"MESSAGE_ID": "d9b373ed55a64feb8242e02dbe79a49c", "UNIT_RESULT": "timeout"}


def test_byte_array_message_keeps_last_carriage_return_segment() -> None:
    bar = "\rLoading shards:  45% | 21/47\rLoading shards: 100% | 47/47\r"
    e = parse_entry(line(MESSAGE=list(bar.encode())))
    assert e is not None and e.message == "Loading shards: 100% | 47/47"


def test_byte_array_with_ansi_and_invalid_utf8() -> None:
    raw = b"\x1b[1;36m(APIServer pid=7)\x1b[0;0m INFO ok \xff\xfe"
    e = parse_entry(line(MESSAGE=list(raw)))
    assert e is not None and e.message.startswith("(APIServer pid=7) INFO ok") and "\ufffd" in e.message
    assert decode_message([300, -1, 65]).endswith("A")  # out-of-range values never raise


def test_null_and_missing_message() -> None:
    assert parse_entry(line(MESSAGE=None)).message == ""  # type: ignore[union-attr]
    assert parse_entry(line()).message == ""  # type: ignore[union-attr]


def test_non_json_and_garbage_lines() -> None:
    for bad in [
        b"",
        b"-- cursor: s=8c1d;i=1a",
        b"{",
        b"[1,2]",
        b"null",
        b"\xff\xfe",
        b'{"MESSAGE":"no cursor"}',
        b'{"__CURSOR":""}',
        b'{"__CURSOR":5}',
        b"   ",
    ]:
        assert parse_entry(bad) is None, bad


def test_missing_and_odd_fields_are_tolerated() -> None:
    e = parse_entry(b'{"__CURSOR":"c1","MESSAGE":"x","_PID":"abc","PRIORITY":7,"__REALTIME_TIMESTAMP":"nope"}')
    assert e is not None and (e.pid, e.priority, e.realtime_us, e.unit) == (None, 7, 0, None)
    e = parse_entry(b'{"__CURSOR":"c2","MESSAGE":42}')
    assert e is not None and e.message == "42"
    assert parse_entry(b"\x1e" + line(MESSAGE="seq")).message == "seq"  # type: ignore[union-attr]  (json-seq)


def test_ten_megabyte_line() -> None:
    big = "x" * (10 * 1024 * 1024)
    e = parse_entry(line(MESSAGE=big))
    assert e is not None and len(e.message) == len(big)
    assert parse_entry(line(MESSAGE=big)[:-5]) is None  # truncated: skipped, not fatal


def test_iter_entries_counts_bad_lines() -> None:
    stats = ParseStats()
    lines = [line(MESSAGE="a"), b"-- cursor: s=1", b"", line(MESSAGE="b"), b"{broken"]
    got = [e.message for e in iter_entries(lines, stats)]
    assert got == ["a", "b"]
    assert (stats.entries, stats.bad_lines) == (2, 2)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                *BASE,
                "MESSAGE",
                "UNIT",
                "INVOCATION_ID",
                "MESSAGE_ID",
                "EXIT_CODE",
                "N_RESTARTS",
                "JOB_TYPE",
                "N_DROPPED",
            ]
        ),
        json_values,
        max_size=12,
    ),
    st.booleans(),
)
def test_fuzz_objects_never_raise(obj: dict[str, object], as_text: bool) -> None:
    raw = json.dumps(obj)
    e = parse_entry(raw if as_text else raw.encode())
    if e is not None:
        assert isinstance(e.cursor, str) and e.cursor and isinstance(e.message, str)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_fuzz_bytes_never_raise(data: bytes) -> None:
    parse_entry(data)
    list(iter_entries([data, data.decode("utf-8", "replace")]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-5, max_value=400), max_size=60))
def test_fuzz_byte_array_messages(values: list[int]) -> None:
    e = parse_entry(line(MESSAGE=values))
    assert e is not None and isinstance(e.message, str)


_POOL = [
    "sglang.service: Main process exited, code=killed, status=9/KILL",
    "sglang.service: Main process exited, code=exited, status=1/FAILURE",
    "sglang.service: Failed with result 'signal'.",
    "sglang.service: Scheduled restart job, restart counter is at 2.",
    "sglang.service: State 'stop-sigterm' timed out. Killing.",
    "Started sglang.service - SGLang.",
    "Stopping sglang.service - SGLang...",
    "Suppressed 10 messages from sglang.service",
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    "torch.OutOfMemoryError: CUDA out of memory. Process 12 has 3.00 GiB memory in use.",
    "[2026-03-09 14:03:49] The server is fired up and ready to roll!",
    "[t TP0] Decode batch, #running-req: 1, #token: 1, token usage: 0.00, accept len: 5.50, "
    "cuda graph: True, gen throughput (token/s): 281.00, #queue-req: 0",
    "Fatal Python error: Segmentation fault",
    "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_POOL) | st.text(max_size=40), st.sampled_from([1, 7, 8, None]),
                          st.sampled_from(["a", "b", None]), st.integers(min_value=0, max_value=10**12)),
                max_size=30))
def test_fuzz_diagnose_never_raises(rows: list[tuple[str, int | None, str | None, int]]) -> None:
    from services.diagnosis import CAUSES, diagnose

    entries = [JournalEntry(f"c{i}", t, None, pid, "sglang.service", inv, 6, "systemd" if pid == 1 else "python3",
                            msg, "stdout", {}) for i, (msg, pid, inv, t) in enumerate(rows)]
    d = diagnose(entries)
    assert d.cause in CAUSES and len(d.evidence) <= 8 and 0 <= d.confidence <= 1
