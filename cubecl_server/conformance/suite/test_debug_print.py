"""``debug_print`` against Python's formatting: in a fresh process (what a kernel prints
goes to the process's standard output, through the target's own ``printf`` where it
has one), each unit below the bound prints one line, in any order: an f-string's text
and values, integers at the 64-bit extremes, floats as C's ``%g`` (signed zero,
infinities, NaN, subnormal, large), a bool as 1 or 0, and ``%`` and quotes as they are.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cubecl_server.conformance.plugin import Subject
from cubecl_server.conformance.support import run_child

pytestmark = [pytest.mark.usefixtures("cubecl_isolated"), pytest.mark.requires("debug_print")]

CHILD = """
import json, sys
import numpy as np
from cubecl_server.client import create_client
from cubecl_server.conformance import kernels
a, k, n = json.loads(sys.argv[1])
c = create_client({backend!r}, {device!r})
kernels.printing.launch(c, -(-len(a) // 64), 64, c.create(np.array(a, np.float32)),
                        c.create(np.array(k, np.int64)), np.uint32(n))
c.sync()
"""


def test_each_unit_prints_its_line(cubecl_subject: Subject,
                                   cubecl_rng: np.random.Generator) -> None:
    m = 150
    a = (cubecl_rng.standard_normal(m) * 10.0 ** cubecl_rng.integers(-8, 9, m)).astype(
        np.float32)
    a[:7] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 3.0e38]
    k = cubecl_rng.integers(-(2**62), 2**62, m, dtype=np.int64)
    k[7:9] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max]
    n = m - int(cubecl_rng.integers(1, 20))  # the units past it print nothing
    code = CHILD.format(backend=cubecl_subject.backend, device=cubecl_subject.device)
    args = json.dumps([[float(x) for x in a], [int(x) for x in k], n], allow_nan=True)
    proc = run_child(f"import sys; sys.argv = ['child', {args!r}]\n" + code)
    want = sorted(f'unit {i}: a = {float(a[i]):g}, k = {k[i]} {int(a[i] > 0)} 100% "done"'
                  for i in range(n))
    got = sorted(proc.stdout.splitlines())
    assert got == want, (
        f"{len(got)} lines printed, {n} expected; the first that differ: "
        f"{[(g, w) for g, w in zip(got, want, strict=False) if g != w][:3]}")
