"""Shared fixtures: the database on both engines (SQLite file and PostgreSQL schema per test).

PostgreSQL comes from PITCREW_TEST_PG_URL (``.ci/run`` sets it); without it the PostgreSQL half
of every database test is skipped with a visible reason.
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import freeze_watch
from support.reports import plain_on_ast_error
from support.xdist_groups import (
    expected_seconds,
    is_alone,
    is_serial,
    is_sweep,
    is_wallclock,
    phase_files,
    serial_nice,
    xdist_scope,
)

from services.store.db import Database

PG_URL = os.environ.get("PITCREW_TEST_PG_URL", "")

# Child processes the tests start (`python -m support.…`, helper scripts) import the test doubles too; the source
# tree goes first so that tests/bot and tests/handlers never shadow the packages of the same name.
_TESTS_DIR = Path(__file__).resolve().parent
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(_TESTS_DIR.parent), str(_TESTS_DIR), os.environ.get("PYTHONPATH", "")) if p)


def pytest_report_header(config: pytest.Config) -> list[str]:
    from simhost.systemd import unavailable

    why = unavailable()
    return [("databases: sqlite + postgresql (" + PG_URL.split("@")[-1] + ")" if PG_URL
             else "databases: sqlite only (PITCREW_TEST_PG_URL not set: PostgreSQL tests skipped)"),
            ("systemd: the sim's supervisor and systemd 252 booted in namespaces" if why is None
             else f"systemd: the sim's supervisor only (real systemd: {why})"),
            _llamacpp_header()]


def _llamacpp_header() -> str:
    from simhost.llamacpp.build import EngineNotBuilt, built

    try:
        b = built()
    except EngineNotBuilt as exc:
        return f"llama.cpp engine: real-engine tests skipped ({exc})"
    return f"llama.cpp engine: the real llama-server from {b.server.parent} (llama-cpp-python {b.version})"


def _real_systemd() -> pytest.MarkDecorator:
    from simhost.systemd import unavailable

    why = unavailable()
    return pytest.mark.skipif(why is not None, reason=f"real systemd unavailable: {why}")


@pytest.fixture(params=[pytest.param("python", id="systemd-python"),
                        pytest.param("real", id="systemd-real", marks=_real_systemd())])
def systemd(request: pytest.FixtureRequest) -> str:
    """The simulated host's service manager: the sim's Python supervisor, then systemd 252 itself (skipped with
    the reason where this machine cannot boot it). `SIMHOST_SYSTEMD=python` runs the supervisor alone."""
    return str(request.param)


async def _pg_schema_db() -> tuple[Database, str]:
    import asyncpg

    schema = "t_" + uuid.uuid4().hex[:12]
    raw = PG_URL.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(raw, timeout=10)
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
    finally:
        await conn.close()
    return Database(PG_URL, schema=schema), schema


async def _drop_schema(schema: str) -> None:
    import asyncpg

    raw = PG_URL.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(raw, timeout=10)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], str]:
    """`copy(path)`: a migrated, empty SQLite database at `path` (its URL returned), copied from one the test process
    migrated once. Alembic's upgrade of an empty database is ~33 ms of CPU a time, a bot's `migrate()` of a copy at
    head ~5 ms; the migrations themselves are tested from empty in tests/store."""
    template = tmp_path_factory.mktemp("migrated") / "template.db"
    url = f"sqlite+aiosqlite:///{template}"

    async def upgrade() -> None:
        database = Database(url)
        try:
            await database.migrate()
        finally:
            await database.close()

    # a session fixture may be set up while a test's event loop runs: the upgrade gets a loop of its own
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, upgrade()).result()

    def copy(path: Path) -> str:
        shutil.copyfile(template, path)
        return f"sqlite+aiosqlite:///{path}"

    return copy


@pytest.fixture
async def sqlite_db(tmp_path: Path, migrated_sqlite: Callable[[Path], str]) -> AsyncIterator[Database]:
    """A migrated, empty SQLite database."""
    database = Database(migrated_sqlite(tmp_path / "pitcrew.db"))
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture(params=["sqlite", "postgresql"])
async def db(request: pytest.FixtureRequest, tmp_path: Path,
             migrated_sqlite: Callable[[Path], str]) -> AsyncIterator[Database]:
    """A migrated, empty database; each test runs once on SQLite and once on PostgreSQL."""
    schema: str | None = None
    if request.param == "sqlite":
        database = Database(migrated_sqlite(tmp_path / "pitcrew.db"))
    elif not PG_URL:
        pytest.skip("PostgreSQL half skipped: set PITCREW_TEST_PG_URL (the README's test command does)")
    else:
        database, schema = await _pg_schema_db()
        await database.migrate()
    try:
        yield database
    finally:
        await database.close()
        if schema is not None:
            await _drop_schema(schema)


def pytest_configure(config: pytest.Config) -> None:
    """In `make test`'s workers, the freeze watchdog (`support.freeze_watch`, PITCREW_FREEZE_DIR)."""
    where = os.environ.get("PITCREW_FREEZE_DIR")
    if where and os.environ.get("PYTEST_XDIST_WORKER"):
        freeze_watch.start(Path(where))


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """A failure whose report could not be made (`support.reports`: CPython 3.11's AST bug) is reported plainly."""
    yield from plain_on_ast_error(item, call)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The niceness of a `serial` test and of a tune or the overlap scenario beside phase 1
    (`support.xdist_groups.serial_nice`), set before the test's fixtures start anything."""
    want = serial_nice(item.nodeid)
    if want is None or os.getpriority(os.PRIO_PROCESS, 0) == want:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, 0, want)
    except PermissionError:  # back to 0 needs root; a worker without it keeps its lower priority
        pass


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`-m serial`, `-m wallclock`, `-m alone` or `-m sweep` (scripts/test-phases.sh) imports only the test files
    that hold such tests: collecting all of them took each of its processes ~3 CPU-s (~8 s of its wall time on 2
    cores) to deselect 95 %."""
    files = phase_files(config.getoption("markexpr"))
    if files is None or not collection_path.name.startswith("test_"):
        return None
    try:
        rel = collection_path.resolve().relative_to(_TESTS_DIR.parent).as_posix()
    except ValueError:
        return None
    return True if not rel.startswith(files) else None


_SCENARIO_DIRS = ("e2e", "demo", "reliability")
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadgroup` with the groups of `support.xdist_groups` (runs on xdist's controller only)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class PathGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return PathGroups(config, log)  # type: ignore[arg-type]


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (every test module, item, fixture definition and the product's imports: most of a
    worker's heap) is kept for the whole run: moved out of the garbage collector's reach (`gc.freeze`), each full
    collection traverses only what the tests make. Without it a phase-1 worker spent 1.5-6 of its ~28 CPU-s in the
    collector (8-25 full collections of the whole heap; docs/PERFORMANCE.md, session 18)."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Scenario tests (whole-bot runs: e2e, demo, reliability) are `slow`: `pytest -m "not slow"` is the quick loop;
    `make test` runs everything. The longest tests are collected first (`support.xdist_groups.LONGEST_FIRST`: xdist
    hands tests out in this order). The marks `serial`, `wallclock`, `alone` and `sweep` say which step of `make test`
    runs a test (`support.xdist_groups`)."""
    items.sort(key=lambda item: -expected_seconds(item.nodeid))  # stable: the rest keep their order
    tests_dir = Path(__file__).resolve().parent
    for item in items:
        parts = Path(str(item.fspath)).resolve().relative_to(tests_dir).parts
        if parts and parts[0] in _SCENARIO_DIRS:
            item.add_marker(pytest.mark.slow)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(300))  # whole-bot scenarios: the default 120 s is for the rest
        if is_serial(item.nodeid):
            item.add_marker(pytest.mark.serial)
        elif is_wallclock(item.nodeid):
            item.add_marker(pytest.mark.wallclock)
        elif is_alone(item.nodeid):
            item.add_marker(pytest.mark.alone)
        elif is_sweep(item.nodeid):
            item.add_marker(pytest.mark.sweep)
