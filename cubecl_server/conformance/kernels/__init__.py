"""The kernels the conformance suite launches, importable by the fresh processes of
its compile-path tests: a module a topic, beside the suite module that tests it
(:mod:`.operations`, :mod:`.programs`, :mod:`.language_more`, :mod:`.views`,
:mod:`.semantics`, :mod:`.lines`, :mod:`.bounds`, :mod:`.narrow`, and the set the
compile-only tests take, :mod:`.kernel_set`); every name is imported from here
(``from cubecl_server.conformance import kernels``; ``kernels.saxpy``).

No module of the package uses ``from __future__ import annotations``: the
factories build kernels whose annotations name a closure variable
(``Array[T]``), which the kernel language reads from the evaluated annotation.
Factories are cached so each (operation, type) is one kernel object per process.
Names of the language that may not exist in an older core (``shared``, atomics,
plane operations, ``cube_fn``) are reached through the module (``cl.shared``), so a
missing one fails the tests that use it, not the import of the suite.
"""

from .bounds import (
    bounds_guards,
    bounds_loops,
    bounds_shared,
)
from .kernel_set import KERNEL_SET
from .language_more import (
    plane_rest,
    slices,
    uniform_load,
    weak_tiled_matmul,
    weak_tree_sum,
)
from .lines import (
    line_copy,
    line_floats,
    line_gather,
    line_ints,
    lines_saxpy,
)
from .narrow import (
    NARROW_OPS,
    narrow_casts,
    narrow_every_other,
    narrow_ops,
)
from .operations import (
    atomic_bits,
    binary,
    bitcast_kernel,
    bits1,
    bits_more,
    builtins,
    cast,
    compare,
    control_flow,
    control_flow_reference,
    logical,
    math1,
    math2,
    math3,
    math_more,
    plane_more,
    powi_kernel,
    scalar,
    select_kernel,
    short_circuit,
    ternary,
    typed_inside,
    unary,
    with_scalar,
)
from .programs import (
    IrKernel,
    add_const,
    atomic_cas,
    atomic_kernel,
    comptime_poly,
    cube_fn_kernel,
    f64_kernel,
    histogram,
    matmul,
    plane_kernel,
    reduce_sum,
    saxpy,
    scale,
    scan,
    shape_stride,
    softmax,
    transpose,
    transpose_shape,
    uncompilable,
    unrolled_sum,
)
from .semantics import (
    PLANE_BRANCH_SKIP,
    bounded_atomics,
    bounded_stores,
    loop_shapes,
    loop_shapes_reference,
    nested_branches,
    nested_branches_reference,
    plane_branch,
    shared_neighbours,
    signed_atomic,
    signed_index,
)
from .views import (
    plane_sync,
    strided,
    view_edges,
)

__all__ = [
    "scalar", "binary", "compare", "logical", "unary", "math1", "math2", "math3",
    "cast", "bitcast_kernel", "bits1", "powi_kernel", "bits_more", "plane_more",
    "atomic_bits", "typed_inside", "math_more", "select_kernel", "ternary",
    "with_scalar", "builtins", "control_flow", "control_flow_reference",
    "short_circuit", "scale", "add_const", "saxpy", "transpose", "reduce_sum", "matmul",
    "histogram", "softmax", "scan", "comptime_poly", "unrolled_sum", "cube_fn_kernel",
    "shape_stride", "transpose_shape", "atomic_kernel", "atomic_cas", "plane_kernel",
    "f64_kernel", "IrKernel", "uncompilable", "weak_tree_sum", "weak_tiled_matmul",
    "slices", "uniform_load", "plane_rest", "strided", "view_edges", "plane_sync",
    "signed_index", "signed_atomic", "nested_branches", "nested_branches_reference",
    "PLANE_BRANCH_SKIP", "plane_branch", "bounded_stores", "bounded_atomics",
    "loop_shapes", "loop_shapes_reference", "shared_neighbours", "line_floats",
    "line_ints", "line_copy", "lines_saxpy", "line_gather", "bounds_guards",
    "bounds_shared", "bounds_loops", "NARROW_OPS", "narrow_ops", "narrow_casts",
    "narrow_every_other", "KERNEL_SET",
]
