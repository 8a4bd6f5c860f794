"""Preflight: everything that can be known about a new configuration before the working server is stopped.

Three parts, each a line (✓ / ⚠ / ✗) in the preview:

* **Flags, by the engine's own parser.** The flag table is read from the engine on the host as the engine's
  `HelpProbe` says (SGLang: the unit's interpreter running ``-m sglang.launch_server --help``, and the value
  types from the parser object ``ServerArgs.add_cli_args`` builds; vLLM: the unit's ``vllm serve --help=all``),
  cached per host + launcher + engine version and read again when the version changes (the flags the previous
  version accepted are kept to name removed ones). The new command line is checked against it
  (`services.units.engine_cli.check_argv`); a refusal carries the engine's wording. An engine whose
  parser can be run on the whole argv (`Engine.parser_check`: llama.cpp's binary with the new flags and
  ``--help``) is checked that way, its own first error line being the refusal.
* **The host, in one SSH exec** (`services.experiments.host_checks`): model and tokenizer paths
  readable by the unit's user, the server port free or held only by the unit itself, free disk for logs, the
  GPUs of ``CUDA_VISIBLE_DEVICES`` present, and the GPU memory held by processes that are not the unit's
  (ownership as `services.diagnosis` judges it) small enough for the new mem-fraction.
* **Capacity forecast** from this host's recorded starts (`services.experiments.forecast`).

A ✗ refuses the job before anything on the host changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from services.diagnosis import split_sections
from services.engines import engine_named, plain_launch
from services.errors import HostError, PitcrewError
from services.hosts import Host
from services.units import (
    EngineCli,
    check_argv,
    parse_help,
)

log = logging.getLogger(__name__)

OK, WARN, FAIL = "✓", "⚠", "✗"
MARK = "@@pitcrew-section "
PREVIEW_FLAG_WAIT_S = 20.0  # the chat preview waits this long for a first read of the engine's flags
PARSER_CHECK_TIMEOUT_S = 15.0  # an engine's own parser run on a new argv (llama.cpp: the binary with --help)

# $1 the launcher, $2 per-step timeout, $3/$4 the engine's help and types snippets (`HelpProbe`, given $1 as
# their own $1); prints the help and the parser's value types (JSON) in two sections
_HELP_SCRIPT = (
    f'l="$1"; t="$2"; echo "{MARK}help"; COLUMNS=100 timeout "$t" bash -c "$3" pitcrew-help "$l" 2>&1; '
    f'echo "{MARK}types"; [ -z "$4" ] || timeout "$t" bash -c "$4" pitcrew-types "$l" 2>/dev/null; exit 0'
)

# $1 unit, $2 timeout, $3 unit user ("" = the login user), $4 model path, $5 tokenizer path, $6 log dir


@dataclass(frozen=True)
class Check:
    status: str  # OK, WARN, FAIL
    text: str
    # a refusal about what runs on the host now: the pids it calls not the unit's (empty: a holder pitcrew cannot
    # see); None for every other check
    holders: tuple[int, ...] | None = None

    def softened(self, why: str) -> Check:
        """A refusal about the host's current holders, made a warning saying `why` it cannot stand (their owner
        is not established, or the job ahead will change them); any other check unchanged."""
        if self.status != FAIL or self.holders is None:
            return self
        return Check(WARN, f"{self.text} — {why}", holders=self.holders)

    def line(self) -> str:
        return f"{self.status} {self.text}"


@dataclass
class PreflightReport:
    checks: list[Check] = field(default_factory=list)
    forecast: dict[str, Any] | None = None
    seconds: float = 0.0

    @property
    def refused(self) -> bool:
        return any(c.status == FAIL for c in self.checks)

    def lines(self) -> tuple[str, ...]:
        return tuple(c.line() for c in self.checks)

    def reasons(self) -> tuple[str, ...]:
        return tuple(c.text for c in self.checks if c.status == FAIL)

    def to_json(self) -> dict[str, Any]:
        return {"checks": [{"status": c.status, "text": c.text} for c in self.checks], "forecast": self.forecast,
                "refused": self.refused, "seconds": round(self.seconds, 3)}


@dataclass
class CachedFlags:
    cli: EngineCli
    removed: dict[str, str]  # flags earlier versions on this host+interpreter accepted -> that version


class EngineFlagCache:
    """Engine flag tables per (host, interpreter, engine version); re-read when the version changes.

    Reading a table can take long on a real host (``--help`` imports the engine, torch included: vLLM 0.32's
    ``vllm serve --help=all`` took 26-65 s on a 2-core machine, and longer while a server loaded beside it); a caller
    that cannot wait (the chat preview) gives ``wait_s`` and gets `HostError` when the read takes longer,
    while the read goes on in the background and fills the cache for the next call."""

    def __init__(self, *, help_timeout_s: float = 300.0) -> None:
        self._by_key: dict[tuple[str, str], CachedFlags] = {}
        self._reading: dict[tuple[str, str, str], asyncio.Task[CachedFlags]] = {}
        self.help_timeout_s = help_timeout_s
        self.reads = 0  # how many times the help was read from an engine (for tests and metrics)

    async def get(self, host: Host, engine: str, python: str, *, wait_s: float | None = None) -> CachedFlags | None:
        server = engine_named(engine)
        if server.name != engine or server.help_probe is None:
            return None
        res = await host.run(["bash", "-c", server.help_probe.version, "pitcrew-version", python], timeout=20.0)
        version = (res.stdout.strip().splitlines() or ["?"])[-1].strip() or "?"
        cached = self._by_key.get((host.spec.name, python))
        if cached is not None and cached.cli.version == version:
            return cached
        rkey = (host.spec.name, python, version)
        task = self._reading.get(rkey)
        if task is None:
            task = asyncio.create_task(self._read(host, engine, python, version))
            self._reading[rkey] = task
            task.add_done_callback(lambda t: self._finished(rkey, t))
        if wait_s is None:
            return await task
        try:
            return await asyncio.wait_for(asyncio.shield(task), wait_s)
        except TimeoutError:
            raise HostError(f"its --help takes longer than {wait_s:g} s; still reading it, not checked this "
                            "time") from None

    def _finished(self, rkey: tuple[str, str, str], task: asyncio.Task[CachedFlags]) -> None:
        self._reading.pop(rkey, None)
        if not task.cancelled() and task.exception() is not None:
            log.info("reading the engine flags on %s failed: %s", rkey[0], task.exception())

    async def _read(self, host: Host, engine: str, python: str, version: str) -> CachedFlags:
        key = (host.spec.name, python)
        cached = self._by_key.get(key)
        t = self.help_timeout_s
        probe = engine_named(engine).help_probe
        assert probe is not None  # `get` reads only engines that have one
        res = await host.run(["bash", "-c", _HELP_SCRIPT, "pitcrew-help", python, f"{t:g}", probe.help, probe.types],
                             timeout=2 * t + 10)
        sections = split_sections(res.stdout)
        help_text = sections.get("help", "")
        if "usage:" not in help_text:
            raise HostError(f"{python} {probe.what} on {host.spec.name} printed no usage: "
                            f"{help_text.strip()[-300:] or 'nothing'}")
        cli = parse_help(help_text, engine=engine, version=version)
        types = _json_obj(sections.get("types", ""))
        if types:
            cli = cli.with_types({k: str(v) for k, v in types.items() if isinstance(v, str)})
        removed: dict[str, str] = {}
        if cached is not None:
            removed = {**cached.removed, **{n: cached.cli.version for n in cached.cli.by_name
                                            if n not in cli.by_name}}
        self.reads += 1
        entry = CachedFlags(cli, removed)
        self._by_key[key] = entry
        return entry


async def _parser_check(host: Host, display: str, probe: list[str]) -> list[Check]:
    """The engine's own parser run on the whole new argv on the host (`Engine.parser_check`): exit 0 accepts it;
    otherwise the engine's first error line is the refusal, word for word."""
    try:
        res = await host.run(probe, timeout=PARSER_CHECK_TIMEOUT_S)
    except (HostError, PitcrewError, OSError) as e:
        return [Check(WARN, f"flags: could not run {display}'s parser on {host.spec.name}: {e}")]
    if res.exit_status == 0:
        return [Check(OK, f"flags: {display}'s own parser accepts the command line")]
    lines = [ln.strip() for ln in (res.stderr + "\n" + res.stdout).splitlines() if ln.strip()]
    said = next((ln for ln in lines if "error" in ln.lower() or "invalid" in ln.lower()), lines[0] if lines else "")
    return [Check(FAIL, f"{display} refuses the command line: `{said[:300] or f'exit status {res.exit_status}'}`")]


def _json_obj(text: str) -> dict[str, Any]:
    for line in reversed(text.splitlines()):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return {}


async def check_flags(cache: EngineFlagCache, host: Host, argv: Sequence[str], *,
                      wait_s: float | None = None) -> list[Check]:
    """The new ExecStart argv against the engine's own parser on the host (`wait_s`: see `EngineFlagCache`)."""
    found = plain_launch(argv)
    if found is None:
        return [Check(WARN, "flags: not checked (ExecStart= runs neither sglang.launch_server nor vllm serve)")]
    server, python, start = found
    probe = server.parser_check(argv)
    if probe is not None:
        return await _parser_check(host, server.display, probe)
    if server.help_probe is None:
        return [Check(WARN, server.help_unread or f"flags: not checked for {server.name}")]
    engine = server.name
    try:
        cached = await cache.get(host, engine, python, wait_s=wait_s)
    except (HostError, PitcrewError, OSError) as e:
        return [Check(WARN, f"flags: could not read the engine's flags on {host.spec.name}: {e}")]
    if cached is None:
        return [Check(WARN, f"flags: not checked for {engine}")]
    cli = cached.cli
    problems = check_argv(cli, argv, start, cached.removed)
    checks = []
    for p in problems:
        if p.severity == "error":
            checks.append(Check(FAIL, f"{cli.engine} {cli.version} refuses the command line: "
                                      f"`{cli.prog}: error: {p.message}`"))
        else:
            checks.append(Check(WARN, f"{cli.engine} {cli.version}: {p.message}"))
    if not any(p.severity == "error" for p in problems):
        typed = "with value types" if any(o.type for o in cli.options) else "names and choices only"
        checks.insert(0, Check(OK, f"flags: {cli.engine} {cli.version}'s parser accepts the command line "
                                   f"({len(cli.options)} flags known, {typed})"))
    return checks
