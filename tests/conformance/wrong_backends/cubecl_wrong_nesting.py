"""Backend ``wrong_nesting``: the cpu backend, except that an ``if`` nested inside an
``if`` that is itself inside another runs after its enclosing ``if`` instead of inside
it: the inner branch no longer respects the outer condition."""

from __future__ import annotations

from typing import Any

from cubecl_wrong_common import RewritingCompiler, cpu_descriptor, rewrite

from cubecl_server import ir
from cubecl_server.backend import BackendDescriptor, hookimpl

NAME = "wrong_nesting"


def _hoist(block: tuple[Any, ...], depth: int) -> tuple[Any, ...]:
    """At two ``if``s deep and more, move the ``if``s of each branch out after it."""
    if depth < 1:
        return block
    out: list[Any] = []
    for s in block:
        if not isinstance(s, ir.If):
            out.append(s)
            continue
        inner = [t for t in (*s.then, *s.orelse) if isinstance(t, ir.If)]
        keep_then = tuple(t for t in s.then if not isinstance(t, ir.If))
        keep_else = tuple(t for t in s.orelse if not isinstance(t, ir.If))
        out.append(ir.If(s.cond, keep_then, keep_else))
        out.extend(inner)
    return tuple(out)


class WrongNestingCompiler(RewritingCompiler):
    """Inner ``if``s escape their enclosing ``if`` (the fault)."""

    def fault(self, kernel: ir.Kernel) -> ir.Kernel:
        """The kernel with every doubly nested ``if`` hoisted one level out."""
        return rewrite(kernel, lambda node: node, _hoist)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: nested branches escape."""
    return [cpu_descriptor(NAME, compiler=WrongNestingCompiler)]
