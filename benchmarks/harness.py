"""The benchmark harness: finds the backends that can run here, runs each figure group
on them and writes BENCHMARKS.md.

Every process it starts, and the harness itself, keeps its compilation store in a
temporary directory, never in the user's cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.figures import Figure, Skip
from cubecl_server.timestamp_profiler import TimestampProfiler

__all__ = [
    "REPO_ROOT", "PROJECT_DISTRIBUTIONS", "DRIVER_CACHES_OFF", "Backend", "Context", "GROUPS",
    "add_arguments",
    "run_benchmarks", "main",
]

REPO_ROOT = Path(__file__).resolve().parent.parent

PROJECT_DISTRIBUTIONS = ("cubecl-server", "cubecl-opencl", "cubecl-vulkan", "cubecl-cuda",
                         "cubecl-llvm")
"""The project's own backends: benchmarked by default (any other needs ``--backend``)."""

DRIVER_CACHES_OFF: dict[str, str] = {
    "POCL_KERNEL_CACHE": "0",
    "MESA_SHADER_CACHE_DISABLE": "true",
    "CUDA_CACHE_DISABLE": "1",
}
"""Variables that turn off the drivers' own kernel caches, so a cold figure is a real
compile and a warm one comes from our store alone."""


@dataclass(frozen=True)
class Backend:
    """A backend the benchmarks may use: runnable (a device is present) or compile-only."""

    name: str
    distribution: str
    version: str
    devices: tuple[str, ...]
    runnable: bool


@dataclass
class Context:
    """What every group gets: the backends, the mode, scratch space and a way to run
    fresh processes."""

    backends: list[Backend]
    quick: bool
    workdir: Path
    profiler: TimestampProfiler
    skips: list[Skip] = field(default_factory=list)
    _dirs: int = 0

    @property
    def runnable(self) -> list[Backend]:
        """The backends with a device here."""
        return [b for b in self.backends if b.runnable]

    def repeat(self, quick: int, full: int) -> int:
        """The repeat count for the current mode."""
        return quick if self.quick else full

    def fresh_dir(self, label: str) -> Path:
        """A new empty directory under the scratch root."""
        self._dirs += 1
        path = self.workdir / f"{self._dirs:04d}-{label}"
        path.mkdir(parents=True)
        return path

    def skip(self, group: int, backend: str, reason: str) -> None:
        """Record that ``group`` did not run for ``backend`` and why (printed now too)."""
        print(f"  group {group}: {backend} skipped: {reason}", file=sys.stderr)
        self.skips.append(Skip(group, backend, reason))

    def each_backend(self, group: int, figures_of: Callable[[Backend], list[Figure]],
                     no_device: str | None = "no device: nothing is launched") -> list[Figure]:
        """``figures_of(b)`` for every backend, one backend's failure recorded as a skip
        (with its traceback on stderr) without stopping the others. Backends with no
        device are skipped with ``no_device``, unless it is None."""
        out: list[Figure] = []
        for b in self.backends:
            if not b.runnable and no_device is not None:
                self.skip(group, b.name, no_device)
                continue
            try:
                out += figures_of(b)
            except Exception as e:
                traceback.print_exc()
                self.skip(group, b.name, f"failed: {type(e).__name__}: {e}")
        return out

    def worker(self, command: str, args: dict[str, Any], env: dict[str, str],
               timeout: float = 300.0) -> dict[str, Any]:
        """Run ``python -m benchmarks.worker command`` in a fresh process with ``env`` on
        top of this process's environment; its JSON answer."""
        full_env = {**os.environ, **env}
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.worker", command, json.dumps(args)],
            cwd=REPO_ROOT, env=full_env, capture_output=True, text=True, timeout=timeout,
            check=False)
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"worker {command} failed ({proc.returncode}): "
                               f"{proc.stderr.strip()[-2000:]}")
        answer: dict[str, Any] = json.loads(lines[-1])
        return answer


Group = Callable[[Context], list[Figure]]


def _groups() -> dict[int, tuple[str, Group]]:
    # Imported here: each group module imports kernels and backends it alone needs.
    from benchmarks import (
        batches,
        cpu_backends,
        growth,
        hot_path,
        kernel_throughput,
        lines,
        obtain,
        peers,
        remote,
        store,
        tune,
    )
    return {
        1: ("Hot path", hot_path.run),
        2: ("Obtaining a kernel", obtain.run),
        3: ("Against the peers' caches", peers.run),
        4: ("Batches", batches.run),
        5: ("Store", store.run),
        6: ("Kernel throughput", kernel_throughput.run),
        7: ("Growth", growth.run),
        8: ("Autotune", tune.run),
        9: ("Beyond one machine", remote.run),
        10: ("Lines", lines.run),
        11: ("CPU backends", cpu_backends.run),
    }


GROUPS: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
"""The figure groups, in report order."""


def _discover(only: str | None, skips: list[Skip]) -> list[Backend]:
    from cubecl_server.plugins.registry import registry

    found: list[Backend] = []
    for status in registry().backends():
        if only is not None and status.name != only:
            continue
        if only is None and status.distribution not in PROJECT_DISTRIBUTIONS:
            skips.append(Skip(0, status.name, f"from {status.distribution}, not one of the "
                                              "project's backends: `--backend "
                                              f"{status.name}` benchmarks it"))
            continue
        if status.status == "ok":
            found.append(Backend(status.name, status.distribution, status.version,
                                 tuple(status.devices), True))
        elif status.status == "unavailable" and status.name == "cuda":
            # No GPU here: its compile path still runs (NVRTC needs no device).
            found.append(Backend(status.name, status.distribution, status.version, (), False))
            skips.append(Skip(0, status.name, f"no device ({status.reason}): group 2 only, "
                                              "on the plugin's compile-only client"))
        else:
            skips.append(Skip(0, status.name, f"{status.status}: {status.reason}"))
    if only is not None and not any(b.name == only for b in found):
        if not any(s.backend == only for s in skips):
            skips.append(Skip(0, only, "no such backend is installed"))
    return found


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m benchmarks`` and ``cubecl-server bench``."""
    parser.add_argument("--backend", help="benchmark only this backend (default: every "
                                          "installed backend that can run here)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats and smaller sizes (under 3 minutes)")
    parser.add_argument("--output", default=str(REPO_ROOT / "BENCHMARKS.md"),
                        help="where to write the report (default: BENCHMARKS.md in the repo)")
    parser.add_argument("--group", type=int, action="append", choices=GROUPS,
                        help="run only this group (repeatable; default: all)")


def run_benchmarks(backend: str | None, quick: bool, output: Path,
                   groups: Sequence[int] | None = None) -> int:
    """Run the figure groups and write the report to ``output``; the exit code (1 when
    a group failed for a backend, 0 otherwise)."""
    from benchmarks.report import environment_info, write_report

    chosen = sorted(set(groups or GROUPS))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cubecl-bench-") as tmp:
        # Before any backend is discovered: this process's store is scratch too, and
        # the drivers' caches are off here as in the fresh processes (they would also
        # fill the user's own cache directories with the benchmarks' kernels).
        os.environ["CUBECL_CACHE_DIR"] = str(Path(tmp) / "harness-cache")
        os.environ.update(DRIVER_CACHES_OFF)
        profiler = TimestampProfiler()
        skips: list[Skip] = []
        backends = _discover(backend, skips)
        ctx = Context(backends, quick, Path(tmp), profiler, skips)
        info = environment_info(backends)
        figures: list[Figure] = []
        failed = False
        table = _groups()
        for number in chosen:
            title, run = table[number]
            print(f"group {number}: {title}", file=sys.stderr)
            with profiler.section(f"{number}. {title}"):
                try:
                    figures += run(ctx)
                except Exception as e:
                    traceback.print_exc()
                    ctx.skip(number, "all", f"failed: {type(e).__name__}: {e}")
                    failed = True
        failed = failed or any(s.reason.startswith("failed") for s in ctx.skips)
        elapsed = time.perf_counter() - started
        write_report(output, info, figures, ctx.skips, profiler, quick, elapsed)
    print(f"wrote {output} in {elapsed:.0f} s", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks``: parse the options and run."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description="Benchmark cubecl-server; writes BENCHMARKS.md.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run_benchmarks(args.backend, args.quick, Path(args.output), args.group)
