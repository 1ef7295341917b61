"""Backend ``wrong_plane``: the cpu backend, except that a plane operation inside a
branch is computed before the branch, over every unit of the plane: the units the
branch leaves out contribute, and take its value."""

from __future__ import annotations

from typing import Any

from cubecl_wrong_common import RewritingCompiler, cpu_descriptor, rewrite

from cubecl_server import ir
from cubecl_server.backend import BackendDescriptor, hookimpl

NAME = "wrong_plane"


def _is_plane(s: Any) -> bool:
    return isinstance(s, ir.Assign) and isinstance(s.value, ir.PlaneOp)


def _hoist_plane_ops(block: tuple[Any, ...], depth: int) -> tuple[Any, ...]:
    """Each ``x = plane_op(...)`` of an ``if``'s branches, moved before the ``if``."""
    out: list[Any] = []
    for s in block:
        if isinstance(s, ir.If):
            out.extend(t for t in (*s.then, *s.orelse) if _is_plane(t))
            s = ir.If(s.cond, tuple(t for t in s.then if not _is_plane(t)),
                      tuple(t for t in s.orelse if not _is_plane(t)))
        out.append(s)
    return tuple(out)


class WrongPlaneCompiler(RewritingCompiler):
    """Plane operations ignore the branch they are in (the fault)."""

    def fault(self, kernel: ir.Kernel) -> ir.Kernel:
        """The kernel with plane operations hoisted out of branches."""
        return rewrite(kernel, lambda node: node, _hoist_plane_ops)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: plane operations over inactive units too."""
    return [cpu_descriptor(NAME, compiler=WrongPlaneCompiler)]
