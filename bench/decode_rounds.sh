#!/usr/bin/env bash
# Alternates `decode_bench` (examples/decode_bench.rs) and
# bench/torch_decode.py for N rounds (default 3) on 1 and on 2 threads,
# and prints per thread count the medians of tokens a second (Blaze with
# its cache and without, `transformers`' GPT-2 with its cache) and the
# medians of the per-round ratios: Blaze's cached rate over PyTorch's, and
# over its own without a cache.
#
# Run from the repository root: bash bench/decode_rounds.sh [N]
set -euo pipefail
rounds=${1:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/alternate.sh
alternate decode_bench bench/torch_decode.py "$rounds" "$out"
python3 - "$out" "$rounds" <<'PY'
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def read(path):
    """Tokens a second by row: `with cache  <rate> tokens/s`."""
    return {" ".join(l.split()[:-2]): float(l.split()[-2]) for l in open(path).read().splitlines()[1:]}
print(f"{'thr':>3} {'Blaze cached':>12} {'uncached':>9} {'PyTorch':>8} {'vs PyTorch':>11} {'vs uncached':>12}")
for t in (1, 2):
    blaze = [read(f"{out}/blaze.{t}.{r}") for r in range(1, rounds + 1)]
    torch = [read(f"{out}/torch.{t}.{r}") for r in range(1, rounds + 1)]
    med = lambda xs: statistics.median(xs)
    vs_torch = [b["with cache"] / p["with cache"] for b, p in zip(blaze, torch)]
    vs_plain = [b["with cache"] / b["without cache"] for b in blaze]
    print(f"{t:>3} {med(b['with cache'] for b in blaze):12.1f} {med(b['without cache'] for b in blaze):9.1f} "
          f"{med(p['with cache'] for p in torch):8.1f} {med(vs_torch):6.2f} ({min(vs_torch):.2f}-{max(vs_torch):.2f}) "
          f"{med(vs_plain):6.2f} ({min(vs_plain):.2f}-{max(vs_plain):.2f})")
PY
