"""Simple system profiling using timestamps: how long work took, by the device's clock
where the server has one, else by the host's around a sync; and named sections of a
program timed with ``perf_counter_ns``."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from cubecl_server.server import ComputeServer, DeviceTimer
from cubecl_server.throughput import Throughput

__all__ = ["ProfileDuration", "TimingMethod", "profile", "Section", "TimestampProfiler"]


class TimingMethod(enum.Enum):
    """Which clock a profile was taken with."""

    DEVICE = "device"
    """The device's own timestamps of the launches: no host overhead included."""
    SYSTEM = "system"
    """The host's clock from before the work until a sync after it."""


@dataclass(frozen=True)
class ProfileDuration:
    """How long some work took, and by which clock; from ``client.profile`` also how
    many launches it ran, the bytes their arrays (and any fill or copy) span, and the
    floating-point operations the caller said it does."""

    seconds: float
    method: TimingMethod
    launches: int = 0
    nbytes: int = 0
    """The minimum memory traffic: each array a launch binds counted once."""
    flops: int = 0

    @property
    def throughput(self) -> Throughput | None:
        """GB/s of :attr:`nbytes` and GFLOP/s of :attr:`flops` over :attr:`seconds`;
        None when no time was measured."""
        if self.seconds <= 0:
            return None
        return Throughput(self.nbytes, self.flops, self.seconds)


def profile(server: ComputeServer, work: Callable[[], object]) -> ProfileDuration:
    """Run ``work`` (launches on ``server``) and time it, with the device's clock when
    the server is a :class:`~cubecl_server.server.DeviceTimer` (the sum of the
    launches' own durations: host time between them is not counted), else with the
    host's clock around a sync. The device time of a whole stretch, gaps included,
    is :func:`cubecl_server.device_events.device_span`'s."""
    server.sync()  # earlier work must not be counted
    if isinstance(server, DeviceTimer):
        server.start_timing()
        try:
            work()
        finally:
            seconds = server.stop_timing()
        return ProfileDuration(seconds, TimingMethod.DEVICE)
    start = time.perf_counter()
    work()
    server.sync()
    return ProfileDuration(time.perf_counter() - start, TimingMethod.SYSTEM)


@dataclass(frozen=True)
class Section:
    """One named section: how often it ran and for how long in all."""

    name: str
    calls: int
    total_ns: int

    @property
    def total_s(self) -> float:
        """The total time in seconds."""
        return self.total_ns / 1e9


class TimestampProfiler:
    """Times named sections of a program with two timestamps each and reports them.

    A section may run many times; its calls and time add up. Sections are reported
    in the order they first started. Not thread-safe: use one per thread.
    """

    def __init__(self) -> None:
        self._calls: dict[str, int] = {}
        self._total_ns: dict[str, int] = {}

    @contextmanager
    def section(self, name: str) -> Iterator[None]:
        """Time the block as (one more run of) the section ``name``."""
        self._calls.setdefault(name, 0)
        self._total_ns.setdefault(name, 0)
        start = time.perf_counter_ns()
        try:
            yield
        finally:
            self._total_ns[name] += time.perf_counter_ns() - start
            self._calls[name] += 1

    def sections(self) -> list[Section]:
        """Every section so far, in the order each first started."""
        return [Section(n, self._calls[n], self._total_ns[n]) for n in self._calls]

    def report(self) -> str:
        """A plain-text table of the sections: name, calls, total seconds."""
        rows = self.sections()
        width = max((len(s.name) for s in rows), default=7)
        lines = [f"{'SECTION':<{width}}  CALLS  TOTAL S"]
        lines += [f"{s.name:<{width}}  {s.calls:>5}  {s.total_s:7.2f}" for s in rows]
        return "\n".join(lines)
