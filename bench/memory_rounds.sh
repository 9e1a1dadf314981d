#!/usr/bin/env bash
# Alternates `memory_bench` (examples/memory_bench.rs) and
# bench/torch_memory.py for N rounds (default 3) on 1 and on 2 threads,
# and prints per row and thread count both medians (microseconds) and the
# median of the per-round ratios, PyTorch's time over Blaze's (above 1,
# Blaze is faster), with their range.
#
# Run from the repository root: bash bench/memory_rounds.sh [N]
set -euo pipefail
rounds=${1:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/alternate.sh
alternate memory_bench bench/torch_memory.py "$rounds" "$out"
python3 - "$out" "$rounds" <<'PY'
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def read(path):
    """Microseconds per row: each line is `name  <us> us  <rate> Gitem/s`."""
    rows = {}
    for line in open(path).read().splitlines()[1:]:
        f = line.split()
        rows[" ".join(f[:-4])] = float(f[-4])
    return rows
print(f"{'row':<26} {'thr':>3} {'Blaze':>9} {'PyTorch':>9} {'ratio':>6}  range")
for t in (1, 2):
    blaze = [read(f"{out}/blaze.{t}.{r}") for r in range(1, rounds + 1)]
    torch = [read(f"{out}/torch.{t}.{r}") for r in range(1, rounds + 1)]
    for row in blaze[0]:
        ratios = [p[row] / b[row] for b, p in zip(blaze, torch)]
        b, p = statistics.median(x[row] for x in blaze), statistics.median(x[row] for x in torch)
        print(f"{row:<26} {t:>3} {b:9.1f} {p:9.1f} {statistics.median(ratios):6.2f}  {min(ratios):.2f}-{max(ratios):.2f}")
PY
