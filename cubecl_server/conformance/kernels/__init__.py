"""The kernels the conformance suite launches, importable by the fresh processes of
its compile-path tests: a module a topic, beside the suite module that tests it
(:mod:`.operations`, :mod:`.programs`, :mod:`.language_more`, :mod:`.views`,
:mod:`.semantics`, :mod:`.lines`, :mod:`.bounds`, :mod:`.narrow`, :mod:`.minifloats`,
:mod:`.structs`, and the set the compile-only tests take, :mod:`.kernel_set`); every
name is imported from here (``from cubecl_server.conformance import kernels``;
``kernels.saxpy``).

No module of the package uses ``from __future__ import annotations``: the
factories build kernels whose annotations name a closure variable
(``Array[T]``), which the kernel language reads from the evaluated annotation.
Factories are cached so each (operation, type) is one kernel object per process.
Names of the language that may not exist in an older core (``shared``, atomics,
plane operations, ``cube_fn``) are reached through the module (``cl.shared``), so a
missing one fails the tests that use it, not the import of the suite.
"""

# Each topic module's ``__all__`` is the list of what it offers; the package re-exports
# exactly those, so a name is added in one place.
from . import (
    bounds,
    kernel_set,
    language_more,
    lines,
    minifloats,
    narrow,
    operations,
    programs,
    semantics,
    structs,
    views,
)
from .bounds import *  # noqa: F403
from .kernel_set import *  # noqa: F403
from .language_more import *  # noqa: F403
from .lines import *  # noqa: F403
from .minifloats import *  # noqa: F403
from .narrow import *  # noqa: F403
from .operations import *  # noqa: F403
from .programs import *  # noqa: F403
from .semantics import *  # noqa: F403
from .structs import *  # noqa: F403
from .views import *  # noqa: F403

__all__ = [
    *bounds.__all__,
    *kernel_set.__all__,
    *language_more.__all__,
    *lines.__all__,
    *minifloats.__all__,
    *narrow.__all__,
    *operations.__all__,
    *programs.__all__,
    *semantics.__all__,
    *structs.__all__,
    *views.__all__,
]
