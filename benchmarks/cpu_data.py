"""Group 11's inputs and checks, shared by our backends and the peers (Taichi, Warp):
fresh random data made once per run, and each result checked against NumPy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from cubecl_server.conformance.kernels import collatz_reference

__all__ = ["CpuData", "Run"]


@dataclass(frozen=True)
class Run:
    """One row's work on one system: the launch, the wait for it, the check."""

    launch: Callable[[], None]
    sync: Callable[[], None]
    check: Callable[[], None]


@dataclass
class CpuData:
    """The inputs of every row, at the sizes of the mode (``quick`` or full)."""

    quick: bool
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(11))

    def __post_init__(self) -> None:
        n = (1 << 20) if self.quick else (1 << 24)
        rows = 1024 if self.quick else 4096
        k = 256 if self.quick else 512
        m = (1 << 18) if self.quick else (1 << 20)
        self.x = self.rng.standard_normal(n, np.float32)
        self.y = self.rng.standard_normal(n, np.float32)
        self.grid = self.rng.standard_normal((rows, rows), np.float32)
        self.a = self.rng.standard_normal((k, k), np.float32)
        self.b = self.rng.standard_normal((k, k), np.float32)
        self.starts = self.rng.integers(1, 1 << 20, m, dtype=np.uint32)
        self.tiny = np.ones(64, np.float32)
        self._steps = collatz_reference(self.starts)

    @staticmethod
    def check_saxpy(got: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        """``got`` is ``2 * x + y``."""
        np.testing.assert_allclose(got, 2 * x + y, rtol=1e-5)

    def check_rows(self, got: np.ndarray) -> None:
        """``got`` holds the row sums of the grid."""
        np.testing.assert_allclose(got, self.grid.sum(1, np.float64), rtol=1e-3, atol=1e-2)

    def check_matmul(self, got: np.ndarray) -> None:
        """``got`` is ``a @ b``, in any shape of the same size."""
        k = self.a.shape[0]
        np.testing.assert_allclose(got.reshape(k, k), self.a.astype(np.float64) @ self.b,
                                   rtol=1e-3, atol=1e-3)

    def check_loop(self, got: np.ndarray) -> None:
        """``got`` holds the Collatz steps of the starts."""
        np.testing.assert_array_equal(got, self._steps)
