"""Lazy attributes for a plugin's package: names that import their module on first use.

Discovery imports every installed plugin's package in every process, whichever backend
it uses, so a package that re-exports its backend's parts loads each one only when it
is asked for (``docs/writing-a-backend.md``, section 2).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(module: str, homes: Mapping[str, str]
                    ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the module named ``module``: each name of
    ``homes`` is imported from the module beside it the first time it is asked for, and
    kept. Use them as ``__getattr__, __dir__ = lazy_attributes(__name__, {...})``."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            # AttributeError, not ImportError: `from package import submodule` then
            # imports the submodule.
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[module], name, value)
        return value

    def __dir__() -> list[str]:
        # The module's public names: its __all__, and the lazy ones not loaded yet.
        return sorted({*homes, *getattr(sys.modules[module], "__all__", ())})

    return __getattr__, __dir__
