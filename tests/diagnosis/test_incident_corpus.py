"""The incident corpus (tests/data/incidents) is well formed, and the diagnoser's score on it.

The corpus checks guard the ground truth itself: journalctl's JSON shape, labels from the diagnoser's set,
a report URL per case, at least 3 cases per label, a ~1/3 holdout of the first corpus, the later holdouts
(`holdout2`, `holdout3`, `holdout4`) from reports no other case uses, key lines that really occur, and that the
committed files are exactly what the builder writes. The scoring test holds the targets of issue 12 on the split
that is scored and never tuned on (holdout4).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "incidents"
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(CORPUS))
from bench_diagnosis import (  # noqa: E402
    Answer,
    CorpusCase,
    Diagnoser,
    evaluate,
    load_corpus,
    load_diagnoser,
    render,
    write_doc,
)
from incident_build import HOLDOUT2, HOLDOUT3, HOLDOUT4, LLAMACPP_IDS, split_of  # noqa: E402
from incident_build import main as build_corpus  # noqa: E402

CURSOR = re.compile(r"^s=[0-9a-f]{32};i=[0-9a-f]+;b=[0-9a-f]{32};m=[0-9a-f]+;t=[0-9a-f]+;x=[0-9a-f]+$")
CASES = load_corpus(CORPUS)
CAUSES = load_diagnoser().causes
# llama-server's public reports (issue 29): scored by the benchmark, not yet tuned on, so outside the regression guards
TUNED = [c for c in CASES if c.split != "llamacpp"]


def journal(case: CorpusCase) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (case.path / "journal.jsonl").read_text().splitlines()]


def message(obj: dict[str, Any]) -> str:
    m = obj.get("MESSAGE")
    if isinstance(m, list):
        return bytes(m).decode("utf-8", "replace")
    return m or ""


def test_corpus_has_at_least_80_cases_from_both_engines() -> None:
    assert len(CASES) >= 80
    engines = Counter(c.expected["engine"] for c in CASES)
    assert engines["sglang"] >= 25 and engines["vllm"] >= 40, engines


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_journal_has_journalctl_json_shape(case: CorpusCase) -> None:
    objs = journal(case)
    assert len(objs) >= 3
    last_t = 0
    for obj in objs:
        for key in ("__CURSOR", "__REALTIME_TIMESTAMP", "__MONOTONIC_TIMESTAMP", "_BOOT_ID", "PRIORITY"):
            assert key in obj, (key, obj)
        for key, value in obj.items():
            if key == "MESSAGE":
                assert value is None or isinstance(value, str) or (
                    isinstance(value, list) and all(isinstance(b, int) and 0 <= b < 256 for b in value)), value
            else:
                assert isinstance(value, str), (key, value)
        assert CURSOR.match(obj["__CURSOR"]), obj["__CURSOR"]
        t = int(obj["__REALTIME_TIMESTAMP"])
        assert t >= last_t
        last_t = t
        assert f";t={t:x};" in obj["__CURSOR"]
        if obj.get("_PID") == "1":
            assert obj["UNIT"] in ("sglang.service", "vllm.service", "llama-server.service") and obj["INVOCATION_ID"]
        elif obj.get("_TRANSPORT") == "stdout":
            assert obj["_SYSTEMD_UNIT"] == obj["_SYSTEMD_CGROUP"].rsplit("/", 1)[1]
            assert obj["_SYSTEMD_INVOCATION_ID"] and obj["_PID"].isdigit() and len(obj["_COMM"]) <= 15
            if isinstance(obj["MESSAGE"], list):  # byte arrays only for control characters (FORMATS c.4)
                assert any(b < 32 and b not in (9, 10) for b in obj["MESSAGE"])
    # several invocations or a single one, but never stdout lines without an invocation id
    assert any(o.get("_PID") == "1" and o["MESSAGE"].startswith("Started ") for o in objs)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_expected_json_is_complete(case: CorpusCase) -> None:
    e = case.expected
    assert e["cause"] in CAUSES
    assert isinstance(e["loop"], bool)
    assert e["url"].startswith("https://") and " " not in e["url"]
    assert e["engine"] in ("sglang", "vllm", "llamacpp") and e["engine_version"]
    assert e["split"] == split_of(case.id)
    assert set(e["must_not"]) <= set(CAUSES) and e["cause"] not in e["must_not"]
    assert all(isinstance(k, str) and k for k in e["key_lines"])
    assert e["notes"]
    assert e["cause"] == "healthy" or e["key_lines"], "every incident names the lines a person needs"
    if e["cause"] == "healthy":
        assert set(e["must_not"]) == set(CAUSES) - {"healthy"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_key_lines_occur_in_the_journal_or_kernel_log(case: CorpusCase) -> None:
    texts = [message(o) for o in journal(case)]
    extra = case.extra() or {}
    texts += [message(o) for o in extra.get("kernel_journal", [])]
    for key in case.expected["key_lines"]:
        assert any(key in t for t in texts), key


def test_every_label_has_three_cases_and_a_holdout_case() -> None:
    labels = Counter(c.expected["cause"] for c in CASES)
    assert {k: v for k, v in labels.items() if v < 3} == {}
    assert set(labels) == set(CAUSES)
    holdout = {c.expected["cause"] for c in CASES if c.split == "holdout"}
    assert holdout == set(CAUSES)


def test_about_a_third_is_holdout() -> None:
    first = [c for c in CASES if c.split not in ("holdout2", "holdout3", "holdout4", "captured", "llamacpp")]
    share = sum(c.split == "holdout" for c in first) / len(first)
    assert 0.28 <= share <= 0.40, share


def test_splits_are_tune_holdout_holdout2_and_holdout3() -> None:
    assert {"tune", "holdout", "holdout2"} <= {c.split for c in CASES} <= {"tune", "holdout", "holdout2", "holdout3",
                                                                          "holdout4", "captured", "llamacpp"}
    assert {c.id for c in CASES if c.split == "holdout2"} == set(HOLDOUT2)
    assert {c.id for c in CASES if c.split == "llamacpp"} == set(LLAMACPP_IDS)
    assert {c.id for c in CASES if c.split == "holdout3"} == set(HOLDOUT3)
    assert {c.id for c in CASES if c.split == "holdout4"} == set(HOLDOUT4)


def test_holdout2_is_a_fresh_sample_over_the_labels() -> None:
    """The second holdout: >= 25 cases from reports the first corpus does not cite, over (nearly) every label."""
    second = [c for c in CASES if c.split == "holdout2"]
    first_urls = {c.expected["url"] for c in CASES if c.split != "holdout2"}
    assert len(second) >= 25
    assert [c.id for c in second if c.expected["url"] in first_urls] == []
    labels = Counter(c.expected["cause"] for c in second)
    assert len(labels) >= 14, labels
    assert sum(c.expected["engine"] == "sglang" for c in second) >= 8
    assert sum(c.expected["engine"] == "vllm" for c in second) >= 12


@pytest.mark.parametrize("split", ["holdout3", "holdout4"])
def test_a_later_holdout_is_a_fresh_sample_over_every_label(split: str) -> None:
    """holdout3 and holdout4 (the scored split now): >= 55 cases each from reports no case of another split cites,
    over every label, both engines."""
    cases = [c for c in CASES if c.split == split]
    others = {c.expected["url"] for c in CASES if c.split != split}
    assert len(cases) >= 55, len(cases)
    assert [c.id for c in cases if c.expected["url"] in others] == []
    assert {c.expected["cause"] for c in cases} == set(CAUSES)
    assert sum(c.expected["engine"] == "sglang" for c in cases) >= 20
    assert sum(c.expected["engine"] == "vllm" for c in cases) >= 20


def test_llamacpp_split_is_llama_server_reports_no_other_case_cites() -> None:
    """Issue 29: llama-server's public reports, each cited once, over several labels, on llama-server.service."""
    cases = [c for c in CASES if c.split == "llamacpp"]
    others = {c.expected["url"] for c in CASES if c.split != "llamacpp"}
    assert len(cases) >= 8, len(cases)
    assert {c.expected["engine"] for c in cases} == {"llamacpp"}
    assert [c.id for c in cases if c.expected["url"] in others] == []
    assert len({c.expected["url"] for c in cases}) == len(cases)
    assert len({c.expected["cause"] for c in cases}) >= 5
    for c in cases:
        units = {o.get("_SYSTEMD_UNIT") for o in journal(c) if o.get("_TRANSPORT") == "stdout"}
        assert units == {"llama-server.service"}, (c.id, units)


def test_committed_files_are_what_the_builder_writes(tmp_path: Path) -> None:
    assert build_corpus(tmp_path) == len(CASES)
    assert (CORPUS / "README.md").read_text() == (tmp_path / "README.md").read_text()
    for case in CASES:
        for name in ("journal.jsonl", "expected.json", "extra.json"):
            mine, built = case.path / name, tmp_path / case.id / name
            assert mine.exists() == built.exists(), (case.id, name)
            if mine.exists():
                assert mine.read_bytes() == built.read_bytes(), (case.id, name)


def _oracle(truth: dict[str, dict[str, Any]], wrong: str | None = None) -> Diagnoser:
    """A stand-in diagnoser that knows the answers (or always says `wrong`), to test the scorer itself."""

    def run(journal_path: Path, _extra: Any) -> Answer:
        e = truth[journal_path.parent.name]
        cause = wrong or e["cause"]
        return Answer(cause, bool(e["loop"]) if wrong is None else False, 0.9, tuple(e["key_lines"]))

    return Diagnoser(run, CAUSES)


def test_scorer_gives_a_perfect_score_to_the_truth_and_flags_harmful_answers(tmp_path: Path) -> None:
    truth = {c.id: c.expected for c in CASES}
    perfect = evaluate(CASES, _oracle(truth))
    assert perfect.splits["all"].accuracy == 1.0 and perfect.splits["all"].key_recall == 1.0
    assert sum(perfect.splits[s].n for s in perfect.splits if s != "all") == len(CASES)
    assert set(perfect.splits) <= {"tune", "holdout", "holdout2", "holdout3", "holdout4", "captured", "llamacpp",
                                   "all"}
    assert perfect.splits["all"].violations == []
    healthy = evaluate(CASES, _oracle(truth, wrong="healthy"))
    n_healthy = sum(c.expected["cause"] == "healthy" for c in CASES)
    assert healthy.splits["all"].right == n_healthy
    assert len(healthy.splits["all"].violations) == sum("healthy" in c.expected["must_not"] for c in CASES)
    assert healthy.calibration[3][1] == len(CASES)  # every answer at 0.90 falls in the 0.85-0.95 band
    doc = tmp_path / "DIAGNOSIS.md"
    doc.write_text("# x\n<!-- bench:begin -->\nSTALE-TABLE\n<!-- bench:end -->\ntail\n")
    write_doc(render(healthy), doc)
    text = doc.read_text()
    assert "STALE-TABLE" not in text and "| holdout |" in text and "| holdout2 |" in text
    assert text.endswith("tail\n")


def test_diagnoser_meets_the_issue_12_targets() -> None:
    """Issue 12's acceptance, on the split that is scored and never tuned on (holdout4; scored once when it was
    unseen: 58/60 = 96.7 %, loop flag 100 %, key-line recall 87.5 %, no must_not violation), and on the whole
    corpus but the not-yet-tuned `llamacpp` split for the loop flag, key-line recall and harmful answers."""
    report = evaluate(TUNED, load_diagnoser())
    scored, everything = report.splits["holdout4"], report.splits["all"]
    assert scored.accuracy >= 0.95 and scored.loop_accuracy >= 0.98 and scored.key_recall >= 0.80, render(report)
    assert scored.violations == []
    assert everything.loop_accuracy >= 0.98
    assert everything.key_recall >= 0.80
    assert everything.violations == []


def test_confidence_means_something_on_the_tune_split() -> None:
    """Calibrated on the open splits (tune and the retired holdouts): sure answers are right, and the unsure band
    only ever says `unknown`."""
    report = evaluate([c for c in TUNED if c.split != "holdout4"], load_diagnoser())
    sure = [o for o in report.outcomes if o.answer.confidence >= 0.85]
    assert len(sure) >= len(report.outcomes) // 2
    assert sum(o.right for o in sure) / len(sure) >= 0.95
    assert all(o.answer.cause == "unknown" for o in report.outcomes if o.answer.confidence < 0.5)
    assert report.splits["all"].accuracy >= 0.98 and report.splits["all"].violations == []  # regression guard
