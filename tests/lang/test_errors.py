"""A refused kernel's error starts at the user's line: a short traceback ending at the
kernel's line, no frontend frames, no chained exception, and a suggestion for a
misspelt name or a NumPy/math function the language has."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.marks import marked_line

import cubecl_server.lang as cl
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import ABSOLUTE_POS, UNIT_POS_X, Array, f32, parse_kernel, u32

LANG = str(Path(cl.__file__).parent)


def marked(tag: str) -> int:
    """The line of this file that ends with the comment ``# <tag>``."""
    return marked_line(__file__, tag)


def refused(fn: Callable[..., Any]) -> KernelSyntaxError:
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn, {})
    return info.value


# ---------------------------------------------------------------- the traceback

SCRIPT = """\
import math

import numpy as np

from cubecl_server.client import create_client
from cubecl_server.lang import ABSOLUTE_POS, Array, CubeCount, CubeDim, f32, kernel


@kernel
def scale(x: Array[f32], out: Array[f32]) -> None:
    i = ABSOLUTE_POS
    out[i] = {mistake}


client = create_client("cpu")
a = client.create(np.ones(8, np.float32))
scale.launch(client, CubeCount(1), CubeDim(8), a, a)
"""
KERNEL_LINE = 12
LAUNCH_LINE = 17
FRAME = re.compile(r'^  File "(.+)", line (\d+), in (.+)$')


@pytest.mark.parametrize("mistake, message", [
    ("x[i] * UNIT_POS_XX", "name `UNIT_POS_XX` is not defined; did you mean `UNIT_POS_X`? "
                           "(import it from cubecl_server.lang)"),
    ("np.exp(x[i])", "`np.exp` is a NumPy function, which runs in Python, not in kernels: "
                     "use `exp` from cubecl_server.lang"),
    # Raised while the frontend handles a typing error: no chain may show.
    ("x[i] + i", "type mismatch in `x[i] + i`: f32 vs u32"),
])
def test_the_printed_traceback_starts_and_ends_at_the_users_code(
        tmp_path: Path, mistake: str, message: str) -> None:
    script = tmp_path / "user_kernel.py"
    script.write_text(SCRIPT.format(mistake=mistake))
    assert script.read_text().splitlines()[KERNEL_LINE - 1].endswith(mistake)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    frames = [m.groups() for m in map(FRAME.match, lines) if m]
    assert frames[0] == (str(script), str(LAUNCH_LINE), "<module>"), done.stderr
    assert frames[-1] == (str(script), str(KERNEL_LINE), "scale"), done.stderr
    assert not [f for f in frames if f[0].startswith(LANG)], done.stderr
    assert len(frames) <= 3, done.stderr
    # The kernel's line is quoted under its frame, as Python quotes any line.
    assert lines[lines.index(f'  File "{script}", line {KERNEL_LINE}, in scale') + 1] \
        .strip() == f"out[i] = {mistake}"
    assert "During handling" not in done.stderr and "direct cause" not in done.stderr
    assert lines[-1].startswith(f"cubecl_server.errors.KernelSyntaxError: {script}:"
                                f"{KERNEL_LINE}: {message}")


def mismatch(a: Array[f32]):
    a[0] = a[1] + ABSOLUTE_POS  # <mismatch>


def test_parse_kernel_raises_from_the_kernels_line() -> None:
    err = refused(mismatch)
    frames = traceback.extract_tb(err.__traceback__)
    assert (frames[-1].filename, frames[-1].lineno, frames[-1].name) == (
        __file__, marked("mismatch"), "mismatch")
    assert frames[-1].line == "a[0] = a[1] + ABSOLUTE_POS  # <mismatch>"
    assert not [f for f in frames if f.filename.startswith(LANG)]
    assert err.__cause__ is None and err.__suppress_context__
    assert str(err) == f"{__file__}:{marked('mismatch')}: {err.message}"


# ---------------------------------------------------------------- suggestions

def misspelt_builtin(a: Array[f32]):
    a[UNIT_POS_XX] = 1.0  # noqa: F821  # <misspelt-builtin>


def builtin_not_imported(a: Array[f32]):
    a[CUBE_DIM_Y] = 1.0  # noqa: F821


def misspelt_local(a: Array[f32], n: u32):
    total = 0.0
    for j in range(n):
        total += a[j]
    a[0] = totl  # noqa: F821


def misspelt_module_attribute(a: Array[f32]):
    a[cl.UNIT_POS_XX] = 1.0


def nothing_like_it(a: Array[f32]):
    a[0] = qqqqqqqq  # noqa: F821


def test_a_misspelt_name_gets_the_closest_one() -> None:
    assert UNIT_POS_X is not None  # imported here: the suggestion needs no import
    err = refused(misspelt_builtin)
    assert err.line == marked("misspelt-builtin")
    assert err.message == "name `UNIT_POS_XX` is not defined; did you mean `UNIT_POS_X`?"
    assert refused(builtin_not_imported).message == (
        "name `CUBE_DIM_Y` is not defined: it is part of the kernel language; import it "
        "from cubecl_server.lang")
    assert refused(misspelt_local).message == \
        "name `totl` is not defined; did you mean `total`?"
    assert refused(misspelt_module_attribute).message == (
        "module `cubecl_server.lang` has no attribute `UNIT_POS_XX`; did you mean "
        "`cl.UNIT_POS_X`?")
    assert refused(nothing_like_it).message == "name `qqqqqqqq` is not defined"


def numpy_exp(a: Array[f32]):
    a[0] = np.exp(a[1])


def math_exp(a: Array[f32]):
    a[0] = math.exp(a[1])


def numpy_minimum(a: Array[f32]):
    a[0] = np.minimum(a[1], a[2])


def numpy_where(a: Array[f32]):
    a[0] = np.where(a[1] > 0.0, a[1], a[2])


def numpy_cast(a: Array[f32], n: u32):
    a[0] = np.float32(n)


def numpy_without_counterpart(a: Array[f32]):
    a[0] = np.cbrt(a[1])


@pytest.mark.parametrize("fn, message", [
    (numpy_exp, "`np.exp` is a NumPy function, which runs in Python, not in kernels: use "
                "`exp` from cubecl_server.lang"),
    (math_exp, "`math.exp` is a math function, which runs in Python, not in kernels: use "
               "`exp` from cubecl_server.lang"),
    (numpy_minimum, "use `min` from cubecl_server.lang"),
    (numpy_where, "use `select` from cubecl_server.lang"),
    (numpy_cast, "`np.float32` is a NumPy type, not a kernel cast: use `f32` from "
                 "cubecl_server.lang, e.g. f32(x)"),
    (numpy_without_counterpart, "call to unknown function `np.cbrt`"),
])
def test_numpy_and_math_point_at_the_languages_own(fn: Callable[..., Any],
                                                   message: str) -> None:
    assert message in refused(fn).message

