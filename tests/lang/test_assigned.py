"""Definite assignment: a local read where some path left it unassigned is refused at
compile time, naming the read and the assignment that may not have run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers.marks import marked_line

from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import ABSOLUTE_POS, Array, Comptime, cube_fn, f32, parse_kernel, u32

SOURCE_LINES = Path(__file__).read_text().splitlines()


def marked(tag: str) -> int:
    """The line of this file that ends with the comment ``# <tag>``."""
    return marked_line(__file__, tag)


def refused(fn: Callable[..., Any], **comptime: Any) -> KernelSyntaxError:
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn, comptime)
    return info.value


# ---------------------------------------------------------------- refused

def if_without_else(a: Array[f32], n: u32):
    i = ABSOLUTE_POS
    if i < n:  # <if-1>
        x = a[i]  # <assign-1>
    a[0] = x  # <read-1>


def elif_without_else(a: Array[f32], n: u32):
    i = ABSOLUTE_POS
    if i < n:
        x = 1.0
    elif i < 2 * n:  # <if-2>
        x = 2.0  # <assign-2>
    a[0] = x  # <read-2>


def only_in_loop_body(a: Array[f32], n: u32):
    for j in range(n):  # <loop-3>
        x = a[j]  # <assign-3>
    a[0] = x  # <read-3>


def loop_variable_after_loop(a: Array[f32], n: u32):
    for j in range(n):  # <loop-4>
        a[j] = 0.0
    a[0] = f32(j)  # <read-4>


def after_break(a: Array[f32], n: u32):
    x = 0.0
    while x < 10.0:
        if a[0] > 1.0:
            break  # <break-5>
            y = 2.0  # <assign-5>
        x += 1.0
    a[0] = y  # <read-5>


def after_break_in_while_true(a: Array[f32], n: u32):
    while True:  # <loop-6>
        if a[0] > 1.0:
            break
        y = 2.0  # <assign-6>
        break
    a[0] = y  # <read-6>


def augmented_in_branch(a: Array[f32], n: u32):
    if ABSOLUTE_POS < n:  # <if-7>
        s = 1.0  # <assign-7>
    s += 1.0  # <read-7>


@cube_fn
def helper_with_gap(v: f32) -> f32:
    if v > 0.0:  # <if-8>
        w = v  # <assign-8>
    return w  # <read-8>


def calls_helper_with_gap(a: Array[f32]):
    a[0] = helper_with_gap(a[1])


@pytest.mark.parametrize("fn, tag, why", [
    (if_without_else, "1", "is in a branch of the `if` on line {if}"),
    (elif_without_else, "2", "is in a branch of the `if` on line {if}"),
    (only_in_loop_body, "3", "is in the body of the `for` loop on line {loop}, which "
                             "may run zero times"),
    (after_break, "5", "comes after the `break` on line {break}, so it never runs"),
    (after_break_in_while_true, "6", "does not run before every `break` of the "
                                     "`while True` loop on line {loop}"),
    (augmented_in_branch, "7", "is in a branch of the `if` on line {if}"),
    (calls_helper_with_gap, "8", "is in a branch of the `if` on line {if}"),
])
def test_a_read_that_may_find_no_value_is_refused(fn: Callable[..., Any], tag: str,
                                                  why: str) -> None:
    err = refused(fn)
    assert (err.file, err.line) == (__file__, marked(f"read-{tag}"))
    lines = {k: marked(f"{k}-{tag}") for k in ("if", "loop", "break")
             if any(text.rstrip().endswith(f"# <{k}-{tag}>") for text in SOURCE_LINES)}
    assert f"its assignment on line {marked(f'assign-{tag}')} " in err.message
    assert why.format(**lines) in err.message
    assert err.message.startswith("`")  # names the variable first
    assert str(err).startswith(f"{__file__}:{marked(f'read-{tag}')}: ")


def test_the_variable_of_a_loop_is_unassigned_after_it() -> None:
    err = refused(loop_variable_after_loop)
    assert err.line == marked("read-4")
    assert err.message.startswith("`j` may be read before it is assigned: it is the "
                                  f"variable of the `for` loop on line {marked('loop-4')}")


# ---------------------------------------------------------------- accepted

def both_branches_assign(a: Array[f32], n: u32):
    if ABSOLUTE_POS < n:
        x = 1.0
    elif ABSOLUTE_POS < 2 * n:
        x = 2.0
    else:
        x = 3.0
    a[0] = x


def assigned_before_and_inside(a: Array[f32], n: u32):
    x = 0.0
    if ABSOLUTE_POS < n:
        x = a[ABSOLUTE_POS]
    for j in range(n):
        x += a[j]
    a[0] = x


def read_in_the_iteration_that_assigns(a: Array[f32], n: u32):
    for j in range(n):
        x = a[j]
        if x > 0.0:
            y = x * 2.0
            a[j] = y
        a[j] = x


def branch_that_leaves_does_not_count(a: Array[f32], n: u32):
    if ABSOLUTE_POS >= n:
        return
    else:
        x = a[ABSOLUTE_POS]
    a[0] = x


def assigned_before_every_break(a: Array[f32], n: u32):
    while True:
        if a[0] > 1.0:
            y = 1.0
            break
        y = 2.0
        break
    a[0] = y


def constant_branch_taken(a: Array[f32], *, DEBUG: Comptime[bool]):
    if DEBUG:
        x = 1.0
    if DEBUG:
        a[0] = x


@cube_fn
def helper_both_branches(v: f32) -> f32:
    if v > 0.0:
        w = v
    else:
        w = -v
    return w


def calls_helper_both_branches(a: Array[f32]):
    a[0] = helper_both_branches(a[1])


def scalar_parameter_reassigned(a: Array[f32], s: f32):
    if s > 0.0:
        s = 0.0
    a[0] = s


@pytest.mark.parametrize("fn, comptime", [
    (both_branches_assign, {}),
    (assigned_before_and_inside, {}),
    (read_in_the_iteration_that_assigns, {}),
    (branch_that_leaves_does_not_count, {}),
    (assigned_before_every_break, {}),
    (constant_branch_taken, {"DEBUG": True}),
    (constant_branch_taken, {"DEBUG": False}),
    (calls_helper_both_branches, {}),
    (scalar_parameter_reassigned, {}),
])
def test_a_read_every_path_assigns_compiles(fn: Callable[..., Any],
                                            comptime: dict[str, Any]) -> None:
    assert parse_kernel(fn, comptime).name == fn.__name__
