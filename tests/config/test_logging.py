"""CUBECL_LOG shows the compile path; the library stays quiet otherwise."""

from __future__ import annotations

import pytest
from helpers.processes import run_python

from cubecl_server.logging import configure_logging

LAUNCH = """
import numpy as np
from cubecl_server.lang import CubeCount, CubeDim
from cubecl_server.client import create_client
from helpers import kernels
c = create_client("cpu")
a = c.create(np.ones(10, np.float32)); out = c.empty(10, np.float32)
kernels.scale.launch(c, CubeCount(1), CubeDim(16), a, out, 2.0)
"""


def test_debug_level_shows_each_miss_and_default_shows_nothing() -> None:
    shown = run_python(LAUNCH, {"CUBECL_LOG": "debug"})
    assert "cubecl_server.compiler DEBUG compiled kernel scale on cpu" in shown.stderr
    quiet = run_python(LAUNCH)
    assert quiet.stderr == ""


def test_a_wrong_level_names_the_variable() -> None:
    with pytest.raises(ValueError, match="CUBECL_LOG='loud'"):
        configure_logging("loud")
