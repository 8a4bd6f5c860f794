"""The client's CPU figure is what an outside observer sees: the process tree's user + system time, the same
figure the parent reads from the child's `/proc/<pid>/stat` (utime + stime + cutime + cstime), to within the
clock-tick rounding of `/proc` plus 2 %.

One test drives `process_tree_cpu_s` in a child that burns CPU in two threads and in a grandchild it waits for,
the parent reading /proc while the child is idle (exact edges). The other runs the real benchmark child
(`python -m services.bench.process`, as the bot does) and brackets its reported window CPU between what /proc
says over the part of the level seen inside the window and over a span that holds the window.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import orjson

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
TOLERANCE_S = 5 * TICK_S  # /proc rounds utime, stime, cutime and cstime to ticks at each of two reads
TOLERANCE_REL = 0.02


def proc_cpu_s(pid: int) -> float:
    """utime + stime + cutime + cstime of `pid`, seconds, read from the outside."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) * TICK_S  # fields 14-17 of proc(5), after pid and comm


BURNER = """
import subprocess, sys, threading, time
from services.bench.level import process_tree_cpu_s

def burn(s):
    end = time.thread_time() + s
    while time.thread_time() < end:
        pass

print("ready", flush=True)
sys.stdin.readline()
a = process_tree_cpu_s()
t = threading.Thread(target=burn, args=(0.25,))
t.start()
burn(0.25)
t.join()
subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 0.4\\n"
                "while time.process_time() < end: pass"], check=True)
print(process_tree_cpu_s() - a, flush=True)
sys.stdin.readline()
"""


def test_process_tree_cpu_matches_proc_stat_read_by_the_parent() -> None:
    child = subprocess.Popen([sys.executable, "-c", BURNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline() == "ready\n"
        before = proc_cpu_s(child.pid)  # blocked on its first readline: idle
        child.stdin.write("\n")
        child.stdin.flush()
        reported = float(child.stdout.readline())
        after = proc_cpu_s(child.pid)  # blocked on its second readline: idle
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(30) == 0
    finally:
        child.kill()
    observed = after - before
    assert reported >= 0.9, reported  # two threads of 0.25 s and a child of 0.4 s (time.process_time(): 0.5)
    assert abs(reported - observed) <= TOLERANCE_S + TOLERANCE_REL * observed, (reported, observed)


async def test_benchmark_child_reports_the_cpu_its_parent_sees(truth) -> None:
    from dataclasses import asdict

    from services.bench.runner import BenchSpec

    # warmup ~0.8 s, window 4 rounds of ~0.8 s. 1000 tokens/s per stream: at 500 the window held 0.09 s of the
    # client's CPU on a quiet machine, under the 10-tick floor below (session 7)
    srv = await truth("--rate", "1000", "--ttft", "0.01")
    spec = BenchSpec(url=srv.url, concurrency=(8,), requests_per_level=32, warmup=8, output_len=800,
                     input_len=16, timeout_s=30.0)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.bench.process", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, limit=16 * 1024 * 1024)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(orjson.dumps({**asdict(spec), "_probe": None}) + b"\n")
    await proc.stdin.drain()
    warmup_reads: list[float] = []
    inside_reads: list[float] = []  # /proc read on a progress line from inside the window
    result = None
    try:
        async with asyncio.timeout(60):
            while result is None:
                line = await proc.stdout.readline()
                assert line, "the benchmark child ended without a result"
                seen = proc_cpu_s(proc.pid)
                msg = orjson.loads(line)
                if msg["type"] == "result":
                    result, end_read = msg["result"], seen
                elif msg["phase"] == "warmup":
                    warmup_reads.append(seen)
                elif msg["done"] < msg["total"]:
                    inside_reads.append(seen)
        proc.stdin.close()
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert warmup_reads and len(inside_reads) >= 2, (warmup_reads, inside_reads)
    reported = result["levels"][0]["client"]["cpu_s"]
    outer = end_read - warmup_reads[-1]  # holds the window (and a little warmup and the summary)
    inner = inside_reads[-1] - inside_reads[0]  # held by the window
    assert inner > 10 * TICK_S  # enough CPU that the bracket means something
    assert inner - TOLERANCE_S <= reported <= outer + TOLERANCE_S, (inner, reported, outer)
