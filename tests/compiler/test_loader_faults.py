"""The loader against faults: a stored artifact that fails to load in any way, a fresh
one the device rejects, and another process compiling the same kernel at once."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import kernels

from cubecl_server.client import create_client, recording
from cubecl_server.compiler import ArtifactStore, CompilationOutcome, KernelCacheKey
from cubecl_server.errors import ArtifactRejected, CompilationError
from cubecl_server.kernel import CubeCount, CubeDim

DIM = CubeDim(64)


class FailingFirstLoad:
    """The real cpu target, except that its first load raises what a broken artifact
    of the old marshal kind raised: a ModuleNotFoundError from its module body."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.loads = 0

    @property
    def store(self) -> ArtifactStore | None:
        return self.inner.store

    def load(self, artifact: Any) -> Any:
        self.loads += 1
        if self.loads == 1:
            raise ModuleNotFoundError("No module named 'vanished'")
        return self.inner.load(artifact)


def _scale(c: Any) -> np.ndarray:
    a, out = c.create(np.arange(10, dtype=np.float32)), c.empty(10, np.float32)
    kernels.scale.launch(c, CubeCount(1), DIM, a, out, 3.0)
    return c.read(out)


def test_a_stored_artifact_whose_load_raises_anything_is_purged_and_rebuilt() -> None:
    _scale(create_client("cpu"))                       # compiles and stores
    c = create_client("cpu")
    c.loader.target = FailingFirstLoad(c.loader.target)  # type: ignore[assignment]
    with recording(c) as recs:
        np.testing.assert_array_equal(_scale(c), np.arange(10, dtype=np.float32) * 3)
    assert [r.outcome for r in recs] == [CompilationOutcome.COMPILED]
    # The rebuilt artifact replaced the bad one: the next process loads it.
    with recording(fresh := create_client("cpu")) as recs:
        np.testing.assert_array_equal(_scale(fresh), np.arange(10, dtype=np.float32) * 3)
    assert [r.outcome for r in recs] == [CompilationOutcome.LOADED]


class StaleFirstRead:
    """The real store, whose first kernels-map read comes too early: another process
    stores the kernel just after it."""

    def __init__(self, inner: ArtifactStore) -> None:
        self.inner = inner
        self.first = True

    def get(self, key: KernelCacheKey) -> Any:
        if self.first:
            self.first = False
            return None
        return self.inner.get(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Target:
    """The real cpu target, seen through a store of the caller's choice."""

    def __init__(self, inner: Any, store: Any) -> None:
        self.inner, self.store = inner, store

    def load(self, artifact: Any) -> Any:
        return self.inner.load(artifact)


def test_a_kernel_another_process_compiled_meanwhile_is_recorded_as_loaded() -> None:
    _scale(create_client("cpu"))                       # "the other process"
    c = create_client("cpu")
    store = c.loader.target.store
    assert store is not None
    c.loader.target = Target(c.loader.target, StaleFirstRead(store))  # type: ignore[assignment]
    with recording(c) as recs:
        np.testing.assert_array_equal(_scale(c), np.arange(10, dtype=np.float32) * 3)
    assert [r.outcome for r in recs] == [CompilationOutcome.LOADED]


class RejectingTarget:
    """The real cpu target, with a driver that refuses every artifact."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def store(self) -> ArtifactStore | None:
        return self.inner.store

    def load(self, artifact: Any) -> Any:
        raise ArtifactRejected("this driver takes nothing")


def test_a_fresh_artifact_the_device_rejects_is_not_left_in_the_store() -> None:
    c = create_client("cpu")
    c.loader.target = RejectingTarget(c.loader.target)  # type: ignore[assignment]
    aid = c.artifact_id(kernels.scale, DIM, {})
    with pytest.raises(CompilationError, match="rejected a freshly compiled artifact"):
        c.loader.get(aid)
    store = c.loader.target.store
    assert store is not None
    assert store.get(KernelCacheKey.of(aid, c.loader.build_id)) is None
