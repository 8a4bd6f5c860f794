"""Packaging: a plain (non-editable) install carries the migrations, so `pitcrew migrate` works outside the
source tree — as in the Docker image or after `pip install .`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_carries_migrations_and_migrates_from_outside_the_tree(tmp_path: Path) -> None:
    src = tmp_path / "src"  # build from a copy: setuptools writes build/ next to the sources
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "tests",
                                                              "__pycache__", ".*_cache", "pitcrew-demo"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                            "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("pitcrew-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "migrations/env.py" in names and "migrations/script.py.mako" in names
    assert any(n.startswith("migrations/versions/") and n.endswith(".py") for n in names)
    assert not any(n.startswith(("tests/", "support/")) for n in names)  # test doubles stay out of the product
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    # run from an empty folder with only the unpacked wheel ahead of the dependencies: no source tree in sight
    code = ("import sys; sys.path[:0] = [sys.argv[1]]; sys.argv = ['pitcrew', 'migrate']; "
            "import bot, migrations; assert bot.__file__.startswith(sys.path[0]), bot.__file__; "
            "assert migrations.__file__.startswith(sys.path[0]), migrations.__file__; "
            "from bot.cli import main; main()")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PITCREW_CONFIG")}
    env["PITCREW_DB__URL"] = f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"
    run = subprocess.run([sys.executable, "-I", "-c", code, str(site)], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "p.db").exists()
