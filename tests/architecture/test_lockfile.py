"""The lock file pins, with hashes, every dependency pyproject.toml declares (runtime and dev), so a fresh machine
installs what CI tested. A dependency added to pyproject.toml without `make lock` fails here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_every_declared_dependency_is_pinned_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in project["dependencies"]} | {_name(r) for r in project["optional-dependencies"]["dev"]}
    lock = (ROOT / "requirements.lock").read_text()
    pinned = {m.group(1).lower().replace("_", "-"): m.group(2)
              for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==([^\s\\]+)", lock, re.M)}
    assert not declared - set(pinned), f"not in requirements.lock (run `make lock`): {sorted(declared - set(pinned))}"
    for block in re.split(r"\n(?=[A-Za-z0-9])", lock):
        if "==" in block.split("\n", 1)[0]:
            assert "--hash=sha256:" in block, block.split("\n", 1)[0]
