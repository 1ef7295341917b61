"""The Vulkan device: the binding, the instance, the physical device and its queue.

The ``vulkan`` binding (cffi, 1.3.x) is imported lazily through :func:`vulkan_api`,
so the plugin registers (and ``cubecl-server backends`` lists it) on a machine
without a Vulkan loader; creating a runtime there raises ``BackendUnavailable``.

Every call that can fail goes through :func:`check`, which turns the binding's
exception classes back into the ``VkResult`` code and name (:func:`vk_error`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from cubecl_server.backend import BackendUnavailable, Capabilities, DeviceInfo, DeviceKind
from cubecl_server.backend.support import MAX_UNITS, DriverError, code_names, driver_error
from cubecl_server.ir import Elem
from cubecl_vulkan import BACKEND
from cubecl_vulkan.native import ShaderFeatures

__all__ = [
    "BACKEND", "ENV_DEVICE", "vulkan_api", "vk_error", "check", "PhysicalDevice",
    "physical_devices", "VulkanDevice",
]

ENV_DEVICE = "CUBECL_VULKAN_DEVICE"
"""Picks the physical device: an index into the list, or a part of its name."""

_API_VERSION = (1, 1, 0)  # subgroup operations and SPIR-V 1.3 need Vulkan 1.1

T = TypeVar("T")

_vk: Any = None
_vk_lock = threading.Lock()
_result_names: dict[int, str] = {}
_codes_by_class: dict[type, int] = {}


def vulkan_api() -> Any:
    """The ``vulkan`` module, imported on first use; BackendUnavailable without a loader."""
    global _vk
    with _vk_lock:
        if _vk is None:
            try:
                import vulkan
            except (ImportError, OSError) as e:
                raise BackendUnavailable(
                    f"the Vulkan loader cannot be used ({e}); install libvulkan1 and an "
                    "ICD (mesa-vulkan-drivers gives lavapipe)") from e
            _result_names.update(code_names(_ResultCodes(vulkan), "VK_"))
            _codes_by_class.update({cls: code for code, cls in vulkan.exception_codes.items()})
            _vk = vulkan
        return _vk


class _ResultCodes:
    """The ``VkResult`` enumerants of the binding, as attributes (for ``code_names``)."""

    def __init__(self, vk: Any) -> None:
        for name in dir(vk):
            if name.startswith("VK_ERROR_") or name in (
                    "VK_SUCCESS", "VK_NOT_READY", "VK_TIMEOUT", "VK_EVENT_SET",
                    "VK_EVENT_RESET", "VK_INCOMPLETE"):
                setattr(self, name, getattr(vk, name))


def vk_error(call: str, exc: BaseException, detail: str = "") -> DriverError:
    """The DriverError for the binding's exception ``exc`` raised by ``call``."""
    code = _codes_by_class.get(type(exc), 0)
    return driver_error(BACKEND, call, code, _result_names, detail)


def check(call: str, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, with the binding's VkResult exceptions raised as DriverError."""
    vk = vulkan_api()
    try:
        return fn(*args)
    except (vk.VkError, vk.VkException) as e:
        raise vk_error(call, e) from e


def _version(v: int) -> str:
    return f"{v >> 22}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


_KINDS = {0: DeviceKind.OTHER, 1: DeviceKind.INTEGRATED_GPU, 2: DeviceKind.DISCRETE_GPU,
          3: DeviceKind.VIRTUAL, 4: DeviceKind.CPU}
_PREFERENCE = {DeviceKind.DISCRETE_GPU: 0, DeviceKind.INTEGRATED_GPU: 1,
               DeviceKind.VIRTUAL: 2, DeviceKind.OTHER: 3, DeviceKind.CPU: 4}


@dataclass(frozen=True)
class PhysicalDevice:
    """One physical device as the instance reports it, with everything the backend
    derives from it: features for the compiler, capabilities, the store variant."""

    handle: Any
    name: str
    kind: DeviceKind
    vendor_id: int
    api_version: int
    driver_version: int
    device_uuid: bytes
    pipeline_cache_uuid: bytes
    features: ShaderFeatures
    extensions: frozenset[str]
    queue_family: int
    timestamp_bits: int
    """The queue family's ``timestampValidBits`` (0: no timestamps on it)."""
    timestamp_period: float
    """``VkPhysicalDeviceLimits.timestampPeriod``: nanoseconds per timestamp tick."""
    timestamps: bool
    """Whether the chosen queue writes timestamps: ``timestampValidBits > 0``, a
    positive period, and, on a queue without graphics, ``timestampComputeAndGraphics``
    (a compute-only queue of a device without it is not trusted)."""
    min_storage_offset_alignment: int
    min_uniform_offset_alignment: int
    max_storage_range: int
    max_workgroup_count: tuple[int, int, int]
    host_visible_storage: bool

    @property
    def variant(self) -> str:
        """What SPIR-V and pipeline-cache data built here are valid for: device UUID,
        pipelineCacheUUID, driver version and name (never a lossy number)."""
        return (f"{self.name} driver {_version(self.driver_version)} "
                f"({self.driver_version}) device {self.device_uuid.hex()} "
                f"cache {self.pipeline_cache_uuid.hex()}")

    def info(self, index: int) -> DeviceInfo:
        """The device as the core names it."""
        return DeviceInfo(BACKEND, index, self.name, self.kind, vendor=f"0x{self.vendor_id:04x}",
                          driver_version=_version(self.driver_version))

    @property
    def capabilities(self) -> Capabilities:
        """What kernels may use here, from the features and limits."""
        f = self.features
        # f32 atomics the device lacks are the core's compare-exchange loops on u32.
        atomics = {Elem.I32, Elem.U32, Elem.F32}
        if f.int64_atomics:
            atomics |= {Elem.I64, Elem.U64}
        return Capabilities(
            f64=f.float64, f16=f.float16, int64=f.int64, atomics=frozenset(atomics),
            # 8-bit integers need what bools in buffers need: shaderInt8, 8-bit storage.
            int8=f.bool_storage, int16=f.int16,
            shared_memory_bytes=f.max_shared_bytes, max_cube_dim=f.max_invocations,
            plane_size=f.subgroup_size if f.subgroups else None, device_present=True,
            max_cube_count=self.max_cube_count(), line_sizes=(1, 2, 4, 8, 16),
            view_alignment=self.min_storage_offset_alignment)

    def max_cube_count(self) -> tuple[int, int, int]:
        """Cubes per axis a launch may have: the server folds an axis past
        ``maxComputeWorkGroupCount`` onto the others, so any axis may hold as many as
        all three together, up to the language's u32 positions."""
        mx, my, mz = self.max_workgroup_count
        most = min(mx * my * mz, MAX_UNITS)
        return (most, most, most)


_instance: Any = None
_instance_lock = threading.Lock()


def _create_instance() -> Any:
    """The process's VkInstance, created once (no layers: validation is optional)."""
    global _instance
    vk = vulkan_api()
    with _instance_lock:
        if _instance is None:
            # Kept in variables while the call runs: the binding frees nested structs'
            # strings with their Python owners.
            app = vk.VkApplicationInfo(
                sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO, pApplicationName="cubecl-server",
                pEngineName="cubecl-server", apiVersion=vk.VK_MAKE_VERSION(*_API_VERSION))
            info = vk.VkInstanceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                           pApplicationInfo=app)
            try:
                _instance = vk.vkCreateInstance(info, None)
            except (vk.VkError, vk.VkException) as e:
                raise BackendUnavailable(
                    f"no Vulkan instance: {vk_error('vkCreateInstance', e)} (is an ICD "
                    "installed? mesa-vulkan-drivers gives lavapipe)") from e
        return _instance


def _describe(vk: Any, handle: Any) -> PhysicalDevice | None:
    """A physical device's description; None when it cannot run our compute shaders."""
    props = vk.vkGetPhysicalDeviceProperties(handle)
    if props.apiVersion < vk.VK_MAKE_VERSION(*_API_VERSION):
        return None
    families = list(vk.vkGetPhysicalDeviceQueueFamilyProperties(handle))
    compute = [i for i, q in enumerate(families) if q.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
    if not compute:
        return None
    # A compute-only family first: it is the one meant for this work where both exist.
    compute.sort(key=lambda i: bool(families[i].queueFlags & vk.VK_QUEUE_GRAPHICS_BIT))
    family = compute[0]
    extensions = frozenset(e.extensionName for e in
                           vk.vkEnumerateDeviceExtensionProperties(handle, None))

    ids = vk.VkPhysicalDeviceIDProperties(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES)
    sub = vk.VkPhysicalDeviceSubgroupProperties(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, pNext=ids)
    props2 = vk.VkPhysicalDeviceProperties2(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=sub)
    vk.vkGetPhysicalDeviceProperties2(handle, props2)

    chain = _feature_chain(vk, props.apiVersion, extensions)
    vk.vkGetPhysicalDeviceFeatures2(handle, chain["features2"])
    core = chain["features2"].features
    v11, v12, af = chain.get("v11"), chain.get("v12"), chain.get("atomic_float")
    af2 = chain.get("atomic_float2")
    ops = sub.supportedOperations
    wanted_ops = (vk.VK_SUBGROUP_FEATURE_BASIC_BIT | vk.VK_SUBGROUP_FEATURE_ARITHMETIC_BIT
                  | vk.VK_SUBGROUP_FEATURE_SHUFFLE_BIT | vk.VK_SUBGROUP_FEATURE_VOTE_BIT
                  | vk.VK_SUBGROUP_FEATURE_BALLOT_BIT)
    limits = props.limits
    features = ShaderFeatures(
        float64=bool(core.shaderFloat64),
        int64=bool(core.shaderInt64),
        float16=bool(v12 and v12.shaderFloat16 and v11 and v11.storageBuffer16BitAccess),
        bool_storage=bool(v12 and v12.storageBuffer8BitAccess and v12.shaderInt8),
        int16=bool(core.shaderInt16 and v11 and v11.storageBuffer16BitAccess),
        int64_atomics=bool(core.shaderInt64 and v12 and v12.shaderBufferInt64Atomics
                           and v12.shaderSharedInt64Atomics),
        float32_atomic_add=bool(af and af.shaderBufferFloat32AtomicAdd
                                and af.shaderSharedFloat32AtomicAdd),
        float32_atomic_min_max=bool(af2 and af2.shaderBufferFloat32AtomicMinMax
                                    and af2.shaderSharedFloat32AtomicMinMax),
        subgroups=bool((ops & wanted_ops) == wanted_ops
                       and sub.supportedStages & vk.VK_SHADER_STAGE_COMPUTE_BIT),
        subgroup_extended_types=bool(v12 and v12.shaderSubgroupExtendedTypes),
        subgroup_size=int(sub.subgroupSize),
        max_shared_bytes=int(limits.maxComputeSharedMemorySize),
        max_invocations=int(limits.maxComputeWorkGroupInvocations),
        max_workgroup_size=tuple(int(x) for x in limits.maxComputeWorkGroupSize),
    )
    memory = vk.vkGetPhysicalDeviceMemoryProperties(handle)
    host_visible = any(
        memory.memoryTypes[i].propertyFlags & (vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
                                               | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
        == (vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
        for i in range(memory.memoryTypeCount))
    return PhysicalDevice(
        handle=handle, name=props.deviceName, kind=_KINDS.get(props.deviceType, DeviceKind.OTHER),
        vendor_id=props.vendorID, api_version=props.apiVersion,
        driver_version=props.driverVersion, device_uuid=bytes(ids.deviceUUID),
        pipeline_cache_uuid=bytes(props.pipelineCacheUUID), features=features,
        extensions=extensions, queue_family=family,
        timestamp_bits=int(families[family].timestampValidBits),
        timestamp_period=float(limits.timestampPeriod),
        timestamps=bool(families[family].timestampValidBits > 0 and limits.timestampPeriod > 0
                        and (limits.timestampComputeAndGraphics
                             or families[family].queueFlags & vk.VK_QUEUE_GRAPHICS_BIT)),
        min_storage_offset_alignment=int(limits.minStorageBufferOffsetAlignment),
        min_uniform_offset_alignment=int(limits.minUniformBufferOffsetAlignment),
        max_storage_range=int(limits.maxStorageBufferRange),
        max_workgroup_count=tuple(int(x) for x in limits.maxComputeWorkGroupCount),
        host_visible_storage=host_visible)


def _feature_chain(vk: Any, api_version: int, extensions: frozenset[str],
                   enable: ShaderFeatures | None = None) -> dict[str, Any]:
    """The VkPhysicalDeviceFeatures2 chain: empty to query, or with ``enable``'s
    features switched on to create a device. Every struct is returned so the caller
    keeps it alive while the chain is used."""
    out: dict[str, Any] = {}
    nxt: Any = None
    if "VK_EXT_shader_atomic_float" in extensions:
        on = bool(enable and enable.float32_atomic_add)
        nxt = out["atomic_float"] = vk.VkPhysicalDeviceShaderAtomicFloatFeaturesEXT(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT,
            shaderBufferFloat32AtomicAdd=on, shaderSharedFloat32AtomicAdd=on,
            shaderBufferFloat32Atomics=on, shaderSharedFloat32Atomics=on)
    if "VK_EXT_shader_atomic_float2" in extensions:
        on = bool(enable and enable.float32_atomic_min_max)
        nxt = out["atomic_float2"] = vk.VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_2_FEATURES_EXT,
            pNext=nxt, shaderBufferFloat32AtomicMinMax=on, shaderSharedFloat32AtomicMinMax=on)
    if api_version >= vk.VK_MAKE_VERSION(1, 2, 0):
        e = enable
        nxt = out["v11"] = vk.VkPhysicalDeviceVulkan11Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, pNext=nxt,
            storageBuffer16BitAccess=bool(e and (e.float16 or e.int16)))
        nxt = out["v12"] = vk.VkPhysicalDeviceVulkan12Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, pNext=nxt,
            shaderFloat16=bool(e and e.float16), shaderInt8=bool(e and e.bool_storage),
            storageBuffer8BitAccess=bool(e and e.bool_storage),
            shaderBufferInt64Atomics=bool(e and e.int64_atomics),
            shaderSharedInt64Atomics=bool(e and e.int64_atomics),
            shaderSubgroupExtendedTypes=bool(e and e.subgroup_extended_types))
    core = vk.VkPhysicalDeviceFeatures(
        shaderFloat64=bool(enable and enable.float64), shaderInt64=bool(enable and enable.int64),
        shaderInt16=bool(enable and enable.int16))
    out["features2"] = vk.VkPhysicalDeviceFeatures2(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=nxt, features=core)
    return out


def _chosen(devices: list[PhysicalDevice]) -> list[PhysicalDevice]:
    """The devices in preference order, narrowed by ``CUBECL_VULKAN_DEVICE``."""
    ordered = sorted(devices, key=lambda d: _PREFERENCE[d.kind])  # stable: driver order kept
    want = os.environ.get(ENV_DEVICE, "").strip()
    if not want:
        return ordered
    if want.isdigit():
        i = int(want)
        if i >= len(ordered):
            raise BackendUnavailable(f"{ENV_DEVICE}={want}, but there are only "
                                     f"{len(ordered)} Vulkan devices")
        return [ordered[i]]
    matching = [d for d in ordered if want.lower() in d.name.lower()]
    if not matching:
        names = ", ".join(d.name for d in ordered) or "none"
        raise BackendUnavailable(f"{ENV_DEVICE}={want!r} matches no Vulkan device ({names})")
    return matching


def physical_devices() -> list[PhysicalDevice]:
    """The usable physical devices (Vulkan 1.1 and a compute queue), the preferred first."""
    vk = vulkan_api()
    instance = _create_instance()
    try:
        handles = list(vk.vkEnumeratePhysicalDevices(instance))
    except (vk.VkError, vk.VkException) as e:
        raise BackendUnavailable(f"{vk_error('vkEnumeratePhysicalDevices', e)}") from e
    found = [d for d in (_describe(vk, h) for h in handles) if d is not None]
    if not found:
        raise BackendUnavailable(
            f"no Vulkan 1.1 device with a compute queue ({len(handles)} physical device(s) "
            "seen); install a driver (mesa-vulkan-drivers gives lavapipe)")
    return _chosen(found)


class VulkanDevice:
    """A logical device on one physical device, with its compute queue."""

    def __init__(self, physical: PhysicalDevice) -> None:
        vk = vulkan_api()
        self.vk = vk
        self.physical = physical
        priorities = [1.0]
        queue_info = vk.VkDeviceQueueCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
            queueFamilyIndex=physical.queue_family, queueCount=1, pQueuePriorities=priorities)
        chain = _feature_chain(vk, physical.api_version, physical.extensions, physical.features)
        f = physical.features
        # ..._float2 needs ..._float enabled too.
        extensions = ([*(["VK_EXT_shader_atomic_float"] if f.float32_atomic_add
                         or f.float32_atomic_min_max else []),
                       *(["VK_EXT_shader_atomic_float2"] if f.float32_atomic_min_max else [])])
        info = vk.VkDeviceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, pNext=chain["features2"],
            queueCreateInfoCount=1, pQueueCreateInfos=[queue_info],
            enabledExtensionCount=len(extensions), ppEnabledExtensionNames=extensions)
        self.handle = check("vkCreateDevice", vk.vkCreateDevice, physical.handle, info, None)
        self.queue = vk.vkGetDeviceQueue(self.handle, physical.queue_family, 0)
        self.memory = vk.vkGetPhysicalDeviceMemoryProperties(physical.handle)

    def memory_type(self, type_bits: int, flags: int) -> int | None:
        """The first memory type allowed by ``type_bits`` that has all of ``flags``."""
        for i in range(self.memory.memoryTypeCount):
            if type_bits & (1 << i) and (self.memory.memoryTypes[i].propertyFlags & flags) == flags:
                return i
        return None

    def wait_idle(self) -> None:
        """Wait until the device has finished all work."""
        check("vkDeviceWaitIdle", self.vk.vkDeviceWaitIdle, self.handle)

    def close(self) -> None:
        """Destroy the logical device (everything made from it must be gone)."""
        if self.handle is not None:
            self.vk.vkDestroyDevice(self.handle, None)
            self.handle = None
