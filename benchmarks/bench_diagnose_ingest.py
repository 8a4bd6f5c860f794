"""Ingest rate of `pitcrew diagnose` on a 1,000,000-line journal, against plain `orjson.loads` (same run).

Generates a realistic `journalctl -u sglang.service -o json` export (systemd 252 field set, ~1 KB lines:
SGLang Decode/Prefill/access lines, uvicorn lines, systemd manager messages every ~500 lines, a tqdm
byte-array MESSAGE every ~1000 lines, a null MESSAGE, a few non-JSON lines), then times, best of N:

* baseline: open the file, `orjson.loads` every line (result dropped: the cheapest possible baseline);
* ingest:   the parsing stage of `pitcrew diagnose`: `services.journal.entries.iter_entries` over the open
            file (every line to a `JournalEntry`, bad lines counted and skipped);
* full:     `bot.cli_diagnose.diagnose_file` — what `pitcrew diagnose` runs: ingest and diagnosis in one
            streaming pass (memory does not grow with the file);
* cli:      the whole `pitcrew diagnose FILE --json` command in a subprocess (interpreter start included).

    .venv/bin/python benchmarks/bench_diagnose_ingest.py [--lines 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

UNIT = "sglang.service"
BOOT = "5f0e0c8e6e1a4c9b8d7e6f5a4b3c2d1e"
EXEC = ("/opt/sglang/venv/bin/python3 -m sglang.launch_server --model-path /models/Qwen3.5-122B-A10B --tp 4 "
        "--host 0.0.0.0 --port 30000 --speculative-algorithm EAGLE --speculative-num-steps 5 "
        "--speculative-eagle-topk 1 --mem-fraction-static 0.86")


def _app(i: int, t: int, msg: object, pid: int, comm: str, cmd: str, inv: str) -> dict[str, object]:
    mono = t - 1_772_000_000_000_000
    return {"__CURSOR": f"s=8c1d6a2fbb1c4f3c9d36a4b1e2f0a9c1;i={0x3a0000 + i:x};b={BOOT};m={mono:x};"
                        f"t={t:x};x={(i * 2654435761) & 0xFFFFFFFFFFFF:x}",
            "__REALTIME_TIMESTAMP": str(t), "__MONOTONIC_TIMESTAMP": str(t - 1_772_000_000_000_000),
            "_BOOT_ID": BOOT, "_MACHINE_ID": "0123456789abcdef0123456789abcdef", "_HOSTNAME": "gpu-2",
            "PRIORITY": "6", "SYSLOG_IDENTIFIER": "python3", "_PID": str(pid), "_UID": "998", "_GID": "998",
            "_COMM": comm, "_EXE": "/usr/bin/python3.11", "_CMDLINE": cmd, "_CAP_EFFECTIVE": "0",
            "_SYSTEMD_CGROUP": f"/system.slice/{UNIT}", "_SYSTEMD_UNIT": UNIT, "_SYSTEMD_SLICE": "system.slice",
            "_SYSTEMD_INVOCATION_ID": inv, "_TRANSPORT": "stdout", "_STREAM_ID": "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6",
            "MESSAGE": msg}


def _mgr(i: int, t: int, msg: str, inv: str, **extra: str) -> dict[str, object]:
    d = _app(i, t, msg, 1, "systemd", "/sbin/init", inv)
    d.update({"SYSLOG_IDENTIFIER": "systemd", "_UID": "0", "_GID": "0", "_EXE": "/usr/lib/systemd/systemd",
              "_SYSTEMD_CGROUP": "/init.scope", "_SYSTEMD_UNIT": "init.scope", "_SYSTEMD_SLICE": "-.slice",
              "_TRANSPORT": "journal", "UNIT": UNIT, "INVOCATION_ID": inv, "SYSLOG_FACILITY": "3", "TID": "1",
              "CODE_FILE": "src/core/unit.c", "CODE_LINE": "5656", "CODE_FUNC": "unit_log_process_exit"})
    del d["_SYSTEMD_INVOCATION_ID"], d["_STREAM_ID"]
    d.update(extra)
    return d


def generate(path: Path, n: int) -> None:
    """Write an n-line export (deterministic)."""
    t = 1_773_064_800_000_000
    inv = "0b7d2c1e9f8a4b3c2d1e0f9a8b7c6d5e"
    pid = 1843377
    with path.open("wb") as fh:
        buf: list[bytes] = []
        for i in range(n):
            t += 137_000
            k = i % 1000
            if k == 999:
                buf.append(b"-- cursor: s=8c1d6a2fbb1c4f3c9d36a4b1e2f0a9c1;i=3a2f10")
                continue
            if i % 500 == 250:
                inv = f"{(i * 7919) & 0xFFFFFFFF:08x}9f8a4b3c2d1e0f9a8b7c6d5e"
                d = _mgr(i, t, f"Started {UNIT} - SGLang Qwen3.5-122B-A10B server.", inv,
                         MESSAGE_ID="39f53479d3a045ac8e11786248231fbf", JOB_TYPE="start", JOB_RESULT="done")
            elif i % 500 == 249:
                d = _mgr(i, t, f"{UNIT}: Deactivated successfully.", inv,
                         MESSAGE_ID="7ad2d189f7e94e70a38c781354912448")
            elif k == 500:
                bar = "\rLoading safetensors checkpoint shards:  45% Completed | 21/47 [00:41<00:51,  1.98s/it]\r"
                d = _app(i, t, list(bar.encode()), pid + 212, "sglang::schedul", "sglang::scheduler_TP0", inv)
            elif k == 501:
                d = _app(i, t, None, pid, "python3", EXEC, inv)
            elif i % 7 == 3:
                d = _app(i, t, f'[2026-03-09 14:03:{i % 60:02d}] INFO:     127.0.0.1:{40000 + i % 20000} - '
                         '"POST /v1/chat/completions HTTP/1.1" 200 OK', pid, "python3", EXEC, inv)
            elif i % 7 == 5:
                d = _app(i, t, f"[2026-03-09 14:03:{i % 60:02d} TP0] Prefill batch, #new-seq: 1, #new-token: "
                         f"{200 + i % 900}, #cached-token: {i % 64}, token usage: 0.01, #running-req: {i % 17}, "
                         "#queue-req: 0,", pid + 212, "sglang::schedul", "sglang::scheduler_TP0", inv)
            else:
                d = _app(i, t, f"[2026-03-09 14:03:{i % 60:02d} TP0] Decode batch, #running-req: {1 + i % 16}, "
                         f"#token: {1000 + i % 90000}, token usage: 0.{i % 100:02d}, accept len: 5.50, "
                         f"accept rate: 0.50, cuda graph: True, gen throughput (token/s): {270 + i % 24}.37, "
                         "#queue-req: 0", pid + 212, "sglang::schedul", "sglang::scheduler_TP0", inv)
            buf.append(orjson.dumps(d))
            if len(buf) >= 10000:
                fh.write(b"\n".join(buf) + b"\n")
                buf.clear()
        if buf:
            fh.write(b"\n".join(buf) + b"\n")


def baseline(path: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    loads = orjson.loads
    n = 0
    with path.open("rb") as fh:
        for line in fh:
            try:
                loads(line)  # parsed and dropped: the cheapest possible baseline
                n += 1
            except orjson.JSONDecodeError:
                pass
    return time.perf_counter() - t0, n


def ingest(path: Path) -> tuple[float, int]:
    from services.journal.entries import ParseStats, iter_entries

    stats = ParseStats()
    t0 = time.perf_counter()
    with path.open("rb") as fh:
        for _entry in iter_entries(fh, stats):
            pass
    return time.perf_counter() - t0, stats.entries


def full(path: Path) -> tuple[float, str]:
    from bot.cli_diagnose import diagnose_file

    t0 = time.perf_counter()
    result, _ = diagnose_file(str(path))
    return time.perf_counter() - t0, result.cause


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-cli", action="store_true", help="skip the end-to-end CLI timing")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.jsonl"
        t0 = time.perf_counter()
        generate(path, args.lines)
        size = path.stat().st_size
        print(f"generated {args.lines:,} lines, {size / 1e6:.0f} MB, {size / args.lines:.0f} B/line "
              f"in {time.perf_counter() - t0:.1f} s")
        base_t, ours_t, full_t = [], [], []
        bn = on = 0
        cause = ""
        for _ in range(args.repeat):  # interleaved so all three see the same machine state
            bt, bn = baseline(path)
            ot, on = ingest(path)
            ft, cause = full(path)
            base_t.append(bt)
            ours_t.append(ot)
            full_t.append(ft)
        b, o, f = min(base_t), min(ours_t), min(full_t)
        print(f"orjson.loads baseline : {b:6.2f} s  {bn / b / 1e6:5.2f} M lines/s  (best of {args.repeat})")
        print(f"pitcrew ingest        : {o:6.2f} s  {on / o / 1e6:5.2f} M lines/s  ({on:,} entries; "
              f"ratio to baseline {b / o:.2f}, goal >= 0.50)")
        print(f"ingest + diagnosis    : {f:6.2f} s  {on / f / 1e6:5.2f} M lines/s  (ratio {b / f:.2f}; cause {cause})")
        print(f"peak RSS              : {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        if not args.no_cli:
            t0 = time.perf_counter()
            proc = subprocess.run([str(ROOT / ".venv" / "bin" / "pitcrew"), "diagnose", str(path), "--json"],
                                  capture_output=True, text=True, check=False,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
            cli_t = time.perf_counter() - t0
            cause = orjson.loads(proc.stdout)["cause"] if proc.returncode == 0 else f"exit {proc.returncode}"
            print(f"pitcrew diagnose CLI  : {cli_t:6.2f} s end to end ({args.lines / cli_t / 1e6:.2f} M lines/s, "
                  f"cause {cause})")


if __name__ == "__main__":
    main()
