"""Loads, stores, atomics and array metadata: each a pointer into the array's variable
and one instruction, every access being inside its array in the core IR.

An array of bools is one of bytes (converted at each access). A line array's buffer
holds its elements: a line-typed access at ``i`` is elements ``i * N`` to
``i * N + N - 1``, an element-typed one (the core IR's, for a partial last line)
element ``i``. ``Len`` and ``BufferLen`` count elements: they are the info words.
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_server.backend.lowering import metadata_kind
from cubecl_vulkan.interface import Array, Interface, Val
from cubecl_vulkan.spirv import Cap, Op, Scope, Sem, Storage

__all__ = ["Memory"]

Elem = ir.Elem
A = ir.AtomicOp

_ATOMIC_INT = {A.ADD: Op.AtomicIAdd, A.SUB: Op.AtomicISub, A.AND: Op.AtomicAnd,
               A.OR: Op.AtomicOr, A.XOR: Op.AtomicXor, A.EXCHANGE: Op.AtomicExchange}
_ATOMIC_MINMAX = {(A.MAX, True): Op.AtomicSMax, (A.MAX, False): Op.AtomicUMax,
                  (A.MIN, True): Op.AtomicSMin, (A.MIN, False): Op.AtomicUMin}
_ATOMIC_FLOAT = {A.ADD: (Op.AtomicFAddEXT, Cap.AtomicFloat32AddEXT),
                 A.MIN: (Op.AtomicFMinEXT, Cap.AtomicFloat32MinMaxEXT),
                 A.MAX: (Op.AtomicFMaxEXT, Cap.AtomicFloat32MinMaxEXT)}


class Memory(Interface):
    """The memory operations of the emitter."""

    def _ptr(self, a: Array, index: int, var: int | None = None, elem: Elem | None = None) -> int:
        """A pointer to element ``index`` (a u32) of ``a`` (or of ``var``, another view
        of its buffer holding ``elem``)."""
        ptr = self.m.pointer(a.storage, self.mty(elem or a.elem))
        if a.size is None:
            return self.val(Op.AccessChain, ptr, var or a.var, self.u(0), index)
        return self.val(Op.AccessChain, ptr, var or a.var, index)

    def _index(self, index: ir.Expr) -> int:
        """An index as the u32 an access chain takes (inside the array, it fits)."""
        t = index.type
        assert isinstance(t, Elem)
        return self.cast(self.scalar(index), t, Elem.U32)

    def _slots(self, a: Array, index: ir.Expr, t: ir.Type) -> list[int]:
        """The elements an access of type ``t`` at ``index`` reaches: a line's (its
        index counts lines), or one."""
        i = self._index(index)
        if not isinstance(t, ir.Line):
            return [i]
        u32 = self.ty(Elem.U32)
        base = self.val(Op.IMul, u32, i, self.u(t.size))
        return [self.val(Op.IAdd, u32, base, self.u(k)) for k in range(t.size)]

    def _read(self, a: Array, at: int) -> int:
        """Element ``at`` of ``a`` as a value (a bool from its byte)."""
        x = self.load(self.mty(a.elem), self._ptr(a, at))
        if a.elem is not Elem.BOOL:
            return x
        return self.val(Op.INotEqual, self.m.bool(), x, self.m.constant(self.mty(a.elem), 0))

    def _write(self, a: Array, at: int, x: int) -> None:
        """Element ``at`` of ``a`` set to ``x`` (a bool as its byte)."""
        if a.elem is Elem.BOOL:
            u8 = self.mty(Elem.BOOL)
            x = self.val(Op.Select, u8, x, self.m.constant(u8, 1), self.m.constant(u8, 0))
        self.store(self._ptr(a, at), x)

    def expr_load(self, e: ir.Load) -> Val:
        """An element, or a line's elements."""
        a = self.array(e.array)
        out = [self._read(a, j) for j in self._slots(a, e.index, e.type)]
        return tuple(out) if isinstance(e.type, ir.Line) else out[0]

    def stmt_store(self, s: ir.Store) -> None:
        """The value first, then stored (a line element by element)."""
        a = self.array(s.array)
        value = self.expr(s.value)
        xs = value if isinstance(value, tuple) else (value,)
        for j, x in zip(self._slots(a, s.index, s.value.type), xs, strict=True):
            self._write(a, j, x)

    def expr_metadata(self, e: ir.Len | ir.BufferLen | ir.Rank | ir.Shape | ir.Stride) -> int:
        """An info word."""
        index = list(self.arrays).index(e.array)
        return self.meta(self.info.word(metadata_kind(e), index, getattr(e, "dim", 0)))

    def stmt_atomic(self, s: ir.AtomicStmt) -> None:
        """The atomic, its old value into the result's local; a compare-exchange of
        ``u32`` on an ``f32`` array acts on its bits, through the u32 view of the buffer
        (:attr:`bit_views`)."""
        a = self.array(s.array)
        operands = [self.scalar(x) for x in (s.compare, s.value) if x is not None]
        t = s.value.type
        assert isinstance(t, Elem)
        tid = self.ty(t)
        i = self._index(s.index)
        if t is not a.elem:  # the bits of an f32 element
            if a.storage == Storage.Workgroup:
                self.fail(f"an f32 atomic on the shared array {a.name!r} that the device "
                          "lacks (VK_EXT_shader_atomic_float, ..._float2) is a compare-"
                          "exchange of its bits, which the vulkan backend has on global "
                          "arrays only")
            ptr = self._ptr(a, i, self.bit_views[a.name], t)
        else:
            ptr = self._ptr(a, i)
        scope = self.u(Scope.Workgroup if a.storage == Storage.Workgroup else Scope.Device)
        relaxed = self.u(Sem.Relaxed)
        if t in (Elem.I64, Elem.U64):
            if not self.f.int64_atomics:
                self.fail(f"atomic {s.op.value} on {t.value} needs the device's "
                          "shaderBufferInt64Atomics/shaderSharedInt64Atomics")
            self.m.capability(Cap.Int64Atomics)
        if s.op is A.COMPARE_EXCHANGE:
            old = self.val(Op.AtomicCompareExchange, tid, ptr, scope, relaxed, relaxed,
                           operands[1], operands[0])
        elif t is Elem.F32:  # one Native.float_atomics has
            opcode, cap = _ATOMIC_FLOAT[s.op]
            self.m.capability(cap)
            old = self.val(opcode, tid, ptr, scope, relaxed, operands[-1])
        else:
            opcode = _ATOMIC_MINMAX.get((s.op, t.is_signed)) or _ATOMIC_INT[s.op]
            old = self.val(opcode, tid, ptr, scope, relaxed, operands[-1])
        if s.result is not None:
            var = self.local_vars[s.result]
            assert isinstance(var, int)
            self.store(var, old)
