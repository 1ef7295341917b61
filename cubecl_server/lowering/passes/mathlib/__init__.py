"""The math library, once, as IR: every float function of ``docs/ir.md`` with C's
results at the edges, for the targets that lack it or compute it too loosely.

:func:`polyfill_math` replaces each ``Math`` the target does not compute itself
(:meth:`Native.has`) with IR computing it - and a float ``%`` with ``fmod``'s,
unless ``Native.float_rem``. First the functions that are others in disguise
(``RHYPOT`` is ``1 / HYPOT``, ``RSQRT`` ``1 / SQRT``, ``POWI`` ``POW`` of its exponent
as a float); then the polyfills registered in :data:`POLYFILLS`, each a function of
the pass and its arguments (:class:`~cubecl_server.lowering.passes.build.V`) giving
the result, which may call other functions through :meth:`MathPass.fn` (native or
polyfilled in turn). A polyfill is written for one element: a line's function is
its elements' ones.
"""

from __future__ import annotations

from cubecl_server import ir

# The families register their polyfills in POLYFILLS as they are imported.
from cubecl_server.lowering.passes.mathlib import erf, exp, hyperbolic, inverse, power, trig  # noqa: F401
from cubecl_server.lowering.passes.mathlib.registry import POLYFILLS, MathPass, Polyfill, polyfill
from cubecl_server.lowering.passes.native import Native

__all__ = ["MathPass", "POLYFILLS", "Polyfill", "polyfill", "polyfill_math"]


def polyfill_math(kernel: ir.Kernel, native: Native, backend: str) -> ir.Kernel:
    """``kernel`` computing only the float functions ``native`` has (see the module)."""
    return MathPass(kernel, native, backend).run()
