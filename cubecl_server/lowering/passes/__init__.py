"""The passes that take a kernel from the IR down to the core IR every emitter
writes 1:1: what the IR means is said here, once; an emitter only spells it.

:func:`lower` runs them in order, each a plain function from kernel to kernel
(tested alone in ``tests/lowering/test_passes.py``), as far as the target's :class:`Native`
asks:

1. :func:`~.minifloats.lower_minifloats`: ``e4m3``/``e5m2`` as ``u8`` bits, their
   conversions to and from ``f32`` as integer arithmetic.
2. :func:`~.checked.check_accesses` (checked mode): each access the bounds analysis
   did not prove inside its array gets its check as an ``if``.
3. :func:`~.memory.clear_arrays`: shared and local arrays cleared where the target
   does not start them at zero.
4. :func:`~.atomics.loop_float_atomics`: the f32 atomics the target lacks as
   compare-exchange loops.
5. :func:`~.mathlib.polyfill_math`: the float functions the target lacks, and
   ``fmod``, as IR.
6. :func:`~.lines.lower_lines`: ``len`` of a line array from its elements; a line's
   reduction from its elements.
7. :func:`~.logical.fix_evaluation`: ``and``/``or`` that must not evaluate their
   right side as ``if``\\ s; ``select`` sides holding plane operations computed first.
8. :func:`~.loops.count_loops`: every ``for`` from 0 by 1 to a trip count.
9. :func:`~.builtins.derive_builtins`: the builtins the target lacks, from the rest.
10. :func:`~.integers.lower_integers`: ``//``, ``%`` and shifts that never trap or
    wrap the amount, integer ``abs``/``min``/``max``, ``sign`` and ``clamp``, and the
    integer functions the target lacks.
11. :func:`~.floats.order_nans`: float ``min``/``max`` that never meet a NaN.

The core IR is the IR with these differences (``docs/ir.md``, "The core IR"): every
access is inside its array (an element-typed access of a line array, counting
elements, and ``buffer_len`` of one, may appear); ``len`` of a line array counts
elements; every ``for`` counts an unsigned counter from 0 by 1 to a constant or a
local the body does not assign; ``and``/``or`` (without ``Native.short_circuit``)
have right sides that neither load nor hold plane operations, and ``select`` sides
hold none; a divisor is never 0, nor -1 on a signed type; a shift amount is below the
width; only native builtins and functions remain; an
``AtomicStmt`` with ``u32`` operands on an ``f32`` array acts on the element's bits;
``LineMake`` builds lines and there is no ``LineReduce``; there are no minifloats.
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeDim
from cubecl_server.lowering.passes.native import (
    ALL_BUILTINS,
    GRID_BUILTINS,
    INT_FUNCTIONS,
    Native,
)

__all__ = ["lower", "Native", "ALL_BUILTINS", "GRID_BUILTINS", "INT_FUNCTIONS"]


def lower(kernel: ir.Kernel, cube_dim: CubeDim, mode: ExecutionMode, native: Native,
          backend: str) -> ir.Kernel:
    """``kernel`` (checked by :func:`cubecl_server.ir_check.check_kernel`) in the core
    IR, for launches of ``cube_dim`` in ``mode`` on a target doing what ``native`` says.

    Raises ``CompilationError`` (naming ``backend``) for what cannot be lowered."""
    # The passes load when a kernel is first lowered: a process whose kernels all come
    # from the store, or that only names a Native, never imports them (nor the mathlib).
    from cubecl_server.lowering.passes.atomics import loop_float_atomics
    from cubecl_server.lowering.passes.bounds import in_bounds
    from cubecl_server.lowering.passes.builtins import derive_builtins
    from cubecl_server.lowering.passes.checked import check_accesses
    from cubecl_server.lowering.passes.floats import order_nans
    from cubecl_server.lowering.passes.integers import lower_integers
    from cubecl_server.lowering.passes.lines import lower_lines
    from cubecl_server.lowering.passes.logical import fix_evaluation
    from cubecl_server.lowering.passes.loops import count_loops
    from cubecl_server.lowering.passes.mathlib import polyfill_math
    from cubecl_server.lowering.passes.memory import clear_arrays
    from cubecl_server.lowering.passes.minifloats import lower_minifloats

    kernel = lower_minifloats(kernel)
    if mode is ExecutionMode.CHECKED:
        kernel = check_accesses(kernel, in_bounds(kernel, cube_dim), native)
    kernel = clear_arrays(kernel, cube_dim, native)
    kernel = loop_float_atomics(kernel, native)
    kernel = polyfill_math(kernel, native, backend)
    kernel = lower_lines(kernel)
    kernel = fix_evaluation(kernel, native)
    kernel = count_loops(kernel)
    kernel = derive_builtins(kernel, cube_dim, native, backend)
    kernel = lower_integers(kernel, native)
    return order_nans(kernel, native)
