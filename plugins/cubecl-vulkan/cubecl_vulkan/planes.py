"""Plane operations as subgroup operations (``OpGroupNonUniform*``), each needing the
device's subgroup features in compute shaders, and the capability of its kind."""

from __future__ import annotations

from cubecl_server import ir
from cubecl_vulkan.interface import Interface
from cubecl_vulkan.spirv import BuiltIn, Cap, Op, Scope, Sem

__all__ = ["Planes"]

Elem = ir.Elem
P = ir.PlaneFn

_ARITH = {  # fn -> (float op, signed op, unsigned op, group operation)
    P.SUM: (Op.GroupNonUniformFAdd, Op.GroupNonUniformIAdd, Op.GroupNonUniformIAdd, 0),
    P.INCLUSIVE_SUM: (Op.GroupNonUniformFAdd, Op.GroupNonUniformIAdd, Op.GroupNonUniformIAdd, 1),
    P.EXCLUSIVE_SUM: (Op.GroupNonUniformFAdd, Op.GroupNonUniformIAdd, Op.GroupNonUniformIAdd, 2),
    P.PROD: (Op.GroupNonUniformFMul, Op.GroupNonUniformIMul, Op.GroupNonUniformIMul, 0),
    P.INCLUSIVE_PROD: (Op.GroupNonUniformFMul, Op.GroupNonUniformIMul,
                       Op.GroupNonUniformIMul, 1),
    P.EXCLUSIVE_PROD: (Op.GroupNonUniformFMul, Op.GroupNonUniformIMul,
                       Op.GroupNonUniformIMul, 2),
    P.MAX: (Op.GroupNonUniformFMax, Op.GroupNonUniformSMax, Op.GroupNonUniformUMax, 0),
    P.MIN: (Op.GroupNonUniformFMin, Op.GroupNonUniformSMin, Op.GroupNonUniformUMin, 0),
}


class Planes(Interface):
    """The plane operations of the emitter."""

    def stmt_sync_plane(self, s: ir.SyncPlane) -> None:
        """``OpControlBarrier`` of the subgroup, fencing workgroup and storage memory."""
        self.subgroups("sync_plane")
        sub = self.u(Scope.Subgroup)
        self.op(Op.ControlBarrier, sub, sub, self.u(Sem.AcquireRelease | Sem.UniformMemory
                                                     | Sem.WorkgroupMemory))

    def expr_plane(self, e: ir.PlaneOp) -> int:
        """A subgroup operation; a broadcast and a shuffle by ``OpGroupNonUniformShuffle``
        (its lane may vary per unit), a lane past the plane reading 0 (SPIR-V's result
        there is undefined)."""
        fn, t = e.fn, e.type
        self.subgroups(f"plane_{fn.value}")
        if (t is Elem.F16 or t.bits == 64) and not self.f.subgroup_extended_types:
            self.fail(f"plane_{fn.value} of {t.value} needs shaderSubgroupExtendedTypes")
        v = self.scalar(e.value)
        tid, sub, m = self.ty(t), self.u(Scope.Subgroup), self.m
        if fn in _ARITH:
            m.capability(Cap.GroupNonUniformArithmetic)
            fop, sop, uop, group = _ARITH[fn]
            opcode = fop if t.is_float else sop if t.is_signed else uop
            return self.val(opcode, tid, sub, group, v)
        if fn in (P.ALL, P.ANY):
            m.capability(Cap.GroupNonUniformVote)
            opcode = Op.GroupNonUniformAll if fn is P.ALL else Op.GroupNonUniformAny
            return self.val(opcode, tid, sub, v)
        if fn is P.BALLOT:
            m.capability(Cap.GroupNonUniformBallot)
            u32 = self.ty(Elem.U32)
            mask = self.val(Op.GroupNonUniformBallot, m.vector(u32, 4), sub, v)
            return self.val(Op.CompositeExtract, u32, mask, 0)
        m.capability(Cap.GroupNonUniformShuffle)
        assert e.lane is not None
        lane_t = e.lane.type
        assert isinstance(lane_t, Elem)
        lane = self.cast(self.scalar(e.lane), lane_t, Elem.U32)
        if fn is P.SHUFFLE_XOR:
            return self.val(Op.GroupNonUniformShuffleXor, tid, sub, v, lane)
        inside = self.cmp(ir.BinOp.LT, lane, self._input(BuiltIn.SubgroupSize, self.ty(Elem.U32)),
                          Elem.U32)
        got = self.val(Op.GroupNonUniformShuffle, tid, sub, v,
                       self.sel(inside, lane, self.u(0), Elem.U32))
        return self.sel(inside, got, self.zero(t), t)
