#!/usr/bin/env bash
# Mixed precision against PyTorch's autocast, alternating for N rounds
# (default 3): `train_bench` (MLP, CNN) and the gpt example at both sizes
# (`small`, `base`), each in f32 and with `--precision bf16`, against
# bench/torch_train.py and bench/torch_gpt.py in f32 and under
# `--autocast bf16`. Prints, per model, the medians of each run and the
# medians of the per-round ratios: Blaze's bf16 step against its own f32
# one, and against PyTorch's autocast step (above 1, Blaze's bf16 is faster).
#
# Run from the repository root: bash bench/precision_rounds.sh [N]
set -euo pipefail
rounds=${1:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cargo build -q --release --example train_bench --example gpt
gpt_steps() { # size
    if [ "$1" = base ]; then echo 30; else echo 60; fi
}
for r in $(seq "$rounds"); do
    for p in f32 bf16; do
        target/release/examples/train_bench --precision "$p" > "$out/blaze_train_$p.$r"
        python3 bench/torch_train.py --autocast "$p" > "$out/torch_train_$p.$r"
        for size in small base; do
            target/release/examples/gpt --size "$size" --precision "$p" --steps "$(gpt_steps "$size")" --sample 0 \
                | grep 'median training step' > "$out/blaze_gpt_${size}_$p.$r"
            python3 bench/torch_gpt.py --size "$size" --autocast "$p" > "$out/torch_gpt_${size}_$p.$r"
        done
    done
    echo "round $r of $rounds done" >&2
done
python3 - "$out" "$rounds" <<'PY'
import re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def seconds(path, row):
    """Seconds per sample of a train_bench row, or per gpt step."""
    text = open(path).read()
    if row.startswith("gpt"):
        return float(re.search(r"([\d.]+) ms", text.replace("median training step:", "")).group(1)) / 1e3
    return 1 / float(re.search(rf"^{row}[^:]*:\s+([\d.]+) samples/s", text, re.M).group(1))
rows = [("mlp 784", "train", "MLP step, batch 128"), ("cnn", "train", "CNN step, batch 64"),
        ("gpt", "gpt_small", "GPT small step"), ("gpt", "gpt_base", "GPT base step")]
print(f"{'row':<20} {'Blaze f32':>10} {'Blaze bf16':>10} {'torch f32':>10} {'autocast':>10} {'bf16/f32':>9} {'vs autocast':>11}")
for row, kind, name in rows:
    t = {(who, p): [seconds(f"{out}/{who}_{kind}_{p}.{r}", row) for r in range(1, rounds + 1)]
         for who in ("blaze", "torch") for p in ("f32", "bf16")}
    med = {k: statistics.median(v) for k, v in t.items()}
    own = statistics.median(f / b for f, b in zip(t["blaze", "f32"], t["blaze", "bf16"]))
    peer = statistics.median(a / b for a, b in zip(t["torch", "bf16"], t["blaze", "bf16"]))
    unit = 1e3 if row == "gpt" else 1e6
    print(f"{name:<20} {med['blaze', 'f32'] * unit:10.3g} {med['blaze', 'bf16'] * unit:10.3g} "
          f"{med['torch', 'f32'] * unit:10.3g} {med['torch', 'bf16'] * unit:10.3g} {own:9.2f} {peer:11.2f}")
print("(times: ms per GPT step, us per sample for MLP and CNN)")
PY
