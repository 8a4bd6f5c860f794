"""How sure a benchmark figure is: bootstrap confidence intervals over per-request decode rates.

A level's headline figure is the median decode tok/s per request. Its spread inside one run comes
from the requests themselves: the percentile bootstrap resamples the requests with replacement
(`RESAMPLES` times) and takes the 2.5th and 97.5th percentiles of the resampled medians. The
change between two runs is bootstrapped the same way, from both runs' requests at once. The
random generator is seeded from the data, so the same samples always give the same interval.

This is the within-run part of the noise only; the spread between repeated runs of one
configuration (a restart, another GPU clock, another neighbour) is measured from history by
`services.experiments.verdicts`.
"""

from __future__ import annotations

import hashlib
import random
import statistics
import struct
from collections.abc import Sequence

RESAMPLES = 2000
CONFIDENCE = 0.95


def _rng(*samples: Sequence[float]) -> random.Random:
    h = hashlib.blake2b(digest_size=8)
    for s in samples:
        h.update(struct.pack(f"<{len(s)}d", *s))
        h.update(b"|")
    return random.Random(int.from_bytes(h.digest(), "little"))


def _interval(values: list[float], confidence: float) -> tuple[float, float]:
    values.sort()
    tail = (1.0 - confidence) / 2.0
    lo = values[int(tail * (len(values) - 1))]
    hi = values[round((1.0 - tail) * (len(values) - 1))]
    return lo, hi


def median_ci(samples: Sequence[float], *, confidence: float = CONFIDENCE,
              resamples: int = RESAMPLES) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of the median; None with fewer than 3 samples."""
    xs = [float(x) for x in samples]
    n = len(xs)
    if n < 3:
        return None
    rng = _rng(xs)
    meds = [statistics.median(rng.choices(xs, k=n)) for _ in range(resamples)]
    return _interval(meds, confidence)


def change_ci(new: Sequence[float], old: Sequence[float], *, confidence: float = CONFIDENCE,
              resamples: int = RESAMPLES) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of the change of the median, in percent of `old`'s median."""
    a, b = [float(x) for x in new], [float(x) for x in old]
    if len(a) < 3 or len(b) < 3:
        return None
    rng = _rng(a, b)
    changes = []
    for _ in range(resamples):
        mb = statistics.median(rng.choices(b, k=len(b)))
        if mb > 0:
            changes.append((statistics.median(rng.choices(a, k=len(a))) / mb - 1.0) * 100.0)
    if len(changes) < resamples // 2:
        return None
    return _interval(changes, confidence)
