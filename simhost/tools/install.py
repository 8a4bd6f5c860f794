"""Writes the sim's tool executables into `DIR/bin` (first on PATH in every SSH session).

Given the host's tool server (`simhost.tools.serve`: its port and token), `systemctl` and `nvidia-smi` are bash
scripts that ask it to run the tool (no Python start per call) and run the Python tool themselves when it does not
answer; without one they are the Python tool. `journalctl` is systemd's own (`/usr/bin/journalctl
--directory=$SIMHOST_DIR/journal/real`) when the host's journal is mirrored into real journal files
(`simhost.journal_real.backend()` is ``journald`` at install time), else the sim's Python one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from simhost.journal_real import JOURNALCTL, REAL_DIR, backend
from simhost.tools.serve import SERVED

REPO = Path(__file__).resolve().parents[2]
TOOLS = {"systemctl": "simhost.tools.systemctl", "journalctl": "simhost.tools.journalctl",
         "nvidia-smi": "simhost.tools.nvidia_smi"}


def install_tools(bin_dir: Path, python: str | None = None, server: tuple[int, str] | None = None) -> Path:
    """Write the tools into `bin_dir`; `server`: the (port, token) of the host's tool server, for the tools it
    runs."""
    python = python or sys.executable
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, module in TOOLS.items():
        script = (f"#!{python} -S\n"
                  f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
                  f"from {module} import main\nsys.exit(main(sys.argv[1:]))\n")
        if server is not None and name in SERVED:
            _write_exec(bin_dir / f".{name}-py", script)
            script = _client(name, bin_dir / f".{name}-py", *server)
        if name == "journalctl" and backend() == "journald":
            _write_exec(bin_dir / "journalctl-sim", script)
            script = ("#!/bin/sh\n"
                      'if [ -n "$SIMHOST_DIR" ]; then\n'
                      f'  mkdir -p "$SIMHOST_DIR/{REAL_DIR}" 2>/dev/null\n'
                      f'  exec {JOURNALCTL} --directory="$SIMHOST_DIR/{REAL_DIR}" "$@"\n'
                      "fi\n"
                      f'exec "{bin_dir}/journalctl-sim" "$@"\n')
        _write_exec(bin_dir / name, script)
    # sudo runs the command as is (the sim has one user); options before the command are skipped.
    _write_exec(bin_dir / "sudo", "#!/bin/bash\n"
                "while [[ $# -gt 0 && $1 == -* ]]; do\n"
                "  case $1 in -u|-g|-C|-p|-h|-U|-r|-t|-D) shift 2 ;; --) shift; break ;; *) shift ;; esac\n"
                "done\n"
                "if [[ $# -eq 0 ]]; then echo 'usage: sudo [-AbEHnPS] [-u user] command' >&2; exit 1; fi\n"
                "exec \"$@\"\n")
    return bin_dir


SGLANG_VERSION = "0.5.9"


def install_sglang_shim(lib_dir: Path) -> Path:
    """An importable `sglang` 0.5.9 for SSH sessions (`PYTHONPATH=DIR/lib/python`): `python3 -m
    sglang.launch_server` runs the fake server's parser (so `--help` and bad flags answer as 0.5.9 does),
    `sglang.srt.server_args.ServerArgs.add_cli_args` is the same parser, and `importlib.metadata.version("sglang")`
    says 0.5.9. Started by the sim's systemd the same command runs the fake server itself."""
    pkg = lib_dir / "sglang"
    (pkg / "srt").mkdir(parents=True, exist_ok=True)
    boot = f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
    (pkg / "__init__.py").write_text(f"__version__ = {SGLANG_VERSION!r}\n")
    (pkg / "version.py").write_text(f"__version__ = {SGLANG_VERSION!r}\n")
    (pkg / "srt" / "__init__.py").write_text("")
    (pkg / "srt" / "server_args.py").write_text(
        boot + "from simhost.sglang.args import add_cli_args\n\n\n"
        "class ServerArgs:\n    add_cli_args = staticmethod(add_cli_args)\n")
    (pkg / "launch_server.py").write_text(
        boot + "from simhost.sglang.args import build_parser\n\n"
        "if __name__ == '__main__':\n"
        "    build_parser().parse_args(sys.argv[1:])  # --help and argparse errors exit here, as in 0.5.9\n"
        "    from simhost.sglang.launch_server import main\n"
        "    sys.exit(main(sys.argv[1:]))\n")
    info = lib_dir / f"sglang-{SGLANG_VERSION}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {SGLANG_VERSION}\n")
    return lib_dir


def _client(name: str, fallback: Path, port: int, token: str) -> str:
    """The bash client of the tool server (`simhost.tools.serve` has the protocol); `fallback` when it is not
    there."""
    return ("#!/bin/bash\n"
            f"# the sim's {name}, run by the simulated host's tool server (simhost.tools.serve)\n"
            f"if {{ exec 3<>/dev/tcp/127.0.0.1/{port}; }} 2>/dev/null; then\n"
            f"  printf '%s\\n%s\\n%s\\n' {token} {name} \"$#\" >&3\n"
            "  [ $# -gt 0 ] && printf '%s\\0' \"$@\" >&3\n"
            "  if IFS= read -r -d '' out <&3 && IFS= read -r -d '' err <&3 && read -r rc <&3; then\n"
            "    printf '%s' \"$out\"\n"
            "    printf '%s' \"$err\" >&2\n"
            "    exit \"$rc\"\n"
            "  fi\n"
            "  exec 3<&-\n"
            "fi\n"
            f'exec "{fallback}" "$@"\n')


def _write_exec(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
