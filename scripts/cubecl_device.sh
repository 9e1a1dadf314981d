#!/usr/bin/env bash
# The CubeCL backend's checks on a machine with a GPU, from binaries built
# elsewhere (such a machine may have no compiler, no registry and no
# Vulkan loader):
#
#   scripts/cubecl_device.sh build        # here: writes target/cubecl-device.tar.xz
#   scripts/cubecl_device.sh run [PEAK]   # there, in the repository root
#
# `build` compiles the CubeCL backend's test binaries and
# examples/cubecl_bench in release, strips them and packs them into one
# archive with the Debian packages of the Vulkan and EGL loaders (the
# seven binaries are about 380 MB as built, the archive about 25 MB: they
# share most of their code, which xz finds across files).
#
# `run` unpacks the archive into target/device/, unpacks the loaders into
# / where the machine has no libvulkan, points the loader at NVIDIA's
# driver where it is installed outside the loader's search path, prints
# the adapters, runs the conformance suite, the kernel! tests, the tuner
# test and the unit tests (every tuned candidate against the CPU) on the
# best adapter (BLAZE_REQUIRE_CUBECL=1: a missing adapter fails), then
# examples/cubecl_bench: the matmul at 1024/2048/4096 in GFLOP/s on the
# CubeCL and the wgpu backends (with PEAK, the device's f32 peak in
# GFLOP/s, also the share of it), the MLP, CNN and GPT training steps and
# the autotune cold start. On an NVIDIA GPU wgpu runs on the driver's
# Vulkan: CubeCL's own CUDA runtime is not built (see ARCHITECTURE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
archive=target/cubecl-device.tar.xz
out=target/device

case "${1:-}" in
build)
    stage=$(mktemp -d)
    mkdir -p "$stage/debs"
    # The test binaries' paths, from cargo's JSON messages.
    cargo test --release -p blaze-cubecl --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])' |
        while read -r name exe; do strip -o "$stage/test-$name" "$exe"; done
    ls "$stage"/test-* >/dev/null || { echo "no test binaries built" >&2; exit 1; }
    cargo build --release --example cubecl_bench --features "cubecl wgpu"
    strip -o "$stage/cubecl_bench" target/release/examples/cubecl_bench
    # The loaders, for x86-64 Debian/Ubuntu, with apt's lists kept apart
    # from this machine's own.
    apt=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oAPT::Sandbox::User=root "-oDir::State::Lists=$stage/lists")
    mkdir -p "$stage/lists/partial"
    if apt-get "${apt[@]}" update -qq && (cd "$stage/debs" &&
        apt-get "${apt[@]}" download libvulkan1 libegl1 libglvnd0 >/dev/null); then
        :
    else
        echo "warning: no loader packages: the GPU machine must have libvulkan" >&2
    fi
    rm -rf "$stage/lists"
    tar -cf - -C "$stage" . | xz -9 -T1 >"$archive"
    rm -rf "$stage"
    ls -l "$archive"
    ;;
run)
    rm -rf "$out"
    mkdir -p "$out"
    # Python's tarfile where the machine has no xz.
    if command -v xz >/dev/null; then
        tar -xJf "$archive" -C "$out"
    else
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$archive" "$out"
    fi
    if ! ldconfig -p | grep -q libvulkan.so.1; then
        for deb in "$out"/debs/*.deb; do dpkg -x "$deb" /; done
        ldconfig
    fi
    nvidia=/usr/local/nvidia/share
    if [ -f "$nvidia/vulkan/icd.d/nvidia_icd.json" ] && ! ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* >/dev/null 2>&1; then
        export VK_DRIVER_FILES="$nvidia/vulkan/icd.d/nvidia_icd.json" VK_ICD_FILENAMES="$nvidia/vulkan/icd.d/nvidia_icd.json"
        egl="$nvidia/glvnd/egl_vendor.d/10_nvidia.json"
        if [ -f "$egl" ]; then export __EGL_VENDOR_LIBRARY_FILENAMES="$egl"; fi
    fi
    export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
    export BLAZE_REQUIRE_CUBECL=1 BLAZE_CUBECL_TUNE_CACHE="$(mktemp -d)/autotune.tsv"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
    command -v vulkaninfo >/dev/null && vulkaninfo --summary 2>/dev/null | grep -E "deviceName|driverName" || true
    status=0
    for t in "$out"/test-*; do
        echo "== ${t##*/} =="
        "$t" --test-threads 1 || status=1
    done
    echo "== cubecl_bench =="
    BLAZE_PEAK_GFLOPS="${2:-}" "$out/cubecl_bench" || status=1
    exit "$status"
    ;;
*)
    echo "usage: $0 build | run [PEAK_GFLOPS]" >&2
    exit 2
    ;;
esac
