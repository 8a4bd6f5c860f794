"""Imports flow bot -> handlers -> services, never back; Slack stays in bot; simhost stays out of product code."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module, at_module_level) for every import in a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    top = set(map(id, tree.body))
    found: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, id(node) in top))
    return found


def _files(pkg: str) -> list[Path]:
    return sorted((ROOT / pkg).rglob("*.py"))


def _root(mod: str) -> str:
    return mod.split(".")[0]


def test_services_import_no_upper_layer_and_no_slack() -> None:
    bad = [(str(f.relative_to(ROOT)), m) for f in _files("services") for m, _ in _imports(f)
           if _root(m) in {"handlers", "bot", "slack_bolt", "slack_sdk", "simhost"}]
    assert bad == []


def test_handlers_import_only_services_and_no_transport_or_storage() -> None:
    bad = [(str(f.relative_to(ROOT)), m) for f in _files("handlers") for m, _ in _imports(f)
           if _root(m) in {"bot", "slack_bolt", "slack_sdk", "asyncssh", "sqlalchemy", "simhost"}]
    assert bad == []


def test_bot_imports_simhost_only_lazily() -> None:
    bad = [(str(f.relative_to(ROOT)), m) for f in _files("bot") for m, top in _imports(f)
           if _root(m) == "simhost" and top]
    assert bad == []


def test_simhost_does_not_import_bot_or_handlers() -> None:
    bad = [(str(f.relative_to(ROOT)), m) for f in _files("simhost") for m, _ in _imports(f)
           if _root(m) in {"bot", "handlers"}]
    assert bad == []


def test_every_module_says_what_it_owns() -> None:
    missing = [str(f.relative_to(ROOT)) for pkg in ("bot", "handlers", "services", "simhost")
               for f in _files(pkg) if f.stat().st_size and ast.get_docstring(ast.parse(f.read_text())) is None]
    assert missing == []
