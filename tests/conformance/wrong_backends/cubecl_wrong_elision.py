"""Backend ``wrong_elision``: the cpu backend, except that it leaves out the bounds check
of every access under an ``if`` or ``while`` whose condition is ``x < len(...)``,
whichever array the length is of and whatever is assigned between the guard and the
access: an unsound bounds pass, which reads past the end of an array."""

from __future__ import annotations

from cubecl_wrong_common import cpu_descriptor

from cubecl_server import ir
from cubecl_server.backend import BackendDescriptor, CompiledKernel, CubeDim, hookimpl
from cubecl_server.backend.compiling import ExecutionMode
from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.lowering.passes.bounds import InBounds
from cubecl_server.lowering.passes.checked import check_accesses
from cubecl_server.lowering.passes.native import Native

NAME = "wrong_elision"


def _under_length_guards(stmts: tuple[ir.Stmt, ...]) -> set[int]:
    """The ids of the accesses inside a block guarded by ``x < len(...)`` (the fault)."""
    out: set[int] = set()
    for s in ir.walk(stmts):
        body: tuple[ir.Stmt, ...] = ()
        if isinstance(s, (ir.If, ir.While)) and isinstance(s.cond, ir.Binary) \
                and s.cond.op is ir.BinOp.LT and isinstance(s.cond.rhs, ir.Len):
            body = s.then if isinstance(s, ir.If) else s.body
        out |= {id(n) for n in ir.walk(body)
                if isinstance(n, (ir.Load, ir.Store, ir.AtomicStmt))}
    return out


class WrongElisionCompiler(CpuCompiler):
    """The cpu Compiler with the unsound elision above in place of the core's proofs."""

    def compile(self, kernel: ir.Kernel, cube_dim: CubeDim,
                mode: ExecutionMode) -> CompiledKernel:
        """Lower ``kernel`` with more accesses unchecked than are proven: the checked
        pass run here with the wrong proofs, the rest as in unchecked mode."""
        if mode is ExecutionMode.CHECKED:
            proofs = InBounds(kernel, frozenset(_under_length_guards(kernel.body)))
            kernel, mode = check_accesses(kernel, proofs, Native()), ExecutionMode.UNCHECKED
        return super().compile(kernel, cube_dim, mode)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: bounds checks left out under any length guard."""
    return [cpu_descriptor(NAME, compiler=WrongElisionCompiler)]
