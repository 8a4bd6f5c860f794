"""The real llama.cpp engine in tests: skip with the reason shown where `make engine` has not built it."""

from __future__ import annotations

import pytest

from simhost.llamacpp.build import EngineNotBuilt, built


def llamacpp_missing() -> str | None:
    """Why the real llama.cpp engine cannot run here (the build is missing), or None."""
    try:
        built()
    except EngineNotBuilt as exc:
        return str(exc)
    return None


def real_llamacpp() -> pytest.MarkDecorator:
    """Skip a real-engine test, with the reason shown, where `make engine` has not built llama.cpp."""
    why = llamacpp_missing()
    return pytest.mark.skipif(why is not None, reason=f"real llama.cpp engine: {why}")
