"""PyTorch side of `cargo run --release --example memory_bench`: the same
memory-bound ops on 4M-element tensors (f32), timed the same way (the
median of single calls after five warm-up calls: at least 60 calls and one
second; each result freed before the next call).

Run: python3 bench/torch_memory.py --threads 1   (needs `pip install torch`)
"""
import argparse
import statistics
import time

import torch

BIG = 1 << 22


def time_us(fn):
    for _ in range(5):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < 60 or time.perf_counter() - start < 1.0:
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e6)
        if len(times) >= 2000:
            break
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    threads = parser.parse_args().threads
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {threads} threads")
    x, y = torch.randn(1, BIG), torch.randn(1, BIG)
    m, bias = torch.randn(BIG // 1024, 1024), torch.randn(1, 1024)
    g = torch.randn(BIG // 1024, 1024)
    xl = m.clone().requires_grad_()
    wl, bl = torch.ones(1024, requires_grad=True), torch.zeros(1024, requires_grad=True)
    xg = m.clone().requires_grad_()

    # Gradients are set to None before each backward, as
    # `zero_grad(set_to_none=True)` does in a training step, so none is
    # accumulated into an old one.
    def layer_norm():
        xl.grad = wl.grad = bl.grad = None
        torch.nn.functional.layer_norm(xl, [1024], wl, bl, 1e-5).backward(g)

    def gelu():
        xg.grad = None
        torch.nn.functional.gelu(xg).backward(g)

    def tanh():
        xg.grad = None
        torch.tanh(xg).backward(g)

    for name, fn in [
        ("add", lambda: x + y),
        ("bias add + relu", lambda: (m + bias).relu()),
        ("sum over rows", lambda: m.sum(1, keepdim=True)),
        ("softmax over rows", lambda: m.softmax(1)),
        ("layernorm fwd + bwd", layer_norm),
        ("gelu fwd + bwd", gelu),
        ("tanh fwd + bwd", tanh),
    ]:
        us = time_us(fn)
        print(f"{name:<30} {us:10.1f} us  {BIG / us / 1e3:6.2f} Gitem/s")


if __name__ == "__main__":
    main()
