"""What the bundle tests share: the fleet's secret, a workload run as a fresh machine,
and ``cubecl-server`` run in this process."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubecl_server.cli import main
from helpers.processes import last_json_line, run_python

SECRET = "fleet-secret-for-the-bundle-tests"

# Runs two kernels on uneven sizes and edge values, checks them against NumPy, and
# prints the outcome of every kernel it obtained.
WORKLOAD = """
import json
import numpy as np
from helpers import kernels
from cubecl_server.client import create_client, recording
from cubecl_server.kernel import CubeCount, CubeDim

rng = np.random.default_rng({seed})
n = 1003
a = rng.standard_normal(n).astype(np.float32)
a[:5] = [np.inf, -np.inf, -0.0, 3.4e38, 1e-45]
b = rng.integers(-2**31, 2**31 - 8, n, dtype=np.int32)
c = create_client("cpu")
with recording(c) as recs:
    out = c.empty(n, np.float32)
    kernels.scale.launch(c, CubeCount(-(-n // 64)), CubeDim(64), c.create(a), out, -2.5)
    scaled = c.read(out)
    outi = c.empty(n, np.int32)
    kernels.add_const.launch(c, CubeCount(-(-n // 128)), CubeDim(128), c.create(b), outi,
                             C=7)
    added = c.read(outi)
ok = bool(np.array_equal(scaled, a * np.float32(-2.5)) and np.array_equal(added, b + 7))
print(json.dumps({{"ok": ok, "outcomes": {{r.kernel: r.outcome.value for r in recs}}}}))
"""


def run_workload(cache: Path, seed: int, **env: str) -> dict[str, object]:
    """Run :data:`WORKLOAD` in a fresh process on the machine whose cache is ``cache``
    and return its report, after checking that it computed right."""
    proc = run_python(WORKLOAD.format(seed=seed),
                      env={"CUBECL_CACHE_DIR": str(cache), "CUBECL_STORE_SECRET": SECRET,
                           "CUBECL_BACKEND": "cpu", **env})
    report = last_json_line(proc)
    assert report["ok"], f"the workload computed a wrong result: {report}"
    return report


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``cubecl-server ARGS`` in this process: its exit code and everything it printed."""
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err
