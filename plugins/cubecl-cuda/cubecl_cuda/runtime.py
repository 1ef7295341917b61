"""The ``cuda`` runtime: the GPUs CUDA sees here, and a server for one of them.

CuPy is imported when the devices are first asked for, not with the module: the
plugin's discovery (every ``cubecl-server`` command, every other backend's client)
imports this module and must not pay CuPy's few hundred milliseconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubecl_server.backend import BackendUnavailable, DeviceInfo, DeviceKind

if TYPE_CHECKING:
    from cubecl_cuda.server import CudaServer

__all__ = ["CudaRuntime", "NO_DEVICE"]

NO_DEVICE = "no CUDA device"
"""The reason ``cubecl-server backends`` gives where there is no GPU (or no driver)."""

# cudaErrorStubLibrary, cudaErrorInsufficientDriver (what a machine without a driver
# reports), cudaErrorNoDevice: all mean "no GPU to run on here".
_NO_DEVICE_CODES = frozenset({34, 35, 100})


class CudaRuntime:
    """Lists the CUDA devices and creates their servers."""

    name = "cuda"

    def devices(self) -> list[DeviceInfo]:
        """Every GPU CUDA sees; ``BackendUnavailable("no CUDA device")`` without one."""
        from cupy.cuda import runtime

        from cubecl_cuda.driver import CudaError, status_name
        from cubecl_cuda.server import device_arch

        try:
            count = runtime.getDeviceCount()
        except CudaError as e:
            if int(e.status) in _NO_DEVICE_CODES:
                raise BackendUnavailable(NO_DEVICE) from e
            raise BackendUnavailable(f"CUDA runtime failed: {status_name(e)}") from e
        if count == 0:
            raise BackendUnavailable(NO_DEVICE)
        version = runtime.driverGetVersion()
        driver = f"{version // 1000}.{version % 1000 // 10}"
        out = []
        for i in range(count):
            props = runtime.getDeviceProperties(i)
            name = props["name"]
            name = name.decode() if isinstance(name, bytes) else str(name)
            kind = DeviceKind.INTEGRATED_GPU if props.get("integrated") else \
                DeviceKind.DISCRETE_GPU
            out.append(DeviceInfo("cuda", i, f"{name} ({device_arch(i)})", kind,
                                  vendor="NVIDIA", driver_version=driver))
        return out

    def create_server(self, device: int) -> CudaServer:
        """The server for ``devices()[device]``."""
        from cubecl_cuda.server import CudaServer

        devices = self.devices()
        if not 0 <= device < len(devices):
            raise IndexError(f"cuda has {len(devices)} device(s), not {device}")
        return CudaServer(devices[device])
