"""The SGLang server flags pitcrew may change: names, types, bounds, aliases, help, coupling rules.

Owns the SGLang flag schema (`FLAGS`), resolving what a person typed to one of its flags
(`resolve_flag`, with a "did you mean"; values are checked by `services.engines.flags.parse_value`), and planning a
change to an ``ExecStart=`` argv (`apply_changes`) with SGLang's own coupling rules applied: with
``--speculative-eagle-topk 1`` (given or by default) SGLang forces
``--speculative-num-draft-tokens = steps + 1`` (``ServerArgs``, FORMATS.md a.5), so when the unit
pins the draft tokens, changing the steps changes them too and the plan says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.engines.flags import (
    CurrentFlags,
    FlagDef,
    FlagPlan,
    check_plain,
    current_flags,
    flag_key,
    flag_values,
    format_change,
    help_line,
    index_flags,
    parse_value,
    resolve_in,
    rewrite_flags,
)
from services.errors import UserInputError

__all__ = [
    "EAGLE_FAMILY",
    "FLAGS",
    "SWITCHES",
    "FlagDef",
    "FlagPlan",
    "apply_changes",
    "check_plain",
    "flag_help_lines",
    "format_change",
    "lookup_flag",
    "parse_value",
    "read_values",
    "resolve_flag",
]

EAGLE_FAMILY = frozenset({"EAGLE", "EAGLE3", "NEXTN", "STANDALONE"})

FLAGS: tuple[FlagDef, ...] = (
    FlagDef("--speculative-algorithm", "choice", "Speculative decoding algorithm.",
            aliases=("algo", "algorithm", "spec"), spellings=(),
            choices=("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")),
    FlagDef("--speculative-num-steps", "int", "Draft steps proposed per verify step.",
            aliases=("steps", "num-steps"), minimum=1, maximum=16),
    FlagDef("--speculative-eagle-topk", "int", "Branching factor of the draft tree per step (1 = a chain).",
            aliases=("topk",), minimum=1, maximum=10),
    FlagDef("--speculative-num-draft-tokens", "int",
            "Draft tokens verified per step (with topk 1 SGLang sets it to steps + 1).",
            aliases=("draft", "draft-tokens"), minimum=1, maximum=64),
    FlagDef("--speculative-draft-model-path", "str", "Path of the draft model.",
            aliases=("draft-model",)),
    FlagDef("--mem-fraction-static", "float", "Fraction of GPU memory for weights and KV cache.",
            aliases=("mem",), minimum=0.0, maximum=1.0, exclusive=True),
    FlagDef("--max-running-requests", "int", "Most requests decoded at once.",
            aliases=("max-running",), minimum=1, maximum=4096),
    FlagDef("--chunked-prefill-size", "int", "Tokens per prefill chunk (-1 disables chunking).",
            aliases=("chunked-prefill",), minimum=1, maximum=1048576, specials=("-1",)),
    FlagDef("--max-prefill-tokens", "int", "Most tokens in one prefill batch.",
            aliases=("max-prefill",), minimum=1, maximum=1048576),
    FlagDef("--cuda-graph-max-bs", "int", "Largest batch size captured in CUDA graphs.",
            aliases=("cuda-graph-max-bs", "cuda-graph-bs"), minimum=1, maximum=1024),
    FlagDef("--context-length", "int", "Model context length in tokens.",
            aliases=("ctx", "context"), minimum=1, maximum=10_485_760),
    FlagDef("--max-total-tokens", "int", "Size of the KV cache pool in tokens.",
            aliases=("max-total-tokens", "max-tokens"), minimum=1, maximum=1_000_000_000),
    FlagDef("--tp-size", "int", "Tensor parallel size (GPUs per model replica).",
            aliases=("tp",), spellings=("--tensor-parallel-size",), minimum=1, maximum=64),
    FlagDef("--dp-size", "int", "Data parallel size (model replicas).",
            aliases=("dp",), spellings=("--data-parallel-size",), minimum=1, maximum=64),
    FlagDef("--page-size", "int", "Tokens per KV cache page.",
            aliases=("page-size",), minimum=1, maximum=1024),
    FlagDef("--stream-interval", "int", "Decode steps between streamed chunks.",
            aliases=("stream-interval",), minimum=1, maximum=1000),
    FlagDef("--schedule-policy", "choice", "Order in which waiting requests are scheduled.",
            aliases=("schedule",), choices=("lpm", "random", "fcfs", "dfs-weight", "lof", "priority")),
    FlagDef("--kv-cache-dtype", "choice", "Data type of the KV cache.",
            aliases=("kv-dtype",), choices=("auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1")),
    FlagDef("--attention-backend", "str", "Attention kernel backend (e.g. fa3, flashinfer, triton).",
            aliases=("attention",)),
    FlagDef("--disable-cuda-graph", "bool", "Turn CUDA graphs off (slower decode, less memory).",
            aliases=("no-cuda-graph",)),
    FlagDef("--disable-radix-cache", "bool", "Turn prefix (radix) caching off.",
            aliases=("no-radix-cache",)),
    FlagDef("--enable-torch-compile", "bool", "Compile the model with torch.compile (slower start).",
            aliases=("torch-compile",)),
    FlagDef("--enable-metrics", "bool", "Serve Prometheus metrics on /metrics.",
            aliases=("metrics",)),
)

SWITCHES = frozenset(s for f in FLAGS if f.kind == "bool" for s in f.all_spellings)

_BY_WORD, _BY_NAME = index_flags(FLAGS)

STEPS = _BY_NAME["--speculative-num-steps"]
TOPK = _BY_NAME["--speculative-eagle-topk"]
DRAFT = _BY_NAME["--speculative-num-draft-tokens"]
ALGO = _BY_NAME["--speculative-algorithm"]
_SPEC_FLAGS = frozenset({STEPS, TOPK, DRAFT, _BY_NAME["--speculative-draft-model-path"]})


def lookup_flag(word: str) -> FlagDef | None:
    """The flag named by ``word``, or None (no error, no suggestion)."""
    return _BY_WORD.get(flag_key(word))


def resolve_flag(word: str) -> FlagDef:
    """The flag named by ``word``: an alias (``steps``), a flag (``--tp-size``) or ``mem_fraction_static``."""
    return resolve_in(word, _BY_WORD)


def apply_changes(argv: Sequence[str], changes: Mapping[str, str | None]) -> FlagPlan:
    """Plan ``changes`` (flag word -> value, None to remove) on an ExecStart argv, coupling included."""
    current = current_flags(argv, _BY_NAME, SWITCHES)
    wanted = _wanted(changes)
    effective: dict[FlagDef, str] = {f: v[0] for f, v in current.items()}
    for fdef, value in wanted.items():
        if value is None:
            effective.pop(fdef, None)
        else:
            effective[fdef] = value
    derived, notes = _coupled(current, wanted, effective)
    final: dict[FlagDef, str | None] = dict(wanted)
    for fdef, (value, _) in derived.items():
        final[fdef] = value
    return rewrite_flags(argv, current, final, derived, notes)


def _wanted(changes: Mapping[str, str | None]) -> dict[FlagDef, str | None]:
    """The asked-for changes by flag, values checked and normalized (a switch turned off is a removal)."""
    wanted: dict[FlagDef, str | None] = {}
    for word, raw in changes.items():
        fdef = resolve_flag(word)
        if fdef in wanted:
            raise UserInputError(f"{fdef.short} is given twice.")
        value = None if raw is None else parse_value(fdef, raw)
        if fdef.kind == "bool" and value == "false":
            value = None
        wanted[fdef] = value
    return wanted


def _coupled(current: CurrentFlags, wanted: Mapping[FlagDef, str | None],
             effective: dict[FlagDef, str]) -> tuple[dict[FlagDef, tuple[str | None, str]], list[str]]:
    """SGLang's own couplings: draft tokens follow steps when topk is 1; notes on what SGLang will do."""
    derived: dict[FlagDef, tuple[str | None, str]] = {}
    notes: list[str] = []
    algo = effective.get(ALGO)
    touched_spec = any(f in _SPEC_FLAGS for f in wanted) or ALGO in wanted
    if algo is None and any(f in _SPEC_FLAGS and v is not None for f, v in wanted.items()):
        raise UserInputError("This unit has no --speculative-algorithm, so speculative flags would do "
                             "nothing. Add one, e.g. 'try algo=EAGLE steps=3'.")
    if algo in EAGLE_FAMILY and touched_spec and STEPS in effective and int(effective.get(TOPK, "1")) == 1:
        want = str(int(effective[STEPS]) + 1)
        if DRAFT in wanted and wanted[DRAFT] is not None and wanted[DRAFT] != want:
            raise UserInputError(f"With topk 1, SGLang always uses steps + 1 = {want} draft tokens. "
                                 f"Ask for draft {want}, or leave draft out.")
        if DRAFT not in wanted and DRAFT in effective and effective[DRAFT] != want:
            derived[DRAFT] = (want, "with topk 1 SGLang uses steps + 1 draft tokens")
            effective[DRAFT] = want
        elif DRAFT not in effective:
            notes.append(f"SGLang will use {want} draft tokens (steps + 1, because topk is 1).")
    if ALGO in wanted and algo is not None and ALGO not in current and _BY_NAME[
            "--max-running-requests"] not in effective:
        notes.append("SGLang caps max_running_requests at 48 with speculative decoding "
                     "unless --max-running-requests is given.")
    return derived, notes


def read_values(argv: Sequence[str]) -> dict[str, str]:
    """The SGLang flags an argv sets: canonical name -> value."""
    return flag_values(argv, _BY_NAME, SWITCHES)


def flag_help_lines() -> tuple[str, ...]:
    """One line per flag for help: ``steps (--speculative-num-steps): a whole number from 1 to 16. ...``."""
    return tuple(help_line(f) for f in FLAGS)
