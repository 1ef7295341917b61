"""cubecl-server's ``vulkan`` backend: IR -> GLSL 450 compute -> SPIR-V (glslang),
run through the Vulkan API (the ``vulkan`` cffi binding).

Importing this package touches no driver; the Vulkan loader is opened when a
runtime is created (:mod:`cubecl_vulkan.device`).
"""

__version__ = "0.1.0"
