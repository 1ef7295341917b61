"""Group 8, autotune, per backend with a device:

1. The first tuned call in a fresh process: with nothing cached, with the artifacts
   cached but no tune result, and with both cached (the tune cache hit: no timing).
2. What a tuned call adds over calling the winning candidate directly, once the
   winner is known (target: under 1 us).
3. The demo's tuned matmul against its untuned default (the set's first candidate),
   on the device's clock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

from benchmarks.figures import Figure, Target, fmt_time
from benchmarks.harness import Backend, Context
from cubecl_server.benchmark import compare, summarize
from cubecl_server.client import create_client
from cubecl_server.demo import MATMUL_TUNER, matmul_tunables, tuned_matmul
from cubecl_server.tune import Tunable, TunableSet, local_tuner

__all__ = ["first_call", "overhead", "matmul_vs_default", "run"]

OVERHEAD_TARGET_S = 1e-6

_CHILD = textwrap.dedent("""
    import json, time, numpy as np
    from cubecl_server.client import create_client
    from cubecl_server.demo import tuned_matmul, MATMUL_TUNER
    c = create_client({backend!r})
    rng = np.random.default_rng(0)
    a = c.create(rng.standard_normal((200, 150), dtype=np.float32))
    b = c.create(rng.standard_normal((150, 120), dtype=np.float32))
    t = time.perf_counter()
    c.read(tuned_matmul(c, a, b))
    took = time.perf_counter() - t
    r = MATMUL_TUNER.records()[-1]
    print(json.dumps({{"seconds": took, "outcome": r.outcome, "timing_runs": r.timing_runs}}))
""")


def _child(backend: str, cache: str) -> dict[str, float | str]:
    env = {**os.environ, "CUBECL_CACHE_DIR": cache}
    env.pop("CUBECL_AUTOTUNE", None)
    proc = subprocess.run([sys.executable, "-c", _CHILD.format(backend=backend)], env=env,
                          capture_output=True, text=True, timeout=600, check=True)
    result: dict[str, float | str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def first_call(backend: str) -> dict[str, dict[str, float | str]]:
    """The first tuned matmul of a fresh process, from cold to a tune cache hit."""
    with tempfile.TemporaryDirectory() as cache:
        cold = _child(backend, cache)
        subprocess.run([sys.executable, "-m", "cubecl_server.cli", "tune", "clear"],
                       env={**os.environ, "CUBECL_CACHE_DIR": cache}, check=True,
                       capture_output=True)
        artifacts_only = _child(backend, cache)
        warm = _child(backend, cache)
    return {"cold": cold, "artifacts cached": artifacts_only, "tune cache hit": warm}


def overhead(backend: str, repeat: int) -> tuple[float, float]:
    """Seconds per call of a tiny candidate called directly and through its tuner
    (winner known): medians of paired, interleaved samples."""
    c = create_client(backend)
    a = c.create(np.ones(1024, np.float32))

    def run(client: object, x: object) -> None:
        return None

    # A candidate that launches nothing isolates the tuner's own cost from the device.
    tunables = TunableSet([Tunable("only", run)], key=lambda x: 1024)
    tuner = local_tuner("bench-overhead")
    tuner.execute(c, tunables, a)
    times = compare({"direct": lambda: run(c, a),
                     "tuned": lambda: tuner.execute(c, tunables, a)},
                    repeat=repeat, number=20_000)
    return times["direct"].median, times["tuned"].median


def matmul_vs_default(backend: str, repeat: int) -> tuple[str, float, float]:
    """The tuned matmul's winner and device time per call, against the default's."""
    c = create_client(backend)
    rng = np.random.default_rng(0)
    a = c.create(rng.standard_normal((512, 512), dtype=np.float32))
    b = c.create(rng.standard_normal((512, 512), dtype=np.float32))
    tuned_matmul(c, a, b)
    record = MATMUL_TUNER.records()[-1]
    tunables = MATMUL_TUNER.init(matmul_tunables)
    default = tunables.candidates[0]
    winner = tunables.candidate(record.winner)
    assert winner is not None
    # Interleaved, so that drift of the machine falls on both alike.
    samples: dict[str, list[float]] = {"tuned": [], "default": []}
    for _ in range(repeat):
        samples["tuned"].append(c.profile(lambda: winner.run(c, a, b)).seconds)
        samples["default"].append(c.profile(lambda: default.run(c, a, b)).seconds)
    return (record.winner, summarize(samples["tuned"]).median,
            summarize(samples["default"]).median)


def run(ctx: Context) -> list[Figure]:
    """The three autotune figures of every backend with a device."""
    def figures_of(b: Backend) -> list[Figure]:
        repeat = ctx.repeat(5, 15)
        first = first_call(b.name)
        rows = [[label, fmt_time(float(r["seconds"])), str(r["outcome"]),
                 str(r["timing_runs"])] for label, r in first.items()]
        first_fig = Figure(
            8, "First tuned call in a fresh process", b.name,
            measured="a fresh process's first call of the demo's tuned matmul (200x150 by "
                     "150x120, three tile sizes), including reading the result: with an "
                     "empty cache, with the artifacts cached but the tune result cleared, "
                     "and with both cached",
            not_measured="interpreter start and imports (before the clock); driver caches "
                         "were off",
            columns=["cache", "first call", "outcome", "timed runs"], rows=rows)
        direct, tuned = overhead(b.name, repeat)
        added = tuned - direct
        overhead_fig = Figure(
            8, "What a tuned call adds", b.name,
            measured="a call through `local_tuner(...).execute` whose winner is known, "
                     "against calling the winning candidate directly; the candidate "
                     "launches nothing, so the difference is the tuner's own cost "
                     "(medians of interleaved samples of 20,000 calls)",
            not_measured="the launch itself (the candidate does none)",
            columns=["call", "per call"],
            rows=[["candidate directly", fmt_time(direct)], ["through the tuner",
                                                             fmt_time(tuned)],
                  ["added by the tuner", fmt_time(added)]],
            targets=[Target("a tuned call adds < 1 us", fmt_time(added),
                            added < OVERHEAD_TARGET_S)])
        winner, t_tuned, t_default = matmul_vs_default(b.name, repeat)
        matmul_fig = Figure(
            8, "Tuned matmul against its default", b.name,
            measured="the demo's 512x512x512 matmul, the tuner's winner against the set's "
                     "first candidate (tile 16), device time of each launch on the "
                     f"device's clock, interleaved, median of {repeat}",
            not_measured="compilation and tuning (done before the clock)",
            columns=["candidate", "device time", "speed-up"],
            rows=[["default (tile 16)", fmt_time(t_default), "1.00x"],
                  [f"tuned ({winner})", fmt_time(t_tuned), f"{t_default / t_tuned:.2f}x"]])
        return [first_fig, overhead_fig, matmul_fig]
    return ctx.each_backend(8, figures_of)
