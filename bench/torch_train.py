"""PyTorch side of `cargo run --release --example train_bench`: the same
models, batch sizes, loss and optimizer, on random data, timed the same way
(median of 10 chunks after 5 warm-up steps). `--compile` runs the models
under `torch.compile` (Inductor, which needs the machine's C++ compiler);
the warm-up steps compile them. `--autocast bf16` (or f16) runs the forward
and loss under `torch.autocast("cpu", dtype)`, as the example's `--precision`.

Run: python3 bench/torch_train.py [--compile] [--autocast bf16]   (needs `pip install torch`; runs on the CPU)
"""
import statistics
import sys
import time

import torch
from torch import nn


ARGS = sys.argv[1:]
COMPILE = "--compile" in ARGS
AUTOCAST_NAME = ARGS[ARGS.index("--autocast") + 1] if "--autocast" in ARGS else "f32"
AUTOCAST = {"f32": None, "bf16": torch.bfloat16, "f16": torch.float16}[AUTOCAST_NAME]


def compiled(model):
    return torch.compile(model) if COMPILE else model


def median(runs, fn):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def train_speed(model, x, steps):
    n = x.shape[0]
    y = torch.arange(n) % 10
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    forward = compiled(model)

    scaler = torch.amp.GradScaler("cpu", enabled=AUTOCAST == torch.float16)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=AUTOCAST or torch.bfloat16, enabled=AUTOCAST is not None):
            loss = loss_fn(forward(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(5):
        step()
    per_chunk = max(steps // 10, 1)
    secs = median(10, lambda: [step() for _ in range(per_chunk)])
    return n * per_chunk / secs


def main():
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads{', torch.compile' if COMPILE else ''}, "
          f"products in {AUTOCAST_NAME}")
    mlp = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    print(f"mlp 784-256-128-10 train, batch 128: {train_speed(mlp, torch.randn(128, 784), 400):>10.0f} samples/s")
    cnn = nn.Sequential(
        nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(800, 10),
    )
    print(f"cnn train, batch 64:                 {train_speed(cnn, torch.randn(64, 1, 28, 28), 60):>10.0f} samples/s")
    x = torch.randn(1, 784)
    infer = compiled(mlp)
    with torch.inference_mode():
        for _ in range(5):
            infer(x)
        lat = median(21, lambda: [infer(x) for _ in range(200)]) / 200
    print(f"mlp inference, batch 1:              {lat * 1e6:>10.2f} us")


if __name__ == "__main__":
    main()
