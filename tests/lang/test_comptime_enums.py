"""Comptime enums: ``*, MODE: Comptime[Mode]`` with ``Mode`` an ``enum.Enum``, compared
with members in the kernel and decided at compile time; each member a kernel of its
own. Run on the cpu backend against NumPy; the errors name the line and the fix."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers.marks import marked_line

from cubecl_server import ir
from cubecl_server.client import create_client
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import ABSOLUTE_POS, Array, Comptime, f32, kernel, parse_kernel


class Mode(enum.Enum):
    """What :func:`_apply` does."""

    ADD = "add"
    MUL = "mul"
    NEG = 3


class Other(enum.Enum):
    """An enum with a member of the same name as one of Mode's."""

    ADD = "add"


class Width(enum.IntEnum):
    """An IntEnum: its members are ints in arithmetic too."""

    NARROW = 2
    WIDE = 5


@kernel
def _apply(a: Array[f32], b: Array[f32], out: Array[f32], *, MODE: Comptime[Mode],
           WIDTH: Comptime[Width] = Width.NARROW) -> None:
    i = ABSOLUTE_POS
    if i < len(out):
        if MODE == Mode.ADD:
            out[i] = a[i] + b[i]
        elif MODE is Mode.MUL and WIDTH != Width.WIDE:
            out[i] = a[i] * b[i]
        elif MODE is not Mode.NEG:
            out[i] = a[i] * b[i] * WIDTH
        else:
            out[i] = -a[i]


def test_each_member_is_a_kernel_of_its_own_against_numpy() -> None:
    c = create_client("cpu")
    rng = np.random.default_rng()
    n = 1001
    a, b = (rng.uniform(-4, 4, n).astype(np.float32) for _ in range(2))
    want = {(Mode.ADD, Width.NARROW): a + b, (Mode.MUL, Width.NARROW): a * b,
            (Mode.MUL, Width.WIDE): a * b * np.float32(5), (Mode.NEG, Width.WIDE): -a}
    digests = set()
    for (mode, width), expected in want.items():
        out = c.empty(n, np.float32)
        _apply.launch(c, -(-n // 64), 64, c.create(a), c.create(b), out, MODE=mode,
                      WIDTH=width)
        np.testing.assert_array_equal(c.read(out), expected, err_msg=f"{mode}, {width}")
        digests.add(_apply.kernel_id({"MODE": mode, "WIDTH": width}).digest)
    assert len(digests) == len(want)
    # The untaken branches are not in the IR: one store, and the IR names the member.
    k = _apply.ir(MODE=Mode.NEG)
    assert k.comptime == (("MODE", "Mode.NEG"), ("WIDTH", "Width.NARROW"))
    assert sum(isinstance(n, ir.Store) for n in ir.walk(k.body)) == 1


def test_a_value_that_is_not_a_member_is_refused_naming_the_members() -> None:
    c = create_client("cpu")
    x = c.create(np.zeros(4, np.float32))
    for wrong in ("add", Other.ADD, 3):
        with pytest.raises(TypeError, match=r"`MODE` of kernel `_apply` is Comptime\[Mode\] "
                           r"\(one of Mode.ADD, Mode.MUL, Mode.NEG\)"):
            _apply.launch(c, 1, 4, x, x, x, MODE=wrong)
    with pytest.raises(TypeError, match=r"Comptime\[\.\.\.\] takes int, bool, float, "
                                        r"dtype or an Enum class"):
        Comptime[dict]


def _bare(out: Array[f32], *, MODE: Comptime[Mode]) -> None:
    out[0] = MODE  # <bare>


def _other(out: Array[f32], *, MODE: Comptime[Mode]) -> None:
    if MODE == Other.ADD:  # <other>
        out[0] = 1.0


def _runtime(out: Array[f32], *, MODE: Comptime[Mode]) -> None:
    if MODE == out[0]:  # <runtime>
        out[0] = 1.0


def _ordered(out: Array[f32], *, MODE: Comptime[Mode]) -> None:
    if MODE < Mode.MUL:  # <ordered>
        out[0] = 1.0


@pytest.mark.parametrize(("fn", "tag", "fragment"), [
    (_bare, "bare", "`MODE` is a comptime Mode: compare it with a member "
                    "(`if MODE == Mode.ADD:`)"),
    (_runtime, "runtime", "`out[0]` is compared with an enum member, and is not one"),
    (_ordered, "ordered", "compared with ==, !=, is or is not"),
])
def test_misuse_names_the_line_and_the_fix(fn: Callable[..., Any], tag: str,
                                           fragment: str) -> None:
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn, {"MODE": Mode.ADD})
    assert fragment in info.value.message
    assert info.value.line == marked_line(__file__, tag)


def test_members_of_another_enum_are_never_equal() -> None:
    k = parse_kernel(_other, {"MODE": Mode.ADD})
    assert not any(isinstance(n, ir.Store) for n in ir.walk(k.body))
