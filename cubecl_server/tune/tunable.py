"""What is tuned: candidates (:class:`Tunable`), the set they form (:class:`TunableSet`)
and the key helpers that let similar inputs share one tuning (:func:`anchor`)."""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cubecl_server.client import ComputeClient
from cubecl_server.kernel import CubeDim, Launchable
from cubecl_server.memory_management import Handle

__all__ = ["KernelSpec", "Tunable", "TunableSet", "anchor", "copy_inputs", "key_text"]


def anchor(x: int, *, min: int = 1, max: int | None = None) -> int:
    """``x`` rounded up to the next power of two, at least ``min`` and at most ``max``:
    sizes that round to one anchor share a tuning (CubeCL's ``anchor``)."""
    if x < 0:
        raise ValueError(f"cannot anchor a negative size ({x})")
    # ``min`` and ``max`` name the keywords, as in CubeCL: the builtins by their module.
    value = 1 << (builtins.max(x, min, 1) - 1).bit_length()
    return value if max is None else builtins.min(value, max)


def key_text(key: Hashable) -> str:
    """The text an autotune key is stored under: canonical JSON (tuples as lists,
    dataclasses as objects). TypeError for a key that has none."""
    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {"__type__": type(value).__name__,
                    **{f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}}
        if isinstance(value, (tuple, list)):
            return [plain(v) for v in value]
        if isinstance(value, Mapping):
            return {str(k): plain(v) for k, v in value.items()}
        if value is None or isinstance(value, (str, int, float, bool)):
            return value
        raise TypeError(f"autotune key part {value!r} ({type(value).__name__}) cannot be "
                        "stored: use str, int, float, bool, None, tuples or dataclasses of "
                        "those")
    return json.dumps(plain(key), sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class KernelSpec:
    """One kernel a candidate launches, as compiled ahead of timing: the kernel, its
    cube dim and its comptime values."""

    kernel: Launchable
    cube_dim: CubeDim | int | tuple[int, ...]
    comptime: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Tunable:
    """One named candidate: ``run(client, *inputs)`` launches its kernels on the inputs
    and returns its output (a buffer, a tuple of them, or None when it writes into its
    inputs).

    ``kernels`` lists the kernels it launches, so that every candidate of a set is
    compiled together before any is timed; one left out is compiled by the
    candidate's warm-up run instead.
    """

    name: str
    run: Callable[..., Any]
    kernels: Sequence[KernelSpec] = ()


def copy_inputs(client: ComputeClient, *inputs: Any) -> tuple[Any, ...]:
    """The inputs with every buffer copied (through the host): what candidates are
    timed on unless a set makes its own, so they never write the caller's buffers."""
    return tuple(client.create(client.read(a)) if isinstance(a, Handle) else a
                 for a in inputs)


class TunableSet:
    """The candidates of one tuned operation, the autotune key of its inputs, and how
    to make inputs to time them on.

    ``key(*inputs)`` must return a hashable value that :func:`key_text` can store
    (use :func:`anchor` so similar sizes share a result). ``inputs(client, *inputs)``
    returns fresh inputs for timing (default: :func:`copy_inputs`). With ``check``, a
    candidate whose output differs from the first candidate's beyond ``rtol`` and
    ``atol`` is excluded, so a wrong fast kernel cannot win silently.
    """

    def __init__(self, candidates: Sequence[Tunable], key: Callable[..., Hashable],
                 inputs: Callable[..., tuple[Any, ...]] | None = None, *,
                 check: bool = False, rtol: float = 1e-5, atol: float = 1e-6) -> None:
        self.candidates = tuple(candidates)
        if not self.candidates:
            raise ValueError("a TunableSet needs at least one candidate")
        names = [c.name for c in self.candidates]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"candidate names must be unique; repeated: {', '.join(twice)}")
        self.names = tuple(names)
        self.key = key
        self.inputs = inputs or copy_inputs
        self.check = check
        self.rtol = rtol
        self.atol = atol
        self.digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
        """A digest of the candidates' names: a changed set is tuned again."""
        self._by_name = {c.name: c for c in self.candidates}

    def candidate(self, name: str) -> Tunable | None:
        """The candidate called ``name``, if the set has one."""
        return self._by_name.get(name)

    def __repr__(self) -> str:
        return f"TunableSet({', '.join(self.names)})"
