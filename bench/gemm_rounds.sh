#!/usr/bin/env bash
# Alternates `cargo bench -p blaze-cpu --bench gemm_shapes` and
# bench/torch_gemm.py for N rounds (default 3) and prints, per product and
# thread count, both medians and the median of the per-round ratios
# (Blaze / PyTorch, above 1 is faster). Further arguments (`--dtype bf16`,
# `--precision bf16`)
# go to both.
#
# Run from the repository root: bash bench/gemm_rounds.sh [N] [--dtype bf16 | --precision bf16]
set -euo pipefail
rounds=${1:-3}
shift || true
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cargo bench -p blaze-cpu --bench gemm_shapes --no-run 2>/dev/null
for r in $(seq "$rounds"); do
    cargo bench -p blaze-cpu --bench gemm_shapes -- "$@" 2>/dev/null | grep -E ' [12]t$' > "$out/blaze.$r"
    python3 bench/torch_gemm.py "$@" | grep -E ' [12]t$' > "$out/torch.$r"
    echo "round $r of $rounds done" >&2
done
python3 - "$out" "$rounds" <<'PY'
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def read(path):
    rows = {}
    for line in open(path):
        f = line.split()
        rows[(" ".join(f[:-7]), f[-1], " ".join(f[-7:-2]))] = float(f[-2])
    return rows
blaze = [read(f"{out}/blaze.{r}") for r in range(1, rounds + 1)]
torch = [read(f"{out}/torch.{r}") for r in range(1, rounds + 1)]
print(f"{'product':<16} {'batch x m x k x n':>20} {'layout':>6} {'thr':>3} {'Blaze':>7} {'PyTorch':>7} {'ratio':>6}")
for key in blaze[0]:
    name, threads, dims = key
    b, t = [x[key] for x in blaze], [x[key] for x in torch]
    ratio = statistics.median(x / y for x, y in zip(b, t))
    d = dims.split()
    print(f"{name:<16} {'x'.join(d[:4]):>20} {d[4]:>6} {threads:>3} {statistics.median(b):7.1f} {statistics.median(t):7.1f} {ratio:6.2f}")
PY
