"""The statistics and throughput helpers of the benchmarks: their arithmetic only.

Nothing here times anything or asserts a speed; clocks are replaced where a result
depends on them.
"""

from __future__ import annotations

import itertools
import statistics

import pytest

from cubecl_server import benchmark, throughput, timestamp_profiler
from cubecl_server.benchmark import compare, measure, ratio, summarize


def test_summary_of_odd_count() -> None:
    s = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.median, s.min, s.max) == (3.0, 1.0, 5.0)
    assert (s.q1, s.q3) == (2.0, 4.0)
    assert s.iqr == 2.0
    assert s.samples == (5.0, 1.0, 3.0, 2.0, 4.0)  # in the order taken


def test_summary_of_even_count_interpolates() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert s.median == 2.5
    assert s.q1 == pytest.approx(1.75)
    assert s.q3 == pytest.approx(3.25)


def test_summary_of_one_sample() -> None:
    s = summarize([7.0])
    assert (s.median, s.q1, s.q3, s.min, s.max, s.iqr) == (7.0, 7.0, 7.0, 7.0, 7.0, 0.0)


def test_summary_matches_statistics() -> None:
    values = [0.3, 9.1, 2.2, 2.2, 5.0, 1.4, 8.8]
    s = summarize(values)
    assert s.median == statistics.median(values)
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    assert (s.q1, s.q3) == (q1, q3)


def test_summary_needs_samples() -> None:
    with pytest.raises(ValueError):
        summarize([])


def test_ratio_pairs_samples() -> None:
    a = summarize([2.0, 4.0, 9.0])
    b = summarize([1.0, 2.0, 3.0])
    r = ratio(a, b)
    assert r.samples == (2.0, 2.0, 3.0)
    assert r.median == 2.0
    with pytest.raises(ValueError):
        ratio(a, summarize([1.0]))


def _fake_clock(monkeypatch: pytest.MonkeyPatch, step_ns: int) -> None:
    ticks = itertools.count(0, step_ns)
    monkeypatch.setattr(benchmark.time, "perf_counter_ns", lambda: next(ticks))


def test_measure_calls_and_per_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    _fake_clock(monkeypatch, 1000)  # every sample spans 1000 ns
    t = measure(lambda: calls.append(1), repeat=3, number=4, warmup=2)
    assert len(calls) == 2 + 3 * 4
    assert t.number == 4 and len(t.samples) == 3
    assert t.median == pytest.approx(1000 / 4 / 1e9)


def test_measure_rejects_bad_counts() -> None:
    with pytest.raises(ValueError):
        measure(lambda: None, repeat=0)
    with pytest.raises(ValueError):
        measure(lambda: None, number=0)


def test_compare_interleaves_in_shuffled_orders() -> None:
    order: list[str] = []
    fns = {name: (lambda n=name: order.append(n)) for name in "abcd"}
    out = compare(fns, repeat=40, number=1, warmup=0)
    rounds = [order[i:i + 4] for i in range(0, len(order), 4)]
    assert all(sorted(r) == list("abcd") for r in rounds)  # one sample of each per repeat
    # No callable always runs right after the same one (as a rotation would have it).
    before = {name: {r[r.index(name) - 1] for r in rounds if r[0] != name} for name in "abcd"}
    assert all(len(b) >= 2 for b in before.values())
    again: list[str] = []
    compare({name: (lambda n=name: again.append(n)) for name in "abcd"}, repeat=40,
            number=1, warmup=0)
    assert again == order  # the same orders every run
    assert set(out) == set("abcd")
    assert all(len(t.samples) == 40 for t in out.values())


def test_throughput_units() -> None:
    assert throughput.gb_per_s(3e9, 1.5) == pytest.approx(2.0)
    assert throughput.gflop_per_s(5e9, 0.5) == pytest.approx(10.0)
    assert throughput.fraction_of(5.0, 20.0) == 0.25
    assert throughput.copy_bytes(1000) == 2000
    t = throughput.Throughput(nbytes=12_000_000, flops=2_000_000, seconds=0.001)
    assert t.gb_s == pytest.approx(12.0)
    assert t.gflop_s == pytest.approx(2.0)
    assert t.of_bandwidth(24.0) == pytest.approx(0.5)


@pytest.mark.parametrize("call", [
    lambda: throughput.gb_per_s(1, 0),
    lambda: throughput.gflop_per_s(1, -1),
    lambda: throughput.fraction_of(1, 0),
])
def test_throughput_rejects_nonpositive(call: object) -> None:
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]


def test_profiler_sections_add_up(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = iter([0, 10, 100, 130, 200, 1_000_000_200])
    monkeypatch.setattr(timestamp_profiler.time, "perf_counter_ns", lambda: next(ticks))
    p = timestamp_profiler.TimestampProfiler()
    with p.section("load"):
        pass
    with p.section("run"):
        pass
    with p.section("load"):
        pass
    got = {s.name: (s.calls, s.total_ns) for s in p.sections()}
    assert got == {"load": (2, 10 + 1_000_000_000), "run": (1, 30)}
    assert [s.name for s in p.sections()] == ["load", "run"]
    assert p.sections()[0].total_s == pytest.approx(1.00000001)
    lines = p.report().splitlines()
    assert lines[0].split() == ["SECTION", "CALLS", "TOTAL", "S"]
    assert lines[1].split() == ["load", "2", "1.00"]


def test_profiler_counts_a_section_that_raises() -> None:
    p = timestamp_profiler.TimestampProfiler()
    with pytest.raises(RuntimeError), p.section("boom"):
        raise RuntimeError
    assert p.sections()[0].calls == 1
