"""``debug_print`` in the language: the IR it makes (texts around values, as print()
lays out its arguments), the errors naming the line, and a device without the
capability refusing the kernel at launch, naming the line. What each backend prints is
the conformance suite's (``test_debug_print.py``, in a fresh process)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers.marks import marked_line

from cubecl_server import ir
from cubecl_server.device import Capabilities
from cubecl_server.errors import KernelSyntaxError, LaunchError
from cubecl_server.kernel import CubeDim
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    Line,
    debug_print,
    e4m3,
    f32,
    kernel,
    parse_kernel,
)
from cubecl_server.validation import check_launch


def _show(a: Array[f32]) -> None:
    i = ABSOLUTE_POS
    debug_print("at", i, f"a = {a[i]}!", 7)  # <show>


def test_texts_surround_the_values_as_print_lays_them_out() -> None:
    (s,) = [n for n in ir.walk(parse_kernel(_show).body) if isinstance(n, ir.DebugPrint)]
    assert s.text == ("at ", " a = ", "! ", "")
    assert [a.type for a in s.args] == [ir.Elem.U32, ir.Elem.F32, ir.Elem.I32]


def _keyword(a: Array[f32]) -> None:
    debug_print(a[0], sep=",")  # <keyword>


def _spec(a: Array[f32]) -> None:
    debug_print(f"{a[0]:.3f}")  # <spec>


def _line(a: Array[Line[f32]]) -> None:
    debug_print(a[0])  # <line>


def _mini(a: Array[e4m3]) -> None:
    debug_print(a[0])  # <mini>


def _unicode(a: Array[f32]) -> None:
    debug_print("\u00e9t\u00e9", a[0])  # <unicode>


@pytest.mark.parametrize(("fn", "tag", "fragment", "comptime"), [
    (_keyword, "keyword", "debug_print() takes no keywords", {}),
    (_spec, "spec", "no conversion or format spec", {}),
    (_line, "line", "print its elements, e.g. a[0][0], a[0][1]", {"line_size": 4}),
    (_mini, "mini", "print f32(a[0])", {}),
    (_unicode, "unicode", "prints printable ASCII text", {}),
])
def test_misuse_names_the_line(fn: Callable[..., Any], tag: str, fragment: str,
                               comptime: dict[str, Any]) -> None:
    with pytest.raises(KernelSyntaxError) as info:
        kernel(fn).ir(**comptime)
    assert fragment in info.value.message
    assert info.value.line == marked_line(__file__, tag)


def test_a_device_that_cannot_print_refuses_at_launch_naming_the_line() -> None:
    k = kernel(_show)
    caps = Capabilities(f64=False, f16=False, debug_print=False)
    line = marked_line(__file__, "show")
    with pytest.raises(LaunchError, match=rf"test_prints.py:{line}: kernel '_show' uses "
                                          r"debug_print, and the device cannot print"):
        check_launch(k.ir(), CubeDim(32), caps,
                     lambda test: k.first_use({}, test))
    check_launch(k.ir(), CubeDim(32), Capabilities(f64=False, f16=False, debug_print=True))
