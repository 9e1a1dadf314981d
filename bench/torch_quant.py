"""Batch-1 latency of PyTorch's eager f32 and `quantize_dynamic` (qint8,
the x86 engine) on the MLPs of examples/quant_bench.rs; prints lines in
its format. bench/quant_rounds.sh alternates the two.

    python3 bench/torch_quant.py --threads 1
"""
import argparse
import time

import torch
from torch import nn


def latency(rounds, calls, f):
    for _ in range(calls):
        f()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            f()
        times.append((time.perf_counter() - start) * 1e6 / calls)
    return sorted(times)[rounds // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"threads {args.threads}, engine {torch.backends.quantized.engine}")
    models = {
        "mnist": (nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10)),
                  torch.rand(1, 784), 31, 2000),
        "wide": (nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)),
                 torch.rand(1, 1024) - 0.5, 21, 100),
    }
    for name, (model, x, rounds, calls) in models.items():
        model.eval()
        q = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
        with torch.inference_mode():
            f = latency(rounds, calls, lambda: model(x))
            i = latency(rounds, calls, lambda: q(x))
        print(f"{name + ' f32':<11} {f:9.2f} us")
        print(f"{name + ' int8':<11} {i:9.2f} us")


if __name__ == "__main__":
    main()
