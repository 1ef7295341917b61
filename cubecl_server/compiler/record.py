"""What the environment records of a compilation: recordings, records, outcomes."""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Protocol

__all__ = [
    "CompilationOutcome", "CompilationStage", "CompilationRecord",
    "CompilationBatchRecord", "CompilationRecording", "Recorder", "TOTAL_MS_MEANS",
]

TOTAL_MS_MEANS = (
    "the milliseconds of the backend's trip for one kernel: reading the store, lowering "
    "to the backend's source, finalizing it into the artifact, storing and loading it "
    "(the stages of `cubecl-server compilations --wide`); parsing the Python into IR "
    "before it is not included"
)
"""What :attr:`CompilationRecord.total_ms` counts, in the words the commands that show
it (``compilations``, ``demo``) print."""


class CompilationOutcome(enum.Enum):
    """How a backend obtained a kernel's artifact."""

    COMPILED = "compiled"
    """Lowered and finalized here."""
    LOADED = "loaded"
    """Read from the compilation store under its own key."""
    REKEYED = "rekeyed"
    """Lowered, then found in the store under the source it lowered to (a changed
    build id with unchanged lowering): copied to the new key, not finalized."""


@dataclass(frozen=True)
class CompilationStage:
    """One step of a kernel's trip: its name, how long it took, and a size if any."""

    name: str
    ms: float
    size: int | None = None


@dataclass(frozen=True)
class CompilationRecord:
    """One kernel's trip through a backend's compilation path."""

    kernel: str
    backend: str
    variant: str
    key: str
    outcome: CompilationOutcome
    stages: tuple[CompilationStage, ...]
    artifact_size: int
    created: float
    cube_dim: tuple[int, int, int] | None = None
    """The cube dim the artifact was built for (None in a record kept before it was
    recorded)."""
    comptime: tuple[tuple[str, int | float | bool | str], ...] = ()
    """The kernel's comptime values, by name: what tells the variants of one kernel
    apart, with the cube dim."""

    @property
    def total_ms(self) -> float:
        """Milliseconds spent in all stages together (:data:`TOTAL_MS_MEANS`)."""
        return sum(s.ms for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (what the store and ``--json`` keep)."""
        d = asdict(self)
        d["outcome"] = self.outcome.value
        d["stages"] = [asdict(s) for s in self.stages]
        d["cube_dim"] = None if self.cube_dim is None else list(self.cube_dim)
        # JSON has no infinity or NaN: such a comptime float is kept as its text.
        d["comptime"] = {name: value if not isinstance(value, float) or math.isfinite(value)
                         else str(value) for name, value in self.comptime}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompilationRecord:
        """The inverse of :meth:`to_dict`."""
        return cls(
            kernel=d["kernel"], backend=d["backend"], variant=d["variant"], key=d["key"],
            outcome=CompilationOutcome(d["outcome"]),
            stages=tuple(CompilationStage(**s) for s in d["stages"]),
            artifact_size=d["artifact_size"], created=d["created"],
            cube_dim=None if d.get("cube_dim") is None else tuple(d["cube_dim"]),
            comptime=tuple(dict(d.get("comptime") or {}).items()),
        )


@dataclass(frozen=True)
class CompilationBatchRecord:
    """Kernels a server obtained together; a kernel compiled alone is a batch of one."""

    backend: str
    records: tuple[CompilationRecord, ...]
    wall_ms: float


class Recorder(Protocol):
    """Where closed recordings go (the environment's database, observer hooks)."""

    def record(self, record: CompilationRecord) -> None:
        """Keep one kernel's record."""
        ...

    def record_batch(self, batch: CompilationBatchRecord) -> None:
        """Keep the record of a batch, after each of its kernels' records."""
        ...


class CompilationRecording:
    """A compilation being recorded.

    The loader opens one for each kernel it does not hold; the backend tells it the
    stages the trip goes through; the loader closes it with the outcome. With no
    recorder every call is a no-op, and a recording dropped unclosed (a trip that
    failed) records nothing.
    """

    __slots__ = ("_active", "backend", "comptime", "cube_dim", "kernel", "stages", "variant")

    def __init__(self, active: bool, kernel: str, backend: str, variant: str, *,
                 cube_dim: tuple[int, int, int] | None = None,
                 comptime: tuple[tuple[str, int | float | bool | str], ...] = ()) -> None:
        self._active = active
        self.kernel = kernel
        self.backend = backend
        self.variant = variant
        self.cube_dim = cube_dim
        self.comptime = comptime
        self.stages: list[CompilationStage] = []

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as stage ``name``."""
        if not self._active:
            yield
            return
        start = time.perf_counter()
        yield
        self.stages.append(CompilationStage(name, (time.perf_counter() - start) * 1e3))

    def add(self, name: str, ms: float, size: int | None = None) -> None:
        """Add a stage measured by the backend itself (``size`` in bytes, if any)."""
        if self._active:
            self.stages.append(CompilationStage(name, ms, size))

    def close(self, outcome: CompilationOutcome, key: str,
              artifact_size: int) -> CompilationRecord | None:
        """End the recording; the record, or None when nothing records."""
        if not self._active:
            return None
        return CompilationRecord(self.kernel, self.backend, self.variant, key, outcome,
                                 tuple(self.stages), artifact_size, time.time(),
                                 self.cube_dim, self.comptime)
