"""BENCHMARKS.md: the machine, the versions, the driver caches, then every figure."""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.figures import Figure, Skip
from benchmarks.harness import DRIVER_CACHES_OFF, Backend
from cubecl_server.timestamp_profiler import TimestampProfiler

__all__ = ["environment_info", "write_report"]

_CACHE_VARIABLES = ("POCL_KERNEL_CACHE", "POCL_CACHE_DIR", "MESA_SHADER_CACHE_DISABLE",
                    "MESA_SHADER_CACHE_DIR", "CUDA_CACHE_DISABLE", "PYOPENCL_NO_CACHE")

_GROUP_TITLES = {
    1: "Hot path", 2: "Obtaining a kernel", 3: "Against the peers' caches", 4: "Batches",
    5: "Store", 6: "Kernel throughput", 7: "Growth", 8: "Autotune",
    9: "Beyond one machine", 10: "Lines", 11: "CPU backends",
}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _version(module: str) -> str:
    try:
        mod = __import__(module)
    except ImportError:
        return "not installed"
    return str(getattr(mod, "__version__", getattr(mod, "VERSION_TEXT", "installed")))


def _opencl_platforms() -> str:
    try:
        import pyopencl as cl

        return "; ".join(f"{p.name} {p.version} ({', '.join(d.name for d in p.get_devices())})"
                         for p in cl.get_platforms())
    except Exception as e:  # a missing ICD loader raises several types; we only report it
        return f"none ({type(e).__name__}: {e})"


def environment_info(backends: Sequence[Backend]) -> list[tuple[str, str]]:
    """What the report's first table shows: machine, versions, driver caches."""
    import numpy

    import cubecl_server

    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    rows = [
        ("date", time.strftime("%Y-%m-%d %H:%M %Z")),
        ("CPU", f"{_cpu_model()}, {os.cpu_count()} cores ({affinity} usable)"),
        ("memory", _memory()),
        ("load average at start", " ".join(f"{v:.2f}" for v in os.getloadavg())),
        ("OS", platform.platform()),
        ("Python", sys.version.split()[0]),
        ("NumPy", numpy.__version__),
        ("cubecl-server", cubecl_server.__version__),
        ("PyOpenCL", _version("pyopencl")),
        ("OpenCL platforms", _opencl_platforms()),
    ]
    for b in backends:
        devices = "; ".join(b.devices) if b.devices else "no device (compile-only)"
        rows.append((f"backend {b.name}", f"{b.distribution} {b.version}: {devices}"))
    for var in _CACHE_VARIABLES:
        rows.append((f"${var} (harness)", os.environ.get(var, "unset (driver default)")))
    off = ", ".join(f"{k}={v}" for k, v in DRIVER_CACHES_OFF.items())
    rows.append(("driver caches", f"off ({off}) in the harness and in every fresh process, "
                                  "except where group 3 says per row"))
    return rows


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cell(v: str) -> str:
        return v.replace("|", "\\|")
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def write_report(path: Path, info: Sequence[tuple[str, str]], figures: Sequence[Figure],
                 skips: Sequence[Skip], profiler: TimestampProfiler, quick: bool,
                 elapsed_s: float) -> None:
    """Write BENCHMARKS.md to ``path``."""
    mode = "quick (`--quick`)" if quick else "full"
    out = [
        "# Benchmarks",
        "",
        f"Written by `make bench` (`python -m benchmarks`), {mode} run, in {elapsed_s:.0f} s. "
        "Every figure is the median and spread over repeated samples taken in this run; "
        "every comparison is a ratio of samples taken in the same run, interleaved "
        "(the machine is shared, so absolute times drift between runs). Spreads: "
        "`[q1 - q3]` is the interquartile range, `[min - max]` for ratios.",
        "",
        "## Machine and versions",
        "",
        *_table(["", ""], info),
        "",
        "## Targets",
        "",
    ]
    targets = [[f"{f.group}. {f.title}", f.backend, t.name, t.value,
                "met" if t.met else "**missed**"] for f in figures for t in f.targets]
    out += _table(["figure", "backend", "target", "this run", ""], targets) if targets \
        else ["No target was measured in this run."]
    out.append("")
    if skips:
        out += ["## Skipped", ""]
        out += _table(["group", "backend", "why"],
                      [["all" if s.group == 0 else str(s.group), s.backend, s.reason]
                       for s in skips])
        out.append("")
    for group, title in _GROUP_TITLES.items():
        mine = [f for f in figures if f.group == group]
        if not mine:
            continue
        out += [f"## {group}. {title}", ""]
        for f in mine:
            out += [f"### {f.title} ({f.backend})", "",
                    f"Measured: {f.measured.rstrip('.')}.", "",
                    f"Not measured: {f.not_measured.rstrip('.')}.", ""]
            out += _table(f.columns, f.rows)
            out.append("")
            for note in f.notes:
                out += [note, ""]
    out += ["## Time spent", "", "```", profiler.report(), "```", ""]
    path.write_text("\n".join(out))
