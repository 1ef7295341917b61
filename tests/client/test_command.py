"""Commands: what the client builds and the server carries out, with the optional
fill and copy falling back to the contract's write and read for a server without them."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server.backends.cpu.server import CpuRuntime
from cubecl_server.command import Copy, FillCopy, Write, execute, nbytes
from cubecl_server.memory_management import Handle, MemoryManagement


class _ContractOnly:
    """The cpu server seen through the required contract alone (no fill, copy)."""

    def __init__(self) -> None:
        self._inner = CpuRuntime().create_server(0)
        self.storage = self._inner.storage

    def read(self, binding):  # type: ignore[no-untyped-def]
        return self._inner.read(binding)

    def write(self, binding, data):  # type: ignore[no-untyped-def]
        self._inner.write(binding, data)


@pytest.mark.parametrize("native", [True, False])
def test_fill_and_copy_with_and_without_the_servers_own(native: bool) -> None:
    from cubecl_server.command import Fill
    from cubecl_server.ir import Elem

    server = CpuRuntime().create_server(0) if native else _ContractOnly()
    assert isinstance(server, FillCopy) is native
    memory = MemoryManagement(server.storage)
    a = Handle(memory, memory.reserve(4 * 37), (37,), Elem.F32)
    b = Handle(memory, memory.reserve(4 * 37), (37,), Elem.F32)
    data = np.random.default_rng(2).standard_normal(37).astype(np.float32)
    execute(server, Write(a.binding(), data))           # type: ignore[arg-type]
    execute(server, Fill(b.binding(), np.float32(-2.5)))  # type: ignore[arg-type]
    np.testing.assert_array_equal(server.read(b.binding()), np.full(37, -2.5, np.float32))
    execute(server, Copy(a.binding(), b.binding()))     # type: ignore[arg-type]
    np.testing.assert_array_equal(server.read(b.binding()), data)
    assert nbytes(Copy(a.binding(), b.binding())) == 2 * 4 * 37
    with pytest.raises(TypeError, match="not a command"):
        execute(server, object())  # type: ignore[arg-type]
