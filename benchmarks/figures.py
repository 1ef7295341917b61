"""What a benchmark group hands the report: figures (tables with what they measured and
what they did not), the targets they were checked against, and skips with reasons."""

from __future__ import annotations

from dataclasses import dataclass, field

from cubecl_server.benchmark import Summary

__all__ = ["Target", "Figure", "Skip", "fmt_time", "fmt_summary", "fmt_ratio", "fmt_rate"]


@dataclass(frozen=True)
class Target:
    """A goal a figure is checked against, and whether this run met it."""

    name: str
    value: str
    met: bool


@dataclass
class Figure:
    """One table of the report.

    ``measured`` says what the numbers include; ``not_measured`` what they leave out
    (driver caches that were off, work outside the timed region).
    """

    group: int
    title: str
    backend: str
    measured: str
    not_measured: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)


@dataclass(frozen=True)
class Skip:
    """A group not run for a backend, and why."""

    group: int
    backend: str
    reason: str


def fmt_time(seconds: float) -> str:
    """A duration with a unit that keeps three significant figures readable."""
    if seconds < 1e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def fmt_summary(s: Summary) -> str:
    """``median [q1 - q3]`` of durations, with the sample count."""
    return f"{fmt_time(s.median)} [{fmt_time(s.q1)} - {fmt_time(s.q3)}] (n={len(s.samples)})"


def fmt_ratio(s: Summary) -> str:
    """``median x [min - max]`` of a ratio."""
    return f"{s.median:.2f}x [{s.min:.2f} - {s.max:.2f}]"


def fmt_rate(s: Summary, unit: str) -> str:
    """``median [q1 - q3] unit`` of a rate (higher is better)."""
    def f(v: float) -> str:
        return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"
    return f"{f(s.median)} [{f(s.q1)} - {f(s.q3)}] {unit}"
