"""Throughput: bytes and operations over time as GB/s and GFLOP/s, and as a fraction of
what the machine measurably sustains."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Throughput", "gb_per_s", "gflop_per_s", "fraction_of", "copy_bytes"]


def gb_per_s(nbytes: float, seconds: float) -> float:
    """Decimal gigabytes per second moved by ``nbytes`` in ``seconds``."""
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, not {seconds}")
    return nbytes / seconds / 1e9


def gflop_per_s(flops: float, seconds: float) -> float:
    """Billions of floating-point operations per second."""
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, not {seconds}")
    return flops / seconds / 1e9


def fraction_of(value: float, peak: float) -> float:
    """``value`` as a fraction of ``peak`` (1.0: as fast as the peak)."""
    if peak <= 0:
        raise ValueError(f"peak must be positive, not {peak}")
    return value / peak


def copy_bytes(nbytes: int) -> int:
    """Memory traffic of copying ``nbytes``: each byte is read once and written once."""
    return 2 * nbytes


@dataclass(frozen=True)
class Throughput:
    """One timed run of a kernel: how much it moved and computed, and in what time.

    ``nbytes`` counts the minimum traffic (each input read once, each output written
    once), not what caches or a backend's temporaries add.
    """

    nbytes: int
    flops: int
    seconds: float

    @property
    def gb_s(self) -> float:
        """GB/s of the minimum traffic."""
        return gb_per_s(self.nbytes, self.seconds)

    @property
    def gflop_s(self) -> float:
        """GFLOP/s."""
        return gflop_per_s(self.flops, self.seconds)

    def of_bandwidth(self, bandwidth_gb_s: float) -> float:
        """:attr:`gb_s` as a fraction of a measured memory bandwidth."""
        return fraction_of(self.gb_s, bandwidth_gb_s)
