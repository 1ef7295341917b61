#!/usr/bin/env bash
# Installs the system packages the backends' tests run on, when missing and when
# running as root with apt: PoCL (OpenCL on the CPU), lavapipe (Vulkan on the CPU),
# spirv-tools (spirv-val checks the vulkan backend's modules in its tests), and
# redis-server (the shared tier's tests start their own). Elsewhere it says what is
# missing and leaves it to the person.
set -euo pipefail
packages=(pocl-opencl-icd ocl-icd-libopencl1 mesa-vulkan-drivers libvulkan1 spirv-tools
          redis-server)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "missing system packages: ${missing[*]} (install them as root); the opencl and vulkan" \
       "backends will report themselves unavailable, and the shared tier's tests fail" >&2
fi
