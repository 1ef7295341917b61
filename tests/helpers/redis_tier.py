"""What the shared-tier tests share: the fleet's secret, a machine (a cache directory),
a kernel launched and checked there, the tier's warnings, and the workload a fresh
process runs against a server."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from cubecl_server.client import ComputeClient, create_client, recording
from cubecl_server.config import reload_config
from cubecl_server.kernel import CubeCount, CubeDim
from helpers import kernels

SECRET = "fleet-secret-for-the-redis-tests"


def machine_client(root: Path, monkeypatch: pytest.MonkeyPatch, backend: str = "cpu"
                   ) -> ComputeClient:
    """A client on a machine whose local cache is ``root`` (empty when new)."""
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(root))
    reload_config()
    return create_client(backend)


def launch_scale(c: ComputeClient, dim: int, n: int = 1003, k: float = -1.5) -> str:
    """Launch ``scale`` with cubes of ``dim`` on fresh data with edge values, check it
    against NumPy, and return how the kernel was obtained."""
    rng = np.random.default_rng(dim)
    a = rng.standard_normal(n).astype(np.float32)
    a[:4] = [np.inf, -0.0, 3.0e38, -1e-45]
    out = c.empty(n, np.float32)
    with recording(c) as recs, np.errstate(over="ignore"):
        kernels.scale.launch(c, CubeCount(-(-n // dim)), CubeDim(dim), c.create(a), out, k)
    got = c.read(out)
    with np.errstate(over="ignore"):
        want = a * np.float32(k)
    assert np.array_equal(got, want), f"scale in cubes of {dim} is wrong"
    return recs[0].outcome.value if recs else "held"


def tier_warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    """The warnings this process logged that contain ``text``."""
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and text in r.getMessage()]


# Runs two kernels on uneven sizes and edge values of the backend it is formatted with,
# checks them against NumPy, and prints the outcome of every kernel it obtained.
WORKLOAD = """
import json
import numpy as np
from helpers import kernels
from cubecl_server.client import create_client, recording
from cubecl_server.kernel import CubeCount, CubeDim

rng = np.random.default_rng({seed})
n = 1003
a = rng.standard_normal(n).astype(np.float32)
a[:3] = [np.inf, -0.0, 1e-45]
b = rng.integers(-2**31, 2**31 - 8, n, dtype=np.int32)
c = create_client({backend!r})
with recording(c) as recs:
    out = c.empty(n, np.float32)
    kernels.scale.launch(c, CubeCount(-(-n // 64)), CubeDim(64), c.create(a), out, 0.75)
    scaled = c.read(out)
    outi = c.empty(n, np.int32)
    kernels.add_const.launch(c, CubeCount(-(-n // 32)), CubeDim(32), c.create(b), outi, C=-9)
    added = c.read(outi)
ok = bool(np.array_equal(scaled, a * np.float32(0.75)) and np.array_equal(added, b - 9))
print(json.dumps({{"ok": ok, "outcomes": [r.outcome.value for r in recs]}}))
"""
