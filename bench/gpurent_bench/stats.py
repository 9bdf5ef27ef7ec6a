"""Statistics over repeated benchmark runs: median, spread, MAD, warm-up dropping.

A healthy-card verdict compares the median of at least five timed runs with the
SKU's band and fleet median; the spread and MAD tell whether the runs agree.
"""

import math


def _values(xs):
    vals = [float(x) for x in xs]
    if not vals:
        raise ValueError("no values")
    for v in vals:
        if not math.isfinite(v):
            raise ValueError("non-finite value %r" % (v,))
    return vals


def median(xs):
    """The median; the mean of the two middle values for an even count."""
    vals = sorted(_values(xs))
    n = len(vals)
    mid = n // 2
    if n % 2:
        return vals[mid]
    return (vals[mid - 1] + vals[mid]) / 2.0


def mad(xs):
    """Median absolute deviation from the median (unscaled)."""
    vals = _values(xs)
    m = median(vals)
    return median([abs(v - m) for v in vals])


def spread(xs):
    """(max - min) / median: the relative range of the runs (0 for one run)."""
    vals = _values(xs)
    m = median(vals)
    if m == 0:
        return 0.0 if max(vals) == min(vals) else math.inf
    return (max(vals) - min(vals)) / abs(m)


def mean(xs):
    vals = _values(xs)
    return math.fsum(vals) / len(vals)


def drop_warmup(xs, warmup):
    """The values after the first `warmup` ones (the warm-up runs)."""
    if warmup < 0:
        raise ValueError("warmup must be >= 0")
    xs = list(xs)
    if warmup >= len(xs):
        raise ValueError("warmup %d leaves no timed run of %d" % (warmup, len(xs)))
    return xs[warmup:]


def timed_values(records):
    """Values of the successful, non-warm-up records (as the Go side reads them)."""
    return [r["value"] for r in records if not r["warmup"] and r["error"] is None]


def summary(xs):
    """A dict with n, median, mean, min, max, spread and mad of the values."""
    vals = _values(xs)
    return {
        "n": len(vals),
        "median": median(vals),
        "mean": mean(vals),
        "min": min(vals),
        "max": max(vals),
        "spread": spread(vals),
        "mad": mad(vals),
    }
