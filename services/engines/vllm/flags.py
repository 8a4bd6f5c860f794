"""The vLLM server flags pitcrew may change (``vllm serve``, vLLM 0.11): names, types, bounds, aliases, help.

Owns the vLLM flag schema (`FLAGS`), resolving a word to one of its flags (`resolve_flag`), and
planning a change to a ``vllm serve …`` argv (`apply_changes`). Checked against vLLM 0.11's
``vllm/engine/arg_utils.py`` and ``vllm/config/cache.py`` (``gpu_memory_utilization``: ``gt=0, le=1``;
``BlockSize``; ``CacheDType``) and FORMATS.md b:

* **Speculative tokens** live in the ``--speculative-config`` JSON (``num_speculative_tokens``) since
  vLLM 0.9 removed ``--num-speculative-tokens``. pitcrew changes that one value inside the JSON and
  keeps every other byte of it (keys, their order, spacing); a unit that still passes the older
  ``--num-speculative-tokens`` flag (vLLM < 0.9) has that flag changed instead. A unit with neither
  does no speculative decoding: asking for spec tokens there is refused (the method and draft model
  are the operator's choice).
* **Switches** are ``argparse.BooleanOptionalAction`` in 0.11: ``--enable-prefix-caching`` and
  ``--no-enable-prefix-caching``. Turning off a switch that is on by default (prefix caching,
  chunked prefill in V1) writes the ``--no-`` form; turning off one that is off by default removes it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from services.engines.flags import (
    FlagChange,
    FlagDef,
    FlagPlan,
    current_flags,
    flag_key,
    flag_values,
    help_line,
    index_flags,
    parse_flags,
    parse_value,
    resolve_in,
    rewrite_flags,
)
from services.errors import UnitError, UserInputError

__all__ = [
    "FLAGS",
    "SPEC_CONFIG",
    "SPEC_KEY",
    "SPEC_TOKENS",
    "SWITCHES",
    "apply_changes",
    "flag_help_lines",
    "lookup_flag",
    "read_values",
    "resolve_flag",
]

SPEC_CONFIG = "--speculative-config"
SPEC_KEY = "num_speculative_tokens"

FLAGS: tuple[FlagDef, ...] = (
    FlagDef("--num-speculative-tokens", "int",
            "Draft tokens proposed per step: num_speculative_tokens in --speculative-config "
            "(the flag itself on vLLM < 0.9).",
            aliases=("spec-tokens", "num-spec-tokens", "speculative-tokens"), minimum=1, maximum=64),
    FlagDef("--gpu-memory-utilization", "float", "Fraction of GPU memory vLLM may use (weights, activations, "
            "KV cache).", aliases=("gpu-mem", "gpu-memory"), minimum=0.0, maximum=1.0, exclusive_low=True),
    FlagDef("--max-model-len", "int", "Model context length in tokens (prompt + output).",
            aliases=("max-len",), minimum=1, maximum=10_485_760),
    FlagDef("--max-num-seqs", "int", "Most sequences (requests) scheduled at once.",
            aliases=("max-seqs",), minimum=1, maximum=4096),
    FlagDef("--max-num-batched-tokens", "int", "Most tokens in one scheduler step (the chunked-prefill budget).",
            aliases=("batched-tokens",), minimum=1, maximum=1_048_576),
    FlagDef("--tensor-parallel-size", "int", "Tensor parallel size (GPUs per model replica).",
            aliases=("tp",), minimum=1, maximum=64),
    FlagDef("--pipeline-parallel-size", "int", "Pipeline parallel size.",
            aliases=("pp",), minimum=1, maximum=64),
    FlagDef("--data-parallel-size", "int", "Data parallel size (model replicas).",
            aliases=("dp",), minimum=1, maximum=64),
    FlagDef("--block-size", "choice", "Tokens per KV cache block.",
            aliases=("block-size",), choices=("1", "8", "16", "32", "64", "128", "256")),
    FlagDef("--kv-cache-dtype", "choice", "Data type of the KV cache.",
            aliases=("kv-dtype",), choices=("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc",
                                            "fp8_ds_mla")),
    FlagDef("--swap-space", "float", "CPU swap space per GPU in GiB.",
            aliases=("swap",), minimum=0.0, maximum=1024.0),
    FlagDef("--scheduling-policy", "choice", "Order in which waiting requests are scheduled.",
            aliases=("scheduling",), choices=("fcfs", "priority")),
    FlagDef("--enforce-eager", "bool", "Turn CUDA graphs off (eager mode: slower decode, less memory).",
            aliases=("eager",)),
    FlagDef("--enable-prefix-caching", "bool", "Prefix (automatic prefix) caching; on by default.",
            aliases=("prefix-caching",)),
    FlagDef("--enable-chunked-prefill", "bool", "Chunked prefill; on by default in the V1 engine.",
            aliases=("chunked",)),
    FlagDef("--async-scheduling", "bool", "Overlap scheduling with model execution.",
            aliases=("async-scheduling",)),
)

_DEFAULT_ON = frozenset({"--enable-prefix-caching", "--enable-chunked-prefill"})
# the `--no-X` spelling of each switch, as its own (hidden) flag so an argv carrying it is read exactly
_NEGATIONS: dict[FlagDef, FlagDef] = {
    f: FlagDef("--no-" + f.name[2:], "bool", f"Turns {f.name} off.") for f in FLAGS if f.kind == "bool"}
SPEC_TOKENS = FLAGS[0]
SWITCHES = frozenset(s for f in (*FLAGS, *_NEGATIONS.values()) if f.kind == "bool" for s in f.all_spellings)

_BY_WORD, _BY_NAME = index_flags(FLAGS)
_BY_NAME.update({n.name: n for n in _NEGATIONS.values()})
_SPEC_KEY_RE = re.compile(r'("num_speculative_tokens"\s*:\s*)(-?[0-9]+)')


def lookup_flag(word: str) -> FlagDef | None:
    """The vLLM flag named by ``word``, or None."""
    return _BY_WORD.get(flag_key(word))


def resolve_flag(word: str) -> FlagDef:
    """The vLLM flag named by ``word`` (an alias, ``--max-num-seqs`` or ``max_num_seqs``), or a clear error."""
    return resolve_in(word, _BY_WORD)


def apply_changes(argv: Sequence[str], changes: Mapping[str, str | None]) -> FlagPlan:
    """Plan ``changes`` (vLLM flag word -> value, None to remove) on a ``vllm serve`` argv."""
    current = current_flags(argv, _BY_NAME, SWITCHES)
    wanted: dict[FlagDef, str | None] = {}
    for word, raw in changes.items():
        fdef = resolve_flag(word)
        if fdef in wanted:
            raise UserInputError(f"{fdef.short} is given twice.")
        wanted[fdef] = None if raw is None else parse_value(fdef, raw)
    spec_value: str | None = None
    in_json = SPEC_TOKENS in wanted and SPEC_TOKENS not in current
    if in_json:
        spec_value = wanted.pop(SPEC_TOKENS)
    final: dict[FlagDef, str | None] = {}
    for fdef, value in wanted.items():
        if fdef.kind == "bool":
            final.update(_switch(fdef, value == "true", current))
        else:
            final[fdef] = value
    plan = rewrite_flags(argv, current, final, {}, [])
    diff = list(plan.diff)
    new_argv = plan.new_argv
    if in_json:
        new_argv, change = _edit_spec_config(new_argv, spec_value)
        if change is not None:
            diff.append(change)
    return FlagPlan(new_argv, tuple(diff), plan.notes)


def _switch(fdef: FlagDef, on: bool, current: Mapping[FlagDef, object]) -> dict[FlagDef, str | None]:
    """The flags to write for a switch turned on or off (BooleanOptionalAction: ``--X`` / ``--no-X``)."""
    neg = _NEGATIONS[fdef]
    if on:
        # on by default: removing `--no-X` is enough; off by default: `--X`
        return {neg: None, **({} if fdef.name in _DEFAULT_ON and fdef not in current else {fdef: "true"})}
    if fdef.name in _DEFAULT_ON:
        return {fdef: None, neg: "true"}
    return {fdef: None, neg: None}


def _edit_spec_config(argv: tuple[str, ...], value: str | None) -> tuple[tuple[str, ...], FlagChange | None]:
    """Set ``num_speculative_tokens`` inside the ``--speculative-config`` JSON, every other byte kept."""
    found = [(idx, count, name, val) for name, val, idx, count in parse_flags(argv, SWITCHES)
             if name == SPEC_CONFIG]
    if not found:
        raise UserInputError("This vLLM unit has no --speculative-config, so it does no speculative decoding and "
                             "spec tokens would do nothing. Add a --speculative-config with a method and a draft "
                             "model to the unit first.")
    if len(found) > 1:
        raise UnitError(f"The unit sets {SPEC_CONFIG} twice; fix the unit by hand before changing it.")
    idx, count, _, text = found[0]
    if value is None:
        raise UserInputError("spec tokens cannot be removed from --speculative-config; edit the unit by hand "
                             "to turn speculative decoding off.")
    try:
        config = json.loads(text or "")
    except ValueError:
        raise UnitError(f"The unit's {SPEC_CONFIG} is not valid JSON; fix it by hand before changing it.") from None
    if not isinstance(config, dict):
        raise UnitError(f"The unit's {SPEC_CONFIG} is not a JSON object; fix it by hand before changing it.")
    assert text is not None
    old = config.get(SPEC_KEY)
    if SPEC_KEY in config:
        matches = list(_SPEC_KEY_RE.finditer(text))
        if len(matches) != 1 or not isinstance(old, int) or isinstance(old, bool):
            raise UnitError(f"The unit's {SPEC_CONFIG} has a {SPEC_KEY} pitcrew cannot change safely; edit it by "
                            "hand.")
        m = matches[0]
        new_text = text[:m.start(2)] + value + text[m.end(2):]
    else:
        close = text.rstrip().rfind("}")
        body = text[:close].rstrip()
        sep = "" if body.endswith("{") else ", "
        new_text = body + f'{sep}"{SPEC_KEY}": {value}' + text[len(body):]
    expected = {**config, SPEC_KEY: int(value)}
    if json.loads(new_text) != expected:  # pragma: no cover - the edit above keeps the JSON's meaning
        raise UnitError(f"pitcrew could not edit {SPEC_CONFIG} safely; edit it by hand.")
    if str(old) == value:
        return argv, None
    words = list(argv)
    if count == 1:
        words[idx] = f"{words[idx].partition('=')[0]}={new_text}"
    else:
        words[idx + 1] = new_text
    change = FlagChange(SPEC_CONFIG, None if old is None else str(old), value, key=SPEC_KEY)
    return tuple(words), change


def read_values(argv: Sequence[str]) -> dict[str, str]:
    """The vLLM flags an argv sets (canonical name -> value): ``--no-X`` reads as X ``false``, and
    ``num_speculative_tokens`` inside ``--speculative-config`` as ``--num-speculative-tokens``."""
    raw = flag_values(argv, _BY_NAME, SWITCHES)
    out: dict[str, str] = {}
    for name, value in raw.items():
        positive = next((f.name for f, n in _NEGATIONS.items() if n.name == name), None)
        if positive is not None:
            out[positive] = "false"
        else:
            out[name] = value
    config = next((v for n, v, _, _ in parse_flags(argv, SWITCHES) if n == SPEC_CONFIG and v), None)
    if config is not None and SPEC_TOKENS.name not in out:
        try:
            parsed = json.loads(config)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get(SPEC_KEY), int):
            out[SPEC_TOKENS.name] = str(parsed[SPEC_KEY])
    return out


def flag_help_lines() -> tuple[str, ...]:
    """One line per vLLM flag for help."""
    return tuple(help_line(f) for f in FLAGS)
