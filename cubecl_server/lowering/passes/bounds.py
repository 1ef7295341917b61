"""Which memory accesses of a kernel cannot be out of range: the checks checked mode
may leave out.

:func:`in_bounds` follows the kernel's structured control flow forward, keeping per
program point what it knows of its integer locals (a range of values each) and a few
facts between expressions (``x < y``, ``x <= y``). An access is proven when, on every
path that reaches it:

- its index is an integer range inside the constant size of a shared or local array
  (unit positions are ranges, since the cube dim is known when a kernel is lowered;
  loop variables are ranges from their bounds; arithmetic is followed while it cannot
  wrap), or
- a guard that dominates it says ``index < len(a)`` (or ``buffer_len(a)``), or
  ``index < n`` with ``n <= len(a)`` known (``n = len(a)``, or a guard ``n <=
  len(a)``), and neither side has been assigned since. Checked mode bounds an
  access by ``buffer_len``; ``len`` proves it too because a view's elements are
  distinct (``client.view`` refuses one that overlaps itself), so ``len(a) <=
  buffer_len(a)`` on every launch.

Conservative: anything it cannot follow is unknown and its accesses stay checked.
Guards are ``if`` conditions (the ``else`` branch knows their negation; after an
``if`` whose branch always leaves, the rest of the block knows the other), ``while``
conditions inside the body, and the left side of ``and``/``or`` for the right side,
which the IR evaluates only where the left side leaves it undecided. A ``select``'s
condition guards nothing: both sides are evaluated. A fact holds only while none of
its locals is assigned (in any nested block, by an atomic's result or a loop), and a
fact never mentions memory (a load, a plane operation), which stores may change.
Loops are followed to a fixed point, so what a ``break``, a ``continue`` or the next
iteration brings back is joined in. Accesses to line arrays are never proven: their
``len`` counts lines, the last one maybe partial (``docs/language.md``, "Lines").

The result is a query, :class:`InBounds`, that every emitter asks (through
:attr:`~cubecl_server.lowering.StructuredEmitter.proven`): an access it contains may be
lowered as in unchecked mode without changing what checked mode means.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from cubecl_server import ir
from cubecl_server.kernel import CubeDim

__all__ = ["InBounds", "in_bounds"]

Access = ir.Load | ir.Store | ir.AtomicStmt
Range = tuple[int, int]
Fact = tuple[str, ir.Expr, ir.Expr]
"""``("lt", x, y)``: x < y; ``("le", x, y)``: x <= y (values of one integer type)."""

_WIDEN_AFTER = 4
"""Loop iterations after which a range still growing is given up (made unknown)."""

B = ir.BuiltinName
_PURE = (ir.Const, ir.Var, ir.Builtin, ir.Len, ir.Shape, ir.Stride, ir.Binary, ir.Unary,
         ir.Cast, ir.Math, ir.Select, ir.BufferLen, ir.Rank)
_MIRROR = {ir.BinOp.LT: ir.BinOp.GT, ir.BinOp.LE: ir.BinOp.GE, ir.BinOp.GT: ir.BinOp.LT,
           ir.BinOp.GE: ir.BinOp.LE, ir.BinOp.EQ: ir.BinOp.EQ, ir.BinOp.NE: ir.BinOp.NE}
_NEGATE = {ir.BinOp.LT: ir.BinOp.GE, ir.BinOp.LE: ir.BinOp.GT, ir.BinOp.GT: ir.BinOp.LE,
           ir.BinOp.GE: ir.BinOp.LT, ir.BinOp.EQ: ir.BinOp.NE, ir.BinOp.NE: ir.BinOp.EQ}


@dataclass(frozen=True)
class InBounds:
    """The accesses (loads, stores, atomics) of one kernel lowered for one cube dim
    that are proven inside their array; ``access in proofs`` asks about one node.

    Nodes are told apart by identity: the query is about the very IR object the
    emitter lowers (a node object used at two places is proven only if both are).
    """

    kernel: ir.Kernel
    _ids: frozenset[int] = field(repr=False)

    def __contains__(self, access: object) -> bool:
        return id(access) in self._ids

    def __len__(self) -> int:
        return len(self._ids)


def in_bounds(kernel: ir.Kernel, cube_dim: CubeDim) -> InBounds:
    """The accesses of ``kernel`` (launched with ``cube_dim``) that cannot be outside
    their array, by the rules of this module. ``kernel`` must have passed the IR
    checker."""
    a = _Analysis(kernel, cube_dim)
    a.block(kernel.body, _State())
    proven = frozenset(i for i, ok in a.verdicts.items() if ok)
    return InBounds(kernel, proven)


@dataclass
class _State:
    """What is known at one program point: ranges of integer locals (absent: the
    type's whole range) and facts."""

    ranges: dict[str, Range] = field(default_factory=dict)
    facts: frozenset[Fact] = frozenset()

    def copy(self) -> _State:
        return _State(dict(self.ranges), self.facts)


def _join(*states: _State | None) -> _State | None:
    """What holds whichever of ``states`` (None: unreachable) the program came from."""
    live = [s for s in states if s is not None]
    if not live:
        return None
    out = live[0].copy()
    for s in live[1:]:
        out.ranges = {k: (min(r[0], s.ranges[k][0]), max(r[1], s.ranges[k][1]))
                      for k, r in out.ranges.items() if k in s.ranges}
        out.facts = out.facts & s.facts
    return out


def _type_range(t: ir.Type) -> Range | None:
    if not isinstance(t, ir.Elem) or not t.is_int:
        return None
    if t.is_signed:
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


def _vars(e: ir.Expr) -> Iterator[str]:
    return (n.name for n in ir.walk(e) if isinstance(n, ir.Var))


def _pure(e: ir.Expr) -> bool:
    """Whether ``e`` reads no memory: its value changes only with its locals."""
    return all(isinstance(n, _PURE) for n in ir.walk(e))


@dataclass
class _Loop:
    breaks: list[_State] = field(default_factory=list)
    continues: list[_State] = field(default_factory=list)


class _Analysis:
    """One forward walk of a kernel (see the module)."""

    def __init__(self, kernel: ir.Kernel, cube_dim: CubeDim) -> None:
        self.dim = (cube_dim.x, cube_dim.y, cube_dim.z)
        self.sizes = {a.name: a.size for a in (*kernel.shared, *kernel.local_arrays)}
        self.lens = {p.name for p in kernel.params if p.array and p.line == 1}
        self.types = {loc.name: loc.elem for loc in kernel.locals}
        self.types.update({p.name: p.elem for p in kernel.params if not p.array})
        self.loops: list[_Loop] = []
        self.recording = True
        self.verdicts: dict[int, bool] = {}
        """id of an access -> proven at every place it was met (while recording)."""

    # ------------------------------------------------------------ ranges

    def range(self, e: ir.Expr, s: _State) -> Range | None:
        """The values ``e`` may have in ``s`` (None: not an integer)."""
        full = _type_range(e.type)
        if full is None:
            return None
        r = self._range(e, s)
        if r is None or r[0] < full[0] or r[1] > full[1]:
            return full  # it may wrap: anything of its type
        return r

    def _range(self, e: ir.Expr, s: _State) -> Range | None:
        d = self.dim
        match e:
            case ir.Const(value=v):
                return int(v), int(v)
            case ir.Var(name=n):
                return s.ranges.get(n)
            case ir.Builtin(name=n):
                return {B.UNIT_POS_X: (0, d[0] - 1), B.UNIT_POS_Y: (0, d[1] - 1),
                        B.UNIT_POS_Z: (0, d[2] - 1), B.UNIT_POS: (0, d[0] * d[1] * d[2] - 1),
                        B.CUBE_DIM_X: (d[0], d[0]), B.CUBE_DIM_Y: (d[1], d[1]),
                        B.CUBE_DIM_Z: (d[2], d[2]),
                        B.CUBE_DIM: (d[0] * d[1] * d[2],) * 2}.get(n)  # type: ignore[return-value]
            case ir.Cast(x=x):
                return self.range(x, s)  # outside the target type: its whole range
            case ir.Select(a=a, b=b):
                ra, rb = self.range(a, s), self.range(b, s)
                return None if ra is None or rb is None else (min(ra[0], rb[0]),
                                                              max(ra[1], rb[1]))
            case ir.Binary(op=op, lhs=lhs, rhs=rhs):
                a, b = self.range(lhs, s), self.range(rhs, s)
                if a is None or b is None:
                    return None
                return _arith(op, a, b)
        return None

    # ------------------------------------------------------------ guards

    def refine(self, s: _State | None, cond: ir.Expr, holds: bool) -> _State | None:
        """``s`` where ``cond`` is known to be ``holds``."""
        if s is None:
            return None
        match cond:
            case ir.Unary(op=ir.UnOp.NOT, x=x):
                return self.refine(s, x, not holds)
            case ir.Binary(op=ir.BinOp.AND | ir.BinOp.OR as op, lhs=lhs, rhs=rhs):
                if (op is ir.BinOp.AND) == holds:  # both sides are known
                    return self.refine(self.refine(s, lhs, holds), rhs, holds)
                return s
            case ir.Binary(op=op, lhs=lhs, rhs=rhs) if op in _NEGATE and isinstance(
                    lhs.type, ir.Elem) and lhs.type.is_int:
                return self._compare(s, op if holds else _NEGATE[op], lhs, rhs)
        return s

    def _compare(self, s: _State, op: ir.BinOp, x: ir.Expr, y: ir.Expr) -> _State:
        if op in (ir.BinOp.GT, ir.BinOp.GE):
            op, x, y = _MIRROR[op], y, x
        if op is ir.BinOp.NE:
            return s
        out = s.copy()
        rx, ry = self.range(x, s), self.range(y, s)
        assert rx is not None and ry is not None
        gap = 1 if op is ir.BinOp.LT else 0
        if op is ir.BinOp.EQ:
            both = (max(rx[0], ry[0]), min(rx[1], ry[1]))
            nx = ny = both
        else:
            nx = (rx[0], min(rx[1], ry[1] - gap))
            ny = (max(ry[0], rx[0] + gap), ry[1])
            if _pure(x) and _pure(y):
                fact = ("lt" if gap else "le", _strip(x, self, s), _strip(y, self, s))
                out.facts = out.facts | {fact}
        for e, r in ((x, nx), (y, ny)):
            if isinstance(e, ir.Var) and e.name in self.types and r[0] <= r[1]:
                out.ranges[e.name] = r
        return out

    # ------------------------------------------------------------ accesses

    def proven(self, array: str, index: ir.Expr, value_type: ir.Type, s: _State) -> bool:
        """Whether ``array[index]`` is inside the array in ``s``."""
        if isinstance(value_type, ir.Line):
            return False
        r = self.range(index, s)
        if r is None or r[0] < 0:
            return False
        if array in self.sizes:
            return r[1] < self.sizes[array]
        if array not in self.lens:
            return False
        key = _strip(index, self, s)
        for length in (ir.Len(array), ir.BufferLen(array)):
            for kind, x, y in s.facts:
                if kind == "lt" and x == key and (y == length or ("le", y, length) in s.facts):
                    return True
        return False

    def note(self, node: Access, ok: bool) -> None:
        if self.recording:
            self.verdicts[id(node)] = self.verdicts.get(id(node), True) and ok

    def loads(self, e: ir.Expr | None, s: _State) -> None:
        """Judge the loads of ``e`` evaluated in ``s`` (the right side of ``and``/``or``
        only where the left side leaves it undecided)."""
        if e is None:
            return
        match e:
            case ir.Binary(op=ir.BinOp.AND | ir.BinOp.OR as op, lhs=lhs, rhs=rhs):
                self.loads(lhs, s)
                self.loads(rhs, self.refine(s, lhs, op is ir.BinOp.AND))
                return
            case ir.Load(array=a, index=i, type=t):
                self.note(e, self.proven(a, i, t, s))
        for name in _CHILDREN.get(type(e), ()):
            child = getattr(e, name)
            for c in child if isinstance(child, tuple) else (child,):
                if c is not None:
                    self.loads(c, s)

    # ------------------------------------------------------------ statements

    def block(self, stmts: tuple[ir.Stmt, ...], s: _State | None) -> _State | None:
        for st in stmts:
            if s is None:
                break  # unreachable: its accesses stay checked
            s = self.stmt(st, s)
        return s

    def assign(self, s: _State, name: str, value: ir.Expr | None) -> _State:
        """``s`` after ``name = value`` (``value`` None: unknown)."""
        r = None if value is None else self.range(value, s)
        out = _State({k: v for k, v in s.ranges.items() if k != name},
                     frozenset(f for f in s.facts if name not in _vars(f[1])
                               and name not in _vars(f[2])))
        full = _type_range(self.types[name])
        if r is not None and r != full:
            out.ranges[name] = r
        if isinstance(value, (ir.Len, ir.BufferLen)) and value.array in self.lens:
            out.facts = out.facts | {("le", ir.Var(name, value.type), value)}
        return out

    def stmt(self, st: ir.Stmt, s: _State) -> _State | None:
        match st:
            case ir.Assign(name=n, value=v):
                self.loads(v, s)
                return self.assign(s, n, v)
            case ir.Store(array=a, index=i, value=v):
                self.loads(v, s)
                self.loads(i, s)
                self.note(st, self.proven(a, i, v.type, s))
                return s
            case ir.AtomicStmt():
                for x in (st.index, st.value, st.compare):
                    self.loads(x, s)
                self.note(st, self.proven(st.array, st.index, st.value.type, s))
                return s if st.result is None else self.assign(s, st.result, None)
            case ir.If(cond=c, then=then, orelse=orelse):
                self.loads(c, s)
                return _join(self.block(then, self.refine(s, c, True)),
                             self.block(orelse, self.refine(s, c, False)))
            case ir.While(cond=c, body=body):
                return self.loop(s, body, cond=c)
            case ir.For():
                self.loads(st.start, s)
                self.loads(st.stop, s)
                self.loads(st.step, s)
                return self.loop(s, st.body, loop=st)
            case ir.Break():
                self.loops[-1].breaks.append(s)
                return None
            case ir.Continue():
                self.loops[-1].continues.append(s)
                return None
            case ir.Return():
                return None
            case ir.DebugPrint(args=args):
                for a in args:
                    self.loads(a, s)
        return s  # a barrier, a print

    def loop(self, entry: _State, body: tuple[ir.Stmt, ...], *, cond: ir.Expr | None = None,
             loop: ir.For | None = None) -> _State | None:
        """A loop followed to a fixed point of its head, then once more recording."""
        recording, self.recording = self.recording, False
        head, rounds = entry, 0
        while True:
            frame, end = self.iteration(head, body, cond, loop)
            new = _join(entry, end, *frame.continues)
            assert new is not None
            rounds += 1
            if rounds >= _WIDEN_AFTER:  # from now on, only ever less is known
                self.widen(head, new)
            if new == head:
                break
            head = new
        self.recording = recording
        frame, _ = self.iteration(head, body, cond, loop)
        exit_ = head if cond is None else self.refine(head, cond, False)
        if loop is not None:
            exit_ = self.assign(head, loop.var, None)  # unspecified after the loop
        return _join(exit_, *frame.breaks)

    def widen(self, head: _State, new: _State) -> None:
        """Make ``new`` at most as precise as ``head``: a bound that moved goes to its
        type's end, a fact lost stays lost (so the fixed point is reached)."""
        ranges = {}
        for k, r in new.ranges.items():
            old, full = head.ranges.get(k), _type_range(self.types[k])
            assert full is not None
            if old is None:
                continue
            w = (old[0] if r[0] >= old[0] else full[0], old[1] if r[1] <= old[1] else full[1])
            if w != full:
                ranges[k] = w
        new.ranges = ranges
        new.facts = new.facts & head.facts

    def iteration(self, head: _State, body: tuple[ir.Stmt, ...], cond: ir.Expr | None,
                  loop: ir.For | None) -> tuple[_Loop, _State | None]:
        """One pass over the body from the loop head: its frame and end state."""
        s: _State | None = head
        if cond is not None:
            self.loads(cond, head)
            s = self.refine(head, cond, True)
        if loop is not None:
            s = self.for_var(head, loop, body)
        frame = _Loop()
        self.loops.append(frame)
        try:
            end = self.block(body, s)
        finally:
            self.loops.pop()
        return frame, end

    def for_var(self, s: _State, loop: ir.For, body: tuple[ir.Stmt, ...]) -> _State:
        """``s`` with the loop variable set for one iteration: between its bounds, and
        below (above) ``stop`` while nothing in ``stop`` changes in the loop; a step of
        unknown sign keeps it between the extremes of both bounds."""
        start, stop = self.range(loop.start, s), self.range(loop.stop, s)
        step = self.range(loop.step, s)
        assert start is not None and stop is not None and step is not None
        out = self.assign(s, loop.var, None)
        up, down = (stop[0] + 1, start[1]), (start[0], stop[1] - 1)
        # A step of 0 runs no iterations, so a step never below 0 counts up.
        r = down if step[0] >= 0 else up if step[1] <= 0 else (min(up[0], down[0]),
                                                              max(up[1], down[1]))
        if r[0] <= r[1]:
            out.ranges[loop.var] = r
        changed = set(ir.assigned_names(body)) | {loop.var}
        if step[0] < 0 < step[1] or not _pure(loop.stop) or changed & set(_vars(loop.stop)):
            return out
        v = ir.Var(loop.var, self.types[loop.var])
        fact = ("lt", v, loop.stop) if step[0] >= 0 else ("lt", loop.stop, v)
        out.facts = out.facts | {fact}
        return out


def _strip(e: ir.Expr, a: _Analysis, s: _State) -> ir.Expr:
    """``e`` without the casts between integer types around it that keep their
    operand's value in ``s``: one spelling of a value, whatever its type."""
    while isinstance(e, ir.Cast) and _type_range(e.x.type) is not None:
        r, full = a.range(e.x, s), _type_range(e.type)
        if r is None or full is None or r[0] < full[0] or r[1] > full[1]:
            break
        e = e.x
    return e


def _arith(op: ir.BinOp, a: Range, b: Range) -> Range | None:
    """The range of ``a op b`` computed without wrapping (the caller checks the type's
    range); None where it is not followed."""
    if op is ir.BinOp.ADD:
        return a[0] + b[0], a[1] + b[1]
    if op is ir.BinOp.SUB:
        return a[0] - b[1], a[1] - b[0]
    if op is ir.BinOp.MUL:
        corners = [x * y for x in a for y in b]
        return min(corners), max(corners)
    if a[0] < 0 or b[0] < 0:
        return None
    if op is ir.BinOp.IDIV:  # by zero gives 0
        return (a[0] // b[1] if b[0] > 0 else 0), (a[1] // b[0] if b[0] > 0 else a[1])
    if op is ir.BinOp.REM:
        return 0, min(a[1], max(b[1] - 1, 0))
    if op is ir.BinOp.BITAND:
        return 0, min(a[1], b[1])
    if op is ir.BinOp.SHR and b[0] == b[1] and b[0] < 32:
        return a[0] >> b[0], a[1] >> b[0]
    return None


_CHILDREN: dict[type, tuple[str, ...]] = {
    ir.Binary: ("lhs", "rhs"), ir.Unary: ("x",), ir.Math: ("args",), ir.Cast: ("x",),
    ir.Bitcast: ("x",), ir.Select: ("cond", "a", "b"), ir.Load: ("index",),
    ir.PlaneOp: ("value", "lane"), ir.LineFill: ("x",), ir.LineElement: ("x",),
    ir.LineReduce: ("x",),
}
