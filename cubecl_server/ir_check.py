"""The IR's checker: every typing and structural rule of ``docs/ir.md``, in one place.

The kernel loader runs :func:`check_kernel` once per kernel before any backend lowers
it, so a backend compiles only IR that obeys the contract and never re-checks it: a
malformed kernel (built by hand, or by a faulty frontend) gets the same
``CompilationError``, with the same message, on every backend. The message names the
rule broken and the offending expression or statement (as :func:`ir.format_expr` and
:func:`ir.format_stmt` print them), after the kernel's ``file:line`` when it has one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from cubecl_server import ir
from cubecl_server.errors import CompilationError

__all__ = ["MAX_UNROLL", "check_kernel"]

E = ir.Elem
MAX_UNROLL = 4096
"""The most iterations an unrolled ``For`` may have: a backend copies the body that many
times, so a larger count (a typo, or a forged row of the IR cache) would make the
compile itself endless."""
_ATOMIC_ELEMS = (E.I32, E.U32, E.I64, E.U64)
_MAX_SHARED = (1 << 32) - 1
_TMA_RANK = 5  # the most dimensions a tensor map has (cuTensorMapEncodeTiled)
_FLOAT_FNS = frozenset({
    ir.MathFn.EXP, ir.MathFn.LOG, ir.MathFn.SQRT, ir.MathFn.RSQRT, ir.MathFn.SIN,
    ir.MathFn.COS, ir.MathFn.TANH, ir.MathFn.ERF, ir.MathFn.FLOOR, ir.MathFn.CEIL,
    ir.MathFn.POW, ir.MathFn.FMA, ir.MathFn.ISNAN, ir.MathFn.ISINF, ir.MathFn.TAN,
    ir.MathFn.ASIN, ir.MathFn.ACOS, ir.MathFn.ATAN, ir.MathFn.ATAN2, ir.MathFn.SINH,
    ir.MathFn.COSH, ir.MathFn.ASINH, ir.MathFn.ACOSH, ir.MathFn.ATANH, ir.MathFn.LOG2,
    ir.MathFn.EXP2, ir.MathFn.LOG1P, ir.MathFn.EXPM1,
    ir.MathFn.ROUND, ir.MathFn.TRUNC, ir.MathFn.COPYSIGN, ir.MathFn.HYPOT,
    ir.MathFn.RHYPOT, ir.MathFn.POWI,
})
_INT_FNS = frozenset({
    ir.MathFn.COUNT_ONES, ir.MathFn.REVERSE_BITS, ir.MathFn.LEADING_ZEROS,
    ir.MathFn.TRAILING_ZEROS, ir.MathFn.FIND_FIRST_SET, ir.MathFn.MUL_HI,
    ir.MathFn.SATURATING_ADD, ir.MathFn.SATURATING_SUB,
})
_COUNTING_FNS = frozenset({ir.MathFn.COUNT_ONES, ir.MathFn.LEADING_ZEROS,
                           ir.MathFn.TRAILING_ZEROS, ir.MathFn.FIND_FIRST_SET})
_ARITY = {ir.MathFn.POW: 2, ir.MathFn.FMA: 3, ir.MathFn.MIN: 2, ir.MathFn.MAX: 2,
          ir.MathFn.CLAMP: 3, ir.MathFn.ATAN2: 2, ir.MathFn.COPYSIGN: 2, ir.MathFn.HYPOT: 2,
          ir.MathFn.RHYPOT: 2, ir.MathFn.POWI: 2, ir.MathFn.MUL_HI: 2,
          ir.MathFn.SATURATING_ADD: 2, ir.MathFn.SATURATING_SUB: 2}
_FLOAT_ATOMICS = (ir.AtomicOp.ADD, ir.AtomicOp.MAX, ir.AtomicOp.MIN, ir.AtomicOp.EXCHANGE)
_LANE_PLANE_FNS = (ir.PlaneFn.BROADCAST, ir.PlaneFn.SHUFFLE_XOR, ir.PlaneFn.SHUFFLE)
_BOOL_PLANE_FNS = (ir.PlaneFn.ALL, ir.PlaneFn.ANY, ir.PlaneFn.BALLOT)
_Takes = tuple[str, Callable[[ir.Elem], bool]]
"""What an operator takes: its name in messages, and a predicate on the operand's
element type (a line's operators act on each element)."""

_NUMBERS: _Takes = ("numbers", lambda t: t.is_int or t.is_float)
_INTEGERS: _Takes = ("integers", lambda t: t.is_int)
_FLOATS: _Takes = ("floats", lambda t: t.is_float)
# The bit functions and plane operations are not defined on 8- and 16-bit integers.
_WIDE_INTEGERS: _Takes = ("i32, u32, i64 or u64", lambda t: t.is_int and not t.is_narrow)
_BOOLS: _Takes = ("bools", lambda t: t is E.BOOL)
_ANY: _Takes = ("numbers or bools", lambda t: not t.is_minifloat)
_BINARY_OPERANDS = {
    ir.BinOp.ADD: _NUMBERS, ir.BinOp.SUB: _NUMBERS, ir.BinOp.MUL: _NUMBERS,
    ir.BinOp.DIV: _FLOATS, ir.BinOp.IDIV: _INTEGERS, ir.BinOp.REM: _NUMBERS,
    ir.BinOp.BITAND: _INTEGERS, ir.BinOp.BITOR: _INTEGERS, ir.BinOp.BITXOR: _INTEGERS,
    ir.BinOp.SHL: _INTEGERS, ir.BinOp.SHR: _INTEGERS, ir.BinOp.EQ: _ANY, ir.BinOp.NE: _ANY,
    ir.BinOp.LT: _NUMBERS, ir.BinOp.LE: _NUMBERS, ir.BinOp.GT: _NUMBERS,
    ir.BinOp.GE: _NUMBERS, ir.BinOp.AND: _BOOLS, ir.BinOp.OR: _BOOLS,
}
_UNARY_OPERANDS = {ir.UnOp.NEG: _NUMBERS, ir.UnOp.NOT: _BOOLS, ir.UnOp.BITNOT: _INTEGERS}


def check_kernel(kernel: ir.Kernel, backend: str) -> None:
    """Raise ``CompilationError`` (reported for ``backend``) at the first rule of
    ``docs/ir.md`` that ``kernel`` breaks; return if it obeys them all.

    The verdict is cached per kernel (equal kernels share it), so obtaining one kernel
    for several cube dims or modes checks it once.
    """
    problem = _violation(kernel)
    if problem is not None:
        where = f"{kernel.loc}: " if kernel.loc is not None else ""
        raise CompilationError(where + problem, kernel=kernel.name, backend=backend)


@lru_cache(maxsize=1024)
def _violation(kernel: ir.Kernel) -> str | None:
    """The first rule ``kernel`` breaks, described, or None (cached on the frozen kernel;
    the description leaves out ``loc``, which equality ignores)."""
    try:
        _Checker(kernel).check()
    except _Violation as v:
        return v.message
    return None


class _Violation(Exception):
    """A broken rule, with the text of the node that breaks it (none for a declaration)."""

    def __init__(self, rule: str, node: object = None) -> None:
        if node is None:
            self.message = rule
        else:
            try:
                text = (ir.format_stmt(node) if isinstance(node, ir.Stmt)
                        else ir.format_expr(node) if isinstance(node, ir.Expr) else repr(node))
            except (TypeError, AttributeError, ValueError):
                # Not an IR node, or one holding something the printer cannot show.
                text = repr(node)
            self.message = f"{rule}, in `{text}`"
        super().__init__(self.message)


def _leaves(body: tuple[ir.Stmt, ...]) -> bool:
    """Whether ``body``, a loop's, holds a ``break`` of that loop or a ``return``."""
    for s in body:
        match s:
            case ir.Break() | ir.Return():
                return True
            case ir.If(then=then, orelse=orelse):
                if _leaves(then) or _leaves(orelse):
                    return True
            case ir.For(body=inner) | ir.While(body=inner):
                # A break there leaves the inner loop only; a return leaves all.
                if any(isinstance(x, ir.Return) for x in ir.walk(inner)):
                    return True
    return False


def _is_int(t: ir.Type) -> bool:
    """Whether ``t`` is an integer type (a line is not)."""
    return isinstance(t, ir.Elem) and t.is_int


def _type_problem(t: object) -> str | None:
    """Why ``t`` is not a type a value may have, or None: an :class:`ir.Elem`, or a
    :class:`ir.Line` of one with a size in :data:`ir.LINE_SIZES`."""
    if isinstance(t, ir.Elem):
        return None
    if not isinstance(t, ir.Line):
        return f"{t!r} is not a type"
    if not isinstance(t.elem, ir.Elem):
        return f"the line's element {t.elem!r} is not an Elem"
    if t.elem.is_narrow or t.elem.is_minifloat:
        return f"a line's element is not an 8- or 16-bit integer or a minifloat ({t.elem.value})"
    if isinstance(t.size, bool) or t.size not in ir.LINE_SIZES:
        return f"a line's size is one of {', '.join(map(str, ir.LINE_SIZES))}, not {t.size!r}"
    return None


def _like(t: ir.Type, elem: ir.Elem) -> ir.Type:
    """``elem``, or a line of it as long as ``t`` when ``t`` is a line (an elementwise
    operation's result type)."""
    return ir.Line(elem, t.size) if isinstance(t, ir.Line) else elem


def _fits(value: object, t: ir.Elem) -> bool:
    """Whether a constant's Python value is one of type ``t``."""
    if t is E.BOOL:
        return isinstance(value, bool)
    if t.is_minifloat or isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if t.is_float:
        return True
    if not isinstance(value, int):
        return False
    lo = -(1 << (t.bits - 1)) if t.is_signed else 0
    return lo <= value < lo + (1 << t.bits)


class _Checker:
    """One kernel's check: its declarations, then every statement and expression."""

    def __init__(self, kernel: ir.Kernel) -> None:
        self.k = kernel
        self.locals: dict[str, ir.Type] = {}
        self.scalars: dict[str, ir.Elem] = {}
        self.arrays: dict[str, ir.Type] = {}
        self.shared: dict[str, ir.Elem] = {}
        self.local_arrays: dict[str, ir.Elem] = {}
        self.tensor_maps: dict[str, ir.Elem] = {}
        self.map_ranks: dict[str, int] = {}
        self.loops = 0

    def check(self) -> None:
        """Raise :class:`_Violation` at the first broken rule."""
        k = self.k
        if not isinstance(k.name, str) or not k.name.isidentifier():
            raise _Violation(f"the kernel's name {k.name!r} is not a valid identifier")
        seen: dict[str, str] = {}
        decls: list[tuple[str, str, ir.Elem]] = [
            ("array parameter" if p.array else "tensor map parameter"
             if getattr(p, "tensor_map", False) else "scalar parameter", p.name, p.elem)
            for p in k.params]
        decls += [("local", loc.name, loc.elem) for loc in k.locals]
        decls += [("shared array", sh.name, sh.elem) for sh in k.shared]
        decls += [("local array", la.name, la.elem) for la in k.local_arrays]
        for kind, name, elem in decls:
            if name in seen:
                again = (f"{kind} {name!r} is declared twice" if seen[name] == kind else
                         f"{name!r} is declared as a {seen[name]} and as a {kind}")
                raise _Violation(f"{again} (names of params, locals, shared and local "
                                 "arrays are distinct, each declared once)")
            if kind != "local" and not isinstance(elem, ir.Elem):
                raise _Violation(f"{kind} {name!r} has type {elem!r}, not an Elem")
            problem = _type_problem(elem)
            if problem is not None:
                raise _Violation(f"{kind} {name!r}: {problem}")
            seen[name] = kind
        for p in k.params:
            line = getattr(p, "line", 1)
            if isinstance(line, bool) or line not in (1, *ir.LINE_SIZES) \
                    or (line > 1 and not p.array):
                raise _Violation(f"parameter {p.name!r} has line {line!r}; a line is 1, or "
                                 f"one of {', '.join(map(str, ir.LINE_SIZES))} for an array "
                                 "parameter")
            if getattr(p, "tensor_map", False):
                if p.array or p.elem is E.BOOL:
                    raise _Violation(f"tensor map parameter {p.name!r} is "
                                     f"{'an array' if p.array else 'of bool'}; a tensor map "
                                     "is not an array, and maps a tensor of a numeric type")
                self.tensor_maps[p.name] = p.elem
            elif p.array:
                self.arrays[p.name] = p.value_type
            elif p.elem.is_minifloat:
                raise _Violation(f"scalar parameter {p.name!r} is {p.elem.value}: a minifloat "
                                 "is a type of arrays and locals, so pass an f32 and convert")
            else:
                self.scalars[p.name] = p.elem
        for loc in k.locals:
            self.locals[loc.name] = loc.elem
        for kind, arrays, into in (("shared array", k.shared, self.shared),
                                   ("local array", k.local_arrays, self.local_arrays)):
            for a in arrays:
                if (isinstance(a.size, bool) or not isinstance(a.size, int)
                        or not 0 < a.size <= _MAX_SHARED):
                    raise _Violation(f"{kind} {a.name!r} has size {a.size!r}; a size must "
                                     f"be a positive integer constant, at most {_MAX_SHARED}")
                into[a.name] = a.elem
        self.block(k.body)

    # ------------------------------------------------------------ statements

    def block(self, body: tuple[ir.Stmt, ...]) -> None:
        """Check every statement of a block."""
        for s in body:
            self.stmt(s)

    def stmt(self, s: ir.Stmt) -> None:
        """Check one statement and what it holds."""
        match s:
            case ir.Assign(name=name, value=value):
                self.expr(value)
                self.assign_target(name, value.type, "the value", s)
            case ir.Store(array=array, index=index, value=value):
                elem = self.memory(array, s)
                self.index(index, s)
                self.expr(value)
                if value.type is not elem:
                    raise _Violation(f"the stored value is {value.type.value}, but {array!r} "
                                     f"holds {elem.value}", s)
            case ir.If(cond=cond, then=then, orelse=orelse):
                self.condition(cond, s)
                self.block(then)
                self.block(orelse)
            case ir.For():
                self.for_(s)
            case ir.While(cond=cond, body=body):
                self.condition(cond, s)
                if isinstance(cond, ir.Const) and cond.value is True and not _leaves(body):
                    raise _Violation("a `while` loop whose condition is the constant true "
                                     "needs a `break` or `return` in its body", s)
                self.loop(body)
            case ir.Break() | ir.Continue():
                if not self.loops:
                    raise _Violation(f"`{type(s).__name__.lower()}` outside a loop", s)
            case ir.Return() | ir.Barrier() | ir.SyncPlane():
                pass
            case ir.AtomicStmt():
                self.atomic(s)
            case ir.TensorMapLoad():
                self.tensor_map_load(s)
            case ir.DebugPrint():
                self.debug_print(s)
            case _:
                raise _Violation("not an IR statement", s)

    def debug_print(self, s: ir.DebugPrint) -> None:
        """Check a ``DebugPrint``: one text more than values, each printable ASCII and
        all of them at most ``ir.MAX_PRINT_TEXT`` characters, values of element
        types that are no minifloats."""
        if not isinstance(s.text, tuple) or len(s.text) != len(s.args) + 1:
            raise _Violation("debug_print has one text more than values (before, between "
                             "and after them)", s)
        if any(not isinstance(t, str) or not (t.isascii() and t.isprintable()) for t in s.text):
            raise _Violation("debug_print's texts are printable ASCII", s)
        if sum(len(t) for t in s.text) > ir.MAX_PRINT_TEXT:
            raise _Violation(f"debug_print's texts hold more than {ir.MAX_PRINT_TEXT} "
                             "characters", s)
        for a in s.args:
            self.expr(a)
            if not isinstance(a.type, ir.Elem) or a.type.is_minifloat:
                raise _Violation(f"debug_print prints element values, not {a.type.value}", s)

    def tensor_map_load(self, s: ir.TensorMapLoad) -> None:
        """Check a ``TensorMapLoad``: a tensor map, a shared array of its element type,
        1 to 5 ``i32`` coordinates, as many at every load of the map."""
        elem = self.tensor_maps.get(s.map)
        if elem is None:
            raise _Violation(f"{s.map!r} is not a tensor map parameter", s)
        if s.shared not in self.shared:
            raise _Violation(f"{s.shared!r} is not a shared array: a tensor map loads into "
                             "shared memory", s)
        if self.shared[s.shared] is not elem:
            raise _Violation(f"tensor map {s.map!r} holds {elem.value}, but shared array "
                             f"{s.shared!r} holds {self.shared[s.shared].value}", s)
        rank = len(s.coords)
        if not 1 <= rank <= _TMA_RANK:
            raise _Violation(f"a tensor map load takes 1 to {_TMA_RANK} coordinates, not "
                             f"{rank}", s)
        if self.map_ranks.setdefault(s.map, rank) != rank:
            raise _Violation(f"tensor map {s.map!r} is loaded with {rank} coordinates here "
                             f"and {self.map_ranks[s.map]} elsewhere: a map has one rank", s)
        for c in s.coords:
            self.expr(c)
            if c.type is not E.I32:
                raise _Violation(f"a tensor map coordinate is {c.type.value}, not i32", s)

    def loop(self, body: tuple[ir.Stmt, ...]) -> None:
        """Check a loop's body, where ``break`` and ``continue`` belong."""
        self.loops += 1
        self.block(body)
        self.loops -= 1

    def assign_target(self, name: str, elem: ir.Type, what: str, s: ir.Stmt) -> None:
        """Check that ``name`` is a declared local of type ``elem``."""
        if name not in self.locals:
            kind = "a scalar parameter" if name in self.scalars else "not a declared local"
            raise _Violation(f"{name!r} is {kind}: only declared locals are assigned", s)
        if self.locals[name] is not elem:
            raise _Violation(f"{what} is {elem.value}, but local {name!r} is "
                             f"{self.locals[name].value}", s)

    def condition(self, cond: ir.Expr, node: object) -> None:
        """Check a condition: a bool expression."""
        self.expr(cond)
        if cond.type is not E.BOOL:
            raise _Violation(f"the condition is {cond.type.value}, not bool", node)

    def index(self, index: ir.Expr, node: object) -> None:
        """Check an index: an expression of an integer type."""
        self.expr(index)
        if not _is_int(index.type):
            raise _Violation(f"the index is {index.type.value}, not an integer type", node)
        if index.type.is_narrow:
            raise _Violation(f"the index is {index.type.value}: an index is i32, u32, i64 or "
                             "u64", node)

    def memory(self, array: str, node: object) -> ir.Type:
        """What one element of the array parameter, shared or local array ``array`` is
        (a line, for a line array)."""
        elem = self.arrays.get(array, self.shared.get(array, self.local_arrays.get(array)))
        if elem is None:
            raise _Violation(f"{array!r} is not an array parameter, a shared array or a "
                             "local array", node)
        return elem

    def for_(self, s: ir.For) -> None:
        """Check a ``for``: an integer local, bounds and a step of its type (a constant
        one nonzero)."""
        if s.var not in self.locals:
            raise _Violation(f"the loop variable {s.var!r} is not a declared local", s)
        t = self.locals[s.var]
        if not _is_int(t):
            raise _Violation(f"the loop variable {s.var!r} is {t.value}, not an integer type",
                             s)
        if t.is_narrow:
            raise _Violation(f"the loop variable {s.var!r} is {t.value}, not i32, u32, i64 or "
                             "u64", s)
        for what, bound in (("start", s.start), ("stop", s.stop)):
            self.expr(bound)
            if bound.type is not t:
                raise _Violation(f"the {what} is {bound.type.value}, but the loop variable "
                                 f"{s.var!r} is {t.value}", s)
            if s.unroll and not isinstance(bound, ir.Const):
                raise _Violation(f"an unrolled loop has constant bounds, but the {what} is "
                                 "not a constant", s)
        step = s.step
        if isinstance(step, ir.Const) and (step.type is not t or not _fits(step.value, t)
                                           or step.value == 0):
            raise _Violation(f"the step must be a nonzero constant of the loop variable's type "
                             f"({t.value}) or a value of that type", s)
        self.expr(step)
        if step.type is not t:
            raise _Violation(f"the step is {step.type.value}, but the loop variable "
                             f"{s.var!r} is {t.value}", s)
        if s.unroll and not isinstance(step, ir.Const):
            raise _Violation("an unrolled loop has a constant step, but the step is not a "
                             "constant", s)
        if isinstance(step, ir.Const) and step.value < 0 and not t.is_signed:
            raise _Violation(f"a negative step needs a signed loop variable, but {s.var!r} "
                             f"is {t.value}", s)
        if s.unroll:
            start, stop = s.start, s.stop
            assert isinstance(start, ir.Const) and isinstance(stop, ir.Const)
            trips = max(0, -(-(stop.value - start.value) // step.value))
            if trips > MAX_UNROLL:
                raise _Violation(f"an unrolled loop runs at most {MAX_UNROLL} times "
                                 f"(MAX_UNROLL), this one {trips}: drop unroll=True", s)
        self.loop(s.body)

    def atomic(self, s: ir.AtomicStmt) -> None:
        """Check an atomic: on an array parameter or shared array, an integer (or, for
        ``add``, ``max``, ``min`` and ``exchange``, f32) element, operands of its type."""
        elem = self.memory(s.array, s)
        if s.array in self.local_arrays:
            raise _Violation(f"{s.array!r} is a local array, which no other unit reaches: "
                             "atomics work on array parameters and shared arrays", s)
        if not (elem in _ATOMIC_ELEMS or (elem is E.F32 and s.op in _FLOAT_ATOMICS)):
            allowed = "i32, u32, i64, u64" + (" or f32" if s.op in _FLOAT_ATOMICS else "")
            raise _Violation(f"atomic {s.op.value} is on {allowed} elements, but {s.array!r} "
                             f"holds {elem.value}", s)
        self.index(s.index, s)
        operands = [("value", s.value)]
        if s.op is ir.AtomicOp.COMPARE_EXCHANGE:
            if s.compare is None:
                raise _Violation("atomic compare_exchange needs a compare value", s)
            operands.append(("compare value", s.compare))
        elif s.compare is not None:
            raise _Violation(f"atomic {s.op.value} takes no compare value (compare_exchange "
                             "alone does)", s)
        for what, e in operands:
            self.expr(e)
            if e.type is not elem:
                raise _Violation(f"the {what} is {e.type.value}, but {s.array!r} holds "
                                 f"{elem.value}", s)
        if s.result is not None:
            self.assign_target(s.result, elem, "the old value", s)

    # ------------------------------------------------------------ expressions

    def expr(self, e: ir.Expr) -> None:
        """Check one expression, its operands first."""
        match e:
            case ir.Const(value=value, type=t):
                if not isinstance(t, ir.Elem):
                    raise _Violation(f"a constant is of an element type, not {t!r} (a line "
                                     "of constants is a LineFill)", e)
                if t.is_minifloat:
                    raise _Violation(f"a minifloat ({t.value}) has no constants: convert an "
                                     "f32 one (a Cast)", e)
                if not _fits(value, t):
                    raise _Violation(f"the constant {value!r} is not a value of {t.value}", e)
            case ir.Var(name=name, type=t):
                declared = self.locals.get(name, self.scalars.get(name))
                if declared is None:
                    is_array = (name in self.arrays or name in self.shared
                                or name in self.local_arrays)
                    kind = ("an array (read it with Load)" if is_array else
                            "a tensor map (read it with TensorMapLoad)"
                            if name in self.tensor_maps else
                            "neither a local nor a scalar parameter")
                    raise _Violation(f"{name!r} is {kind}", e)
                self.typed(e, declared, f"{name!r} is {declared.value}")
            case ir.Builtin(name=name):
                if not isinstance(name, ir.BuiltinName):
                    raise _Violation(f"{name!r} is not a builtin", e)
                self.typed(e, E.U32, "builtins are u32")
            case ir.Binary():
                self.binary(e)
            case ir.Unary(op=op, x=x):
                self.expr(x)
                self.operand(op.value, _UNARY_OPERANDS[op], x.type, e)
                self.typed(e, x.type, f"'{op.value}' keeps its operand's type")
            case ir.Math():
                self.math(e)
            case ir.Cast(x=x, type=t):
                self.expr(x)
                self.valid(t, e)
                if ir.line_size(x.type) != ir.line_size(t):
                    raise _Violation(f"a cast keeps the line size, not {x.type.value} to "
                                     f"{t.value}", e)
                mini = [u for u in (x.type, t) if isinstance(u, E) and u.is_minifloat]
                if mini and (len(mini) == 2 or E.F32 not in (x.type, t)):
                    raise _Violation(f"a minifloat converts to and from f32 only, not "
                                     f"{x.type.value} to {t.value}", e)
            case ir.Bitcast(x=x, type=t):
                self.expr(x)
                if not isinstance(x.type, ir.Elem) or not isinstance(t, ir.Elem):
                    raise _Violation("a bit cast is between element types, not lines", e)
                if (x.type is E.BOOL or t is E.BOOL or x.type is E.F16 or t is E.F16
                        or x.type.bits < 32 or x.type.bits != t.bits):
                    raise _Violation(f"a bit cast is between numeric types of one width "
                                     f"(32 or 64 bits), not {x.type.value} to {t.value}", e)
            case ir.Select(cond=cond, a=a, b=b):
                self.expr(cond)
                self.expr(a)
                self.expr(b)
                if cond.type is not E.BOOL and cond.type is not _like(a.type, E.BOOL):
                    raise _Violation(f"the condition is {cond.type.value}, not bool (or a "
                                     "line of bools as long as the sides)", e)
                if a.type is not b.type:
                    raise _Violation(f"the two sides of select are {a.type.value} and "
                                     f"{b.type.value}, not one type", e)
                self.typed(e, a.type, "select has its sides' type")
            case ir.Load(array=array, index=index):
                elem = self.memory(array, e)
                self.index(index, e)
                self.typed(e, elem, f"{array!r} holds {elem.value}")
            case ir.Len(array=array) | ir.Rank(array=array) | ir.BufferLen(array=array):
                self.array_param(array, e)
            case ir.Shape(array=array, dim=dim) | ir.Stride(array=array, dim=dim):
                self.array_param(array, e)
                if isinstance(dim, bool) or not isinstance(dim, int) or dim < 0:
                    raise _Violation(f"the axis {dim!r} is not a non-negative integer "
                                     "constant", e)
            case ir.PlaneOp():
                self.plane(e)
            case ir.LineFill(x=x, type=t):
                self.expr(x)
                self.valid(t, e)
                if not isinstance(t, ir.Line):
                    raise _Violation(f"a line fill is typed {t.value}, not a line", e)
                self.typed(x, t.elem, f"the line fill makes a {t.value}")
            case ir.LineElement(x=x, index=index):
                line = self.line_operand("an element access", x, e)
                if isinstance(index, bool) or not isinstance(index, int) \
                        or not 0 <= index < line.size:
                    raise _Violation(f"the element index {index!r} is not a constant in "
                                     f"0..{line.size - 1}", e)
                self.typed(e, line.elem, f"the line is {line.value}")
            case ir.LineMake(parts=parts, type=t):
                self.valid(t, e)
                if not isinstance(t, ir.Line) or len(parts) != t.size:
                    raise _Violation(f"a line made of {len(parts)} parts is typed "
                                     f"{t.value}, not a line of as many", e)
                for x in parts:
                    self.expr(x)
                    self.typed(x, t.elem, f"the line made is {t.value}")
            case ir.LineReduce(fn=fn, x=x):
                if not isinstance(fn, ir.ReduceFn):
                    raise _Violation(f"{fn!r} is not a ReduceFn", e)
                line = self.line_operand(f"line_{fn.value}", x, e)
                self.operand(f"line_{fn.value}", _NUMBERS, line, e)
                self.typed(e, line.elem, f"the line is {line.value}")
            case _:
                raise _Violation("not an IR expression", e)

    def valid(self, t: object, e: ir.Expr) -> None:
        """Check that ``t`` is a type a value may have."""
        problem = _type_problem(t)
        if problem is not None:
            raise _Violation(problem, e)

    def line_operand(self, what: str, x: ir.Expr, e: ir.Expr) -> ir.Line:
        """Check the operand of an operation on one line, and return its type."""
        self.expr(x)
        if not isinstance(x.type, ir.Line):
            raise _Violation(f"{what} takes a line, not {x.type.value}", e)
        return x.type

    def typed(self, e: ir.Expr, want: ir.Type, why: str) -> None:
        """Check that ``e`` carries the type ``want`` (``why`` says where it comes from)."""
        if e.type is not want:
            raise _Violation(f"the expression is typed {e.type.value}, but {why}", e)

    def operand(self, op: str, takes: _Takes, t: ir.Type, e: ir.Expr) -> None:
        """Check that an operand type is one that ``op`` takes (elementwise, on a line)."""
        what, accepts = takes
        if not accepts(ir.elem_of(t)):
            raise _Violation(f"'{op}' takes {what}, not {t.value}", e)

    def array_param(self, array: str, e: ir.Expr) -> None:
        """Check a ``Len``/``BufferLen``/``Rank``/``Shape``/``Stride``: of an array
        parameter, and ``u32``."""
        if array not in self.arrays:
            raise _Violation(f"{array!r} is not an array parameter", e)
        self.typed(e, E.U32, "lengths, shapes and strides are u32")

    def binary(self, e: ir.Binary) -> None:
        """Check ``lhs op rhs``: one operand type that ``op`` takes, and the result's type."""
        self.expr(e.lhs)
        self.expr(e.rhs)
        t = e.lhs.type
        if e.rhs.type is not t:
            raise _Violation(f"the operands of '{e.op.value}' are {t.value} and "
                             f"{e.rhs.type.value}, not one type", e)
        self.operand(e.op.value, _BINARY_OPERANDS[e.op], t, e)
        if isinstance(t, ir.Line) and e.op in (ir.BinOp.AND, ir.BinOp.OR):
            raise _Violation(f"'{e.op.value}' short-circuits, so it takes bools, not lines "
                             "(select on a line of bools instead)", e)
        if e.op.is_comparison:
            self.typed(e, _like(t, E.BOOL), "comparisons give bool")
        else:
            self.typed(e, t, f"'{e.op.value}' keeps its operands' type")

    def math(self, e: ir.Math) -> None:
        """Check a math function: its arity, one argument type it takes, its result type."""
        arity = _ARITY.get(e.fn, 1)
        if len(e.args) != arity:
            raise _Violation(f"{e.fn.value} takes {arity} argument{'s' * (arity > 1)}, "
                             f"not {len(e.args)}", e)
        for a in e.args:
            self.expr(a)
        t = e.args[0].type
        if e.fn is ir.MathFn.POWI:
            if e.args[1].type is not _like(t, E.I32):
                raise _Violation(f"the exponent of powi is {e.args[1].type.value}, not "
                                 f"{_like(t, E.I32).value}", e)
        elif any(a.type is not t for a in e.args):
            types = ", ".join(a.type.value for a in e.args)
            raise _Violation(f"the arguments of {e.fn.value} are {types}, not one type", e)
        takes = _FLOATS if e.fn in _FLOAT_FNS else _WIDE_INTEGERS if e.fn in _INT_FNS \
            else _NUMBERS
        self.operand(e.fn.value, takes, t, e)
        if e.fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF):
            self.typed(e, _like(t, E.BOOL), f"{e.fn.value} gives bool")
        elif e.fn in _COUNTING_FNS:
            self.typed(e, _like(t, E.U32), f"{e.fn.value} gives u32")
        else:
            self.typed(e, t, f"{e.fn.value} keeps its arguments' type")

    def plane(self, e: ir.PlaneOp) -> None:
        """Check a plane operation: the value's type, a lane for ``broadcast`` and
        ``shuffle_xor`` only, and the result's type."""
        self.expr(e.value)
        name = f"plane_{e.fn.value}"
        if not isinstance(e.value.type, ir.Elem):
            raise _Violation(f"{name} takes an element, not {e.value.type.value}", e)
        if e.value.type.is_narrow or e.value.type.is_minifloat:
            raise _Violation(f"{name} takes no 8- or 16-bit integer or minifloat "
                             f"({e.value.type.value})", e)
        if e.fn in _LANE_PLANE_FNS:
            if e.lane is None:
                raise _Violation(f"{name} needs a lane", e)
            self.expr(e.lane)
            if not _is_int(e.lane.type):
                raise _Violation(f"the lane is {e.lane.type.value}, not an integer type", e)
        else:
            takes = _BOOLS if e.fn in _BOOL_PLANE_FNS else _NUMBERS
            self.operand(name, takes, e.value.type, e)
            if e.lane is not None:
                raise _Violation(f"{name} takes no lane (broadcast and the shuffles alone "
                                 "do)", e)
        if e.fn is ir.PlaneFn.BALLOT:
            self.typed(e, E.U32, "plane_ballot gives u32")
        else:
            self.typed(e, e.value.type, "a plane operation keeps its value's type")
