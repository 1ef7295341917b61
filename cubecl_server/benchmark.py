"""Benchmark timings: repeated samples of a callable, summarised as a median and a spread.

Absolute times on a shared machine drift, so comparisons are made on samples taken
in the same run, interleaved (:func:`compare`), and reported as the ratio of paired
samples (:func:`ratio`) rather than as a ratio of two numbers taken minutes apart.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Summary", "Timings", "summarize", "measure", "compare", "ratio"]


@dataclass(frozen=True)
class Summary:
    """The median and spread of a set of samples (seconds, or a dimensionless ratio).

    ``q1``/``q3`` are the quartiles (inclusive method: they lie within the samples);
    with one sample every statistic is that sample.
    """

    samples: tuple[float, ...]
    median: float
    q1: float
    q3: float
    min: float
    max: float

    @property
    def iqr(self) -> float:
        """The interquartile range, ``q3 - q1``."""
        return self.q3 - self.q1


@dataclass(frozen=True)
class Timings(Summary):
    """Seconds per call of one measured callable: one sample per repeat, each the
    mean over ``number`` back-to-back calls."""

    number: int = 1


def _quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def summarize(samples: Sequence[float]) -> Summary:
    """The :class:`Summary` of ``samples`` (at least one)."""
    if not samples:
        raise ValueError("summarize needs at least one sample")
    values = tuple(float(s) for s in samples)
    q1, med, q3 = _quartiles(sorted(values))
    return Summary(values, med, q1, q3, min(values), max(values))


def _timings(samples: Sequence[float], number: int) -> Timings:
    s = summarize(samples)
    return Timings(s.samples, s.median, s.q1, s.q3, s.min, s.max, number)


def _sample(fn: Callable[[], object], number: int) -> float:
    # A local loop: the per-call overhead it adds (~20 ns) is the same for every
    # callable compared, and small next to anything worth timing this way.
    start = time.perf_counter_ns()
    for _ in range(number):
        fn()
    return (time.perf_counter_ns() - start) / 1e9 / number


def measure(fn: Callable[[], object], repeat: int = 5, number: int = 1,
            warmup: int = 1) -> Timings:
    """Time ``fn``: ``warmup`` untimed calls, then ``repeat`` samples of ``number`` calls."""
    if repeat < 1 or number < 1 or warmup < 0:
        raise ValueError("repeat and number must be >= 1 and warmup >= 0")
    for _ in range(warmup):
        fn()
    return _timings([_sample(fn, number) for _ in range(repeat)], number)


def compare(fns: Mapping[str, Callable[[], object]], repeat: int = 5, number: int = 1,
            warmup: int = 1) -> dict[str, Timings]:
    """Time several callables against each other, interleaved: each repeat takes one
    sample of every callable, in an order shuffled from repeat to repeat (the same
    shuffles every run), so that neither the machine's drift nor what ran just before
    falls on one of them more than on the others: a rotation would leave each always
    after the same neighbour (a NumPy call whose BLAS threads still spin, say). Sample
    ``i`` of each is paired."""
    if repeat < 1 or number < 1 or warmup < 0:
        raise ValueError("repeat and number must be >= 1 and warmup >= 0")
    names = list(fns)
    for name in names:
        for _ in range(warmup):
            fns[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    shuffles = random.Random(0)
    for _ in range(repeat):
        for name in shuffles.sample(names, len(names)):
            samples[name].append(_sample(fns[name], number))
    return {name: _timings(samples[name], number) for name in names}


def ratio(a: Summary, b: Summary) -> Summary:
    """``a / b`` sample by sample (paired: taken in the same repeat), summarised."""
    if len(a.samples) != len(b.samples):
        raise ValueError(f"cannot pair {len(a.samples)} samples with {len(b.samples)}")
    return summarize([x / y for x, y in zip(a.samples, b.samples, strict=True)])
