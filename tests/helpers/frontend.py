"""The kernel language frontend's tests share these: a kernel parsed into IR, its body,
its last assignment, or the error it is refused with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cubecl_server import ir
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import parse_kernel


def syntax_error(fn: Callable[..., Any], comptime: dict[str, object] | None = None
                 ) -> KernelSyntaxError:
    """Parse ``fn`` expecting a KernelSyntaxError, and return it."""
    with pytest.raises(KernelSyntaxError) as info:
        parse_kernel(fn, comptime or {})
    return info.value


def stmts(fn: Callable[..., Any], comptime: dict[str, object] | None = None
          ) -> tuple[ir.Stmt, ...]:
    """The statements of ``fn``'s body, parsed with ``comptime``."""
    return parse_kernel(fn, comptime or {}).body


def only_assign(fn: Callable[..., Any], comptime: dict[str, object] | None = None) -> ir.Expr:
    """The value of the last Assign of ``fn``'s body."""
    body = stmts(fn, comptime)
    last = body[-1]
    assert isinstance(last, ir.Assign), body
    return last.value
