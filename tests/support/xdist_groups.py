"""The suite's xdist groups: test files whose tests share an expensive session fixture and must run on one xdist
worker, one after the other (`tests/conftest.py` applies them through xdist's scheduler hook)."""

from __future__ import annotations

# Test files whose tests share an expensive session fixture and must run on one xdist worker, one after the other:
# `make test`'s `--dist loadgroup` sends each group to a single worker (and, being the largest work units, first).
# Declared here by path rather than with xdist's `xdist_group` mark: xdist 3.8 tags a grouped test by rewriting
# `item._nodeid`, which pytest 9 no longer reads (the node id lives in `item._id`), so the mark silently did
# nothing: the real-vLLM tests were spread over all four workers and each worker started both servers.
XDIST_GROUPS = {"tests/simhost/test_real_vllm.py": "real-vllm"}


def xdist_scope(nodeid: str) -> str:
    """The work unit of a test under `--dist loadgroup`: its group's name, else the test itself."""
    return next((group for path, group in XDIST_GROUPS.items() if nodeid.split("::", 1)[0] == path), nodeid)
