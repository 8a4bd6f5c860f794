"""The llama.cpp server flags pitcrew may change (``llama-server``, the llama.cpp that llama-cpp-python 0.3.36
vendors): names, types, bounds, spellings, help; reading and planning a change to a ``llama-server`` argv.

Checked against that llama.cpp's own option table (`common/arg.cpp`, which is also what `llama-server --help`
prints) and its speculative-decoding code (`common/speculative.cpp`, `common_speculative_n_max`):

* **Draft length.** llama.cpp has no single "speculative tokens" flag: each `--spec-type` has its own draft
  length. `draft-*` types (a draft model, EAGLE-3, MTP, ...) draft up to `--spec-draft-n-max` (default 3);
  `ngram-simple` proposes an m-gram of `--spec-ngram-simple-size-m` (default 48), `ngram-map-k` and
  `ngram-map-k4v` their `...-size-m`, `ngram-mod` up to `--spec-ngram-mod-n-max` (default 64); `ngram-cache`
  drafts a fixed 8 (no flag). The neutral words (steps, spec tokens, draft tokens) name `--spec-draft-n-max`
  and `apply_changes` writes the draft length of the unit's own `--spec-type`, saying which flag and why.
  A unit without `--spec-type` (or `none`) does no speculative decoding: the change is refused.
* **Short spellings.** llama.cpp's options have one-dash short forms (`-c`, `-np`, `-b`, `-ub`, `-t`, `-m`);
  a unit written with them is read and changed in place (`-np 2` becomes `-np 4`, not a second flag).
* **Removed flags.** `--draft`, `--draft-n`, `--draft-max`, `--draft-min`, `--draft-n-min` and the older
  `--spec-ngram-size-n/-m`, `--spec-ngram-min-hits` still parse but fail with "the argument has been removed"
  (preflight shows the engine's own words); they are not in the schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from services.engines.flags import (
    FlagDef,
    FlagItem,
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
from services.errors import UserInputError

__all__ = [
    "DRAFT_LENGTH",
    "FLAGS",
    "SPEC_TYPES",
    "apply_changes",
    "draft_flag",
    "flag_help_lines",
    "lookup_flag",
    "model_path",
    "parse_items",
    "read_values",
    "resolve_flag",
    "spec_types",
]

SPEC_TYPES = ("none", "draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "draft-dspark", "ngram-simple",
              "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")
_DRAFT_N_MAX = "--spec-draft-n-max"
# the flag holding each speculative type's draft length (common_speculative_n_max); ngram-cache has none (8)
DRAFT_LENGTH: Mapping[str, str] = {
    **{t: _DRAFT_N_MAX for t in SPEC_TYPES if t.startswith("draft-")},
    "ngram-simple": "--spec-ngram-simple-size-m", "ngram-map-k": "--spec-ngram-map-k-size-m",
    "ngram-map-k4v": "--spec-ngram-map-k4v-size-m", "ngram-mod": "--spec-ngram-mod-n-max"}

FLAGS: tuple[FlagDef, ...] = (
    FlagDef(_DRAFT_N_MAX, "int", "Tokens to draft per step with a draft model (--spec-type draft-*); the "
            "neutral words steps / spec tokens / draft tokens write the draft length of the unit's own "
            "--spec-type.", aliases=("spec-draft-n-max", "draft-n-max"), minimum=0, maximum=1024),
    FlagDef("--spec-ngram-simple-size-m", "int", "Draft length (m-gram size) of ngram-simple speculation.",
            aliases=("ngram-simple-size-m",), minimum=1, maximum=1024),
    FlagDef("--spec-ngram-map-k-size-m", "int", "Draft length (m-gram size) of ngram-map-k speculation.",
            aliases=("ngram-map-k-size-m",), minimum=1, maximum=1024),
    FlagDef("--spec-ngram-map-k4v-size-m", "int", "Draft length (m-gram size) of ngram-map-k4v speculation.",
            aliases=("ngram-map-k4v-size-m",), minimum=1, maximum=1024),
    FlagDef("--spec-ngram-mod-n-max", "int", "Most tokens ngram-mod speculation drafts.",
            aliases=("ngram-mod-n-max",), minimum=0, maximum=1024),
    FlagDef("--spec-type", "choice", "Speculative decoding type (none: off).", aliases=("spec-type",),
            choices=SPEC_TYPES),
    FlagDef("--ctx-size", "int", "Context size in tokens for all slots together (0: the model's trained context); "
            "each slot gets ctx-size / parallel.", aliases=("ctx-size",), spellings=("-c",), minimum=0,
            maximum=10_485_760),
    FlagDef("--parallel", "int", "Server slots: requests decoded at once (-1: auto).", aliases=("parallel", "slots"),
            spellings=("-np",), minimum=-1, maximum=1024),
    FlagDef("--batch-size", "int", "Logical batch size: most prompt tokens per decode call (default 2048).",
            aliases=("batch-size",), spellings=("-b",), minimum=1, maximum=1_048_576),
    FlagDef("--ubatch-size", "int", "Physical batch size, at most the logical batch (default 512).",
            aliases=("ubatch-size", "ubatch"), spellings=("-ub",), minimum=1, maximum=1_048_576),
    FlagDef("--threads", "int", "CPU threads for generation (-1: all cores).", aliases=("threads",),
            spellings=("-t",), minimum=-1, maximum=1024),
    FlagDef("--cache-type-k", "choice", "KV cache data type for K.", aliases=("cache-type-k",), spellings=("-ctk",),
            choices=("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")),
    FlagDef("--cache-type-v", "choice", "KV cache data type for V.", aliases=("cache-type-v",), spellings=("-ctv",),
            choices=("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")),
    FlagDef("--flash-attn", "choice", "Flash attention.", aliases=("flash-attn",), spellings=("-fa",),
            choices=("on", "off", "auto")),
    FlagDef("--n-gpu-layers", "str", "Layers offloaded to the GPU: a number, auto or all.",
            aliases=("gpu-layers", "ngl"), spellings=("-ngl", "--gpu-layers")),
)

_BY_WORD, _BY_NAME = index_flags(FLAGS)
SPEC_TYPE = _BY_NAME["--spec-type"]
DRAFT_N_MAX = _BY_NAME[_DRAFT_N_MAX]
BATCH, UBATCH = _BY_NAME["--batch-size"], _BY_NAME["--ubatch-size"]
_UBATCH_DEFAULT = 512
# llama-server's options that take no value (so the word after them is the next option, not their value)
SWITCHES = frozenset({
    "--metrics", "--slots", "--no-slots", "--props", "--jinja", "--no-jinja", "--no-webui", "--webui",
    "--cont-batching", "-cb", "--no-cont-batching", "-nocb", "--mlock", "--mmap", "--no-mmap", "--verbose", "-v",
    "--log-disable", "--log-timestamps", "--log-prefix", "--no-warmup", "--warmup", "--embedding", "--embeddings",
    "--reranking", "--rerank", "--check-tensors", "--no-perf", "--perf", "--offline", "--kv-unified", "-kvu",
    "--no-kv-unified", "--swa-full", "--context-shift", "--no-context-shift", "--escape", "--no-escape",
    "--cache-prompt", "--no-cache-prompt", "--help", "-h", "--usage", "--version", "--list-devices"})


def parse_items(argv: Sequence[str]) -> list[FlagItem]:
    """A ``llama-server`` argv's (flag, value, index, count) items: its one-dash short forms too (``-np 4``)."""
    return parse_flags(argv, SWITCHES, short=True)


def read_values(argv: Sequence[str]) -> dict[str, str]:
    """The schema's flags an argv sets, canonical name -> value (last one wins, as llama.cpp's parser); the draft
    length of the unit's --spec-type reads as ``--spec-draft-n-max`` (what the neutral words name), as vLLM's
    spec tokens inside its JSON read as its flag."""
    out = flag_values(argv, _BY_NAME, SWITCHES, short=True)
    types = spec_types(argv)
    lengths = {DRAFT_LENGTH[t] for t in types if t in DRAFT_LENGTH}
    if len(lengths) == 1:
        (length,) = lengths
        if length != _DRAFT_N_MAX:
            out.pop(_DRAFT_N_MAX, None)
            if length in out:
                out[_DRAFT_N_MAX] = out.pop(length)
    return out


def model_path(argv: Sequence[str]) -> str:
    """The model file (``-m`` / ``--model``)."""
    found = ""
    for name, value, _, _ in parse_items(argv):
        if name in ("-m", "--model") and value:
            found = value
    return found


def spec_types(argv: Sequence[str]) -> tuple[str, ...]:
    """The unit's speculative types (``--spec-type`` is a comma-separated list and may be repeated)."""
    out: list[str] = []
    for name, value, _, _ in parse_items(argv):
        if name == "--spec-type" and value:
            out.extend(t.strip() for t in value.split(",") if t.strip())
    return tuple(t for t in out if t != "none")


def draft_flag(argv: Sequence[str]) -> tuple[str, str]:
    """(the flag holding the draft length of the unit's --spec-type, why that flag), or a UserInputError."""
    types = spec_types(argv)
    if not types:
        raise UserInputError("This llama.cpp unit does no speculative decoding (no --spec-type), so a draft length "
                             "would do nothing. Add a --spec-type (e.g. ngram-simple, or draft-simple with "
                             "--spec-draft-model) to the unit first.")
    flags = {DRAFT_LENGTH[t] for t in types if t in DRAFT_LENGTH}
    if not flags:
        raise UserInputError(f"llama.cpp's {types[0]} speculation drafts a fixed length (8) that no flag changes.")
    if len(flags) > 1:
        raise UserInputError("This unit combines speculative types with different draft lengths "
                             f"({', '.join(sorted(flags))}); name the flag you mean.")
    (flag,) = flags
    return flag, f"the draft length of --spec-type {','.join(types)}"


def lookup_flag(word: str) -> FlagDef | None:
    """The llama.cpp flag named by ``word``, or None."""
    return _BY_WORD.get(flag_key(word)) or _BY_NAME.get(word)


def resolve_flag(word: str) -> FlagDef:
    found = _BY_NAME.get(word)
    return found if found is not None else resolve_in(word, _BY_WORD)


def apply_changes(argv: Sequence[str], changes: Mapping[str, str | None]) -> FlagPlan:
    """Plan ``changes`` (llama.cpp flag word -> value, None to remove) on a ``llama-server`` argv.

    ``--spec-draft-n-max`` (what the neutral words name) goes to the draft length of the unit's --spec-type; a
    logical batch below the unit's physical batch takes the physical batch down with it (llama.cpp would clamp
    it anyway; the plan says so)."""
    current = current_flags(argv, _BY_NAME, SWITCHES, short=True)
    wanted: dict[FlagDef, str | None] = {}
    notes: list[str] = []
    for word, raw in changes.items():
        fdef = resolve_flag(word)
        if fdef is DRAFT_N_MAX:
            name, why = draft_flag(argv)
            if name != DRAFT_N_MAX.name:
                notes.append(f"draft tokens on this llama.cpp unit: {name} ({why}).")
            fdef = _BY_NAME[name]
        if fdef in wanted:
            raise UserInputError(f"{fdef.short} is given twice.")
        wanted[fdef] = None if raw is None else parse_value(fdef, raw)
    derived: dict[FlagDef, tuple[str | None, str]] = {}
    batch = wanted.get(BATCH)
    if batch is not None and UBATCH not in wanted:
        ub = current.get(UBATCH)
        ub_value = int(ub[0]) if ub and ub[0].isdigit() else _UBATCH_DEFAULT
        if int(batch) < ub_value:
            if ub is not None:
                derived[UBATCH] = (batch, "llama.cpp's physical batch cannot exceed the logical batch")
                wanted[UBATCH] = batch
            else:
                notes.append(f"llama.cpp will use a physical batch (--ubatch-size) of {batch}: it cannot exceed "
                             "the logical batch.")
    return rewrite_flags(argv, current, wanted, derived, notes)


def flag_help_lines() -> tuple[str, ...]:
    """One line per llama.cpp flag for help."""
    return tuple(help_line(f) for f in FLAGS)
