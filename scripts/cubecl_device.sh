#!/usr/bin/env bash
# The CubeCL backend's checks on a machine with a GPU, from binaries built
# elsewhere (such a machine may have no compiler and no registry):
#
#   scripts/cubecl_device.sh build        # here: builds into target/device/
#   scripts/cubecl_device.sh run [PEAK]   # there: runs what `build` left
#
# `run` prints the adapters wgpu sees, runs the CubeCL backend's
# conformance suite, its kernel! tests, its tuner test and its unit tests
# (every convolution and pooling candidate against the CPU) on the best
# adapter (BLAZE_REQUIRE_CUBECL=1: a missing adapter fails), then
# examples/cubecl_bench: the matmul at 1024/2048/4096 in GFLOP/s on the
# CubeCL and the wgpu backends (with PEAK, the device's f32 peak in
# GFLOP/s, also the share of it), the MLP, CNN and GPT training steps and
# the autotune cold start. On an NVIDIA GPU wgpu runs on the driver's
# Vulkan: CubeCL's own CUDA runtime is not built (see ARCHITECTURE.md).
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/device

case "${1:-}" in
build)
    rm -rf "$out"
    mkdir -p "$out"
    # The test binaries' paths, from cargo's JSON messages.
    cargo test --release -p blaze-cubecl --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])' |
        while read -r name exe; do cp "$exe" "$out/test-$name"; done
    cargo build --release --example cubecl_bench --features "cubecl wgpu"
    cp target/release/examples/cubecl_bench "$out/"
    ls -l "$out"
    ;;
run)
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
