"""Helpers the suite's tests share: random inputs with edge values, comparisons that
name the seed, and fresh processes for the compile path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np

from cubecl_server import ir
from cubecl_server.kernel import CubeCount
from cubecl_server.memory_management.handle import numpy_dtype

__all__ = [
    "FLOATS", "INTS", "cubes_for", "random_size", "values", "check",
    "run_child", "child_records", "TOLERANCE",
]

FLOATS = (ir.Elem.F16, ir.Elem.F32, ir.Elem.F64)
INTS = (ir.Elem.I32, ir.Elem.I64, ir.Elem.U32, ir.Elem.U64)

TOLERANCE: dict[ir.Elem, tuple[float, float]] = {
    ir.Elem.F16: (2e-3, 1e-3), ir.Elem.F32: (2e-6, 1e-6), ir.Elem.F64: (1e-12, 1e-14),
}
"""(rtol, atol) of each float type for results that are rounded, not exact."""


def cubes_for(n: int, units: int) -> CubeCount:
    """Enough cubes of ``units`` units for ``n`` elements."""
    return CubeCount(max(1, -(-n // units)))


def random_size(rng: np.random.Generator, dim: int, at_least: int = 2) -> int:
    """A size that is not a multiple of ``dim``, of ``at_least`` to ``at_least + 3`` cubes."""
    return int(dim * rng.integers(at_least, at_least + 3) + rng.integers(1, dim))


def minifloat_codes(elem: ir.Elem) -> int:
    """How many codes the minifloat ``elem`` has: 256, 64 for the 6-bit formats, 16 for
    the 4-bit one (in the low bits of their byte; the others are no value)."""
    return {ir.Elem.E2M3: 64, ir.Elem.E3M2: 64, ir.Elem.E2M1: 16}.get(elem, 256)


def values(rng: np.random.Generator, elem: ir.Elem, n: int, *, edges: bool = True,
           low: float | None = None, high: float | None = None) -> np.ndarray:
    """``n`` random values of ``elem``; with ``edges`` the first ones are the type's
    edge values (0, negative, NaN, inf, the extremes) in random places (a minifloat's
    are random bytes, which hold them all)."""
    dt = numpy_dtype(elem)
    if elem is ir.Elem.BOOL:
        return rng.integers(0, 2, n).astype(bool)
    if elem.is_minifloat:
        # Any code is a value (NaN, infinity, subnormals and both zeros among them).
        return rng.integers(0, minifloat_codes(elem), n, dtype=np.uint8).view(dt)
    if elem.is_float:
        lo, hi = (-100.0 if low is None else low), (100.0 if high is None else high)
        out = rng.uniform(lo, hi, n).astype(dt)
        special = [0.0, -0.0, -1.5, np.nan, np.inf, -np.inf]
    else:
        info = np.iinfo(dt)
        lo_i = int(info.min if low is None else low)
        hi_i = int(info.max if high is None else high)
        out = rng.integers(lo_i, hi_i, n, dtype=dt, endpoint=True)
        special = [0, 1, info.max, info.min, info.max - 1]
        if elem.is_signed:
            special += [-1, info.min + 1]
    if edges and n >= len(special):
        keep = [s for s in special if low is None or (not np.isnan(s) and low <= s <= high)]
        where = rng.choice(n, len(keep), replace=False)
        out[where] = np.array(keep, dtype=object).astype(dt) if keep else out[where]
    return out


def check(got: np.ndarray, want: np.ndarray, what: str, seed: int, *,
          elem: ir.Elem | None = None, exact: bool = True, inputs: dict[str, Any] | None = None,
          scale: np.ndarray | None = None) -> None:
    """Assert ``got`` equals ``want`` (NaN equal to NaN; within :data:`TOLERANCE` unless
    ``exact``), with a message naming ``what``, the seed and the first wrong elements.

    ``scale`` (the magnitude of the terms a result was computed from) widens the
    absolute tolerance where cancellation makes a relative one meaningless.
    """
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise AssertionError(f"{what}: result has shape {got.shape}, expected {want.shape} "
                             f"(seed {seed})")
    if any(d.kind == "f" or d.name.startswith(("float8", "float6", "float4"))
           for d in (got.dtype, want.dtype)):
        g, w = got.astype(np.float64), want.astype(np.float64)
        if exact or elem is None:
            ok = (g == w) | (np.isnan(g) & np.isnan(w))
        else:
            rtol, atol = TOLERANCE.get(elem, (1e-6, 1e-6))
            if scale is not None:
                atol = atol + rtol * np.abs(scale.astype(np.float64))
            ok = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = got == want
    if bool(np.all(ok)):
        return
    bad = np.argwhere(~np.asarray(ok))[:5]
    lines = [f"{what}: {int(np.sum(~ok))} of {ok.size} elements wrong (seed {seed})"]
    for idx in bad:
        t = tuple(int(j) for j in idx)
        extra = "".join(f", {k}={np.asarray(v)[t]!r}" for k, v in (inputs or {}).items()
                        if np.shape(v) == got.shape)
        lines.append(f"  at {t}: got {got[t]!r}, expected {want[t]!r}{extra}")
    raise AssertionError("\n".join(lines))


def run_child(code: str, env: dict[str, str] | None = None, timeout: float = 300
              ) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with this process's environment (so the
    cache directory and the installed plugins are the same); raises on failure."""
    full = {**os.environ, **(env or {})}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"the fresh process failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


LAUNCH_AND_RECORD = """
import json, numpy as np
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.client import create_client, recording
from cubecl_server.conformance import kernels
c = create_client({backend!r}, {device!r})
n = 1000
a = c.create(np.arange(n, dtype=np.float32)); out = c.empty(n, np.float32)
with recording(c) as recs:
    for d in {dims!r}:
        kernels.scale.launch(c, CubeCount(-(-n // d)), CubeDim(d), a, out, 2.0)
        got = c.read(out)
        assert np.array_equal(got, np.arange(n, dtype=np.float32) * 2), got[:8]
print(json.dumps([r.to_dict() for r in recs]))
"""


def child_records(backend: str, device: int | None, dims: list[int],
                  env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Launch ``scale`` once per cube dim in ``dims`` in a fresh process (checking the
    result) and return the compilation records it made, as dicts."""
    proc = run_child(LAUNCH_AND_RECORD.format(backend=backend, device=device, dims=dims), env)
    records: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return records
