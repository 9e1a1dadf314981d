#!/usr/bin/env bash
# Alternates `quant_bench` (examples/quant_bench.rs) and
# bench/torch_quant.py for N rounds (default 5) on 1 and on 2 threads,
# and prints per MLP and thread count the median latencies and the
# medians of the per-round ratios: Blaze's int8 over its f32, and over
# PyTorch's `quantize_dynamic`.
#
# Run from the repository root: bash bench/quant_rounds.sh [N]
set -euo pipefail
rounds=${1:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/alternate.sh
alternate quant_bench bench/torch_quant.py "$rounds" "$out"
python3 - "$out" "$rounds" <<'PY'
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def read(path):
    """Microseconds by row: `mnist int8  <us> us`."""
    return {" ".join(l.split()[:2]): float(l.split()[2]) for l in open(path).read().splitlines()[1:]}
med = statistics.median
print(f"{'MLP':<6} {'thr':>3} {'f32 us':>8} {'int8 us':>8} {'torch f32':>9} {'torch int8':>10} "
      f"{'int8/f32':>16} {'int8/torch int8':>16}")
for mlp in ("mnist", "wide"):
    for t in (1, 2):
        b = [read(f"{out}/blaze.{t}.{r}") for r in range(1, rounds + 1)]
        p = [read(f"{out}/torch.{t}.{r}") for r in range(1, rounds + 1)]
        own = [x[f"{mlp} int8"] / x[f"{mlp} f32"] for x in b]
        vs = [x[f"{mlp} int8"] / y[f"{mlp} int8"] for x, y in zip(b, p)]
        print(f"{mlp:<6} {t:>3} {med(x[mlp + ' f32'] for x in b):8.2f} {med(x[mlp + ' int8'] for x in b):8.2f} "
              f"{med(y[mlp + ' f32'] for y in p):9.2f} {med(y[mlp + ' int8'] for y in p):10.2f} "
              f"{med(own):5.2f} ({min(own):.2f}-{max(own):.2f}) {med(vs):5.2f} ({min(vs):.2f}-{max(vs):.2f})")
PY
