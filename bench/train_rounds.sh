#!/usr/bin/env bash
# Alternates Blaze's training steps with PyTorch's on the same models for
# N rounds (default 3): `train_bench` (MLP, CNN, batch-1 MLP) against
# bench/torch_train.py, and the gpt example against bench/torch_gpt.py,
# PyTorch eager and under `torch.compile` (Inductor needs the machine's
# C++ compiler). Prints, per row, the medians and the median of the
# per-round ratios (PyTorch's time over Blaze's: above 1, Blaze is faster).
#
# Run from the repository root: bash bench/train_rounds.sh [N]
set -euo pipefail
rounds=${1:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cargo build -q --release --example train_bench --example gpt
for r in $(seq "$rounds"); do
    target/release/examples/train_bench > "$out/blaze_train.$r"
    target/release/examples/gpt --steps 60 --sample 0 | grep 'median training step' > "$out/blaze_gpt.$r"
    python3 bench/torch_train.py > "$out/torch_train.$r"
    python3 bench/torch_train.py --compile > "$out/torch_train_compile.$r"
    python3 bench/torch_gpt.py > "$out/torch_gpt.$r"
    python3 bench/torch_gpt.py --compile > "$out/torch_gpt_compile.$r"
    echo "round $r of $rounds done" >&2
done
python3 - "$out" "$rounds" <<'PY'
import re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def train(path):
    """Seconds per sample (training rows) or per call (inference)."""
    rows = {}
    for line in open(path):
        m = re.match(r"^(mlp 784|cnn)[^:]*:\s+([\d.]+) samples/s", line)
        if m:
            rows[m.group(1)] = 1 / float(m.group(2))
        m = re.match(r"^mlp inference, batch 1:\s+([\d.]+) us", line)
        if m:
            rows["mlp batch 1"] = float(m.group(1))
    return rows
def gpt(path):
    m = re.search(r"([\d.]+) ms (per step)?", open(path).read().replace("median training step:", ""))
    return {"gpt step": float(m.group(1))}
names = {"mlp 784": "MLP step, batch 128", "cnn": "CNN step, batch 64", "mlp batch 1": "MLP forward, batch 1", "gpt step": "GPT step"}
for peer in ["", "_compile"]:
    label = "PyTorch eager" if not peer else "torch.compile"
    print(f"\nagainst {label}")
    print(f"{'row':<22} {'Blaze':>10} {'PyTorch':>10} {'ratio':>6}")
    for key in names:
        read = gpt if key == "gpt step" else train
        kind = "gpt" if key == "gpt step" else "train"
        b = [read(f"{out}/blaze_{kind}.{r}")[key] for r in range(1, rounds + 1)]
        t = [read(f"{out}/torch_{kind}{peer}.{r}")[key] for r in range(1, rounds + 1)]
        ratio = statistics.median(y / x for x, y in zip(b, t))
        print(f"{names[key]:<22} {statistics.median(b):10.3g} {statistics.median(t):10.3g} {ratio:6.2f}  ({min(y / x for x, y in zip(b, t)):.2f}-{max(y / x for x, y in zip(b, t)):.2f})")
PY
