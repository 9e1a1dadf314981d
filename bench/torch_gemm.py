"""PyTorch timings of `cargo bench -p blaze-cpu --bench gemm_shapes`: the
same products, layouts and sampling, printed in the same columns.

Run: python3 bench/torch_gemm.py [--dtype bf16 | --precision bf16]   (needs
`pip install torch`; runs on the CPU). With `--dtype bf16` the operands and
results are bf16 (oneDNN's AMX or AVX512-BF16 kernels where the CPU has
them); with `--precision bf16` (or f16) the operands are f32 and each product
runs under `torch.autocast("cpu", dtype)`, which casts them (its result is
16-bit; Blaze's under `autocast` is f32).
"""
import argparse
import time

import torch

# name, batch, m, k, n, layout (lhs, rhs: n = row-major, t = transposed)
SHAPES = [
    ("square 256", 1, 256, 256, 256, "nn"),
    ("square 512", 1, 512, 512, 512, "nn"),
    ("square 1024", 1, 1024, 1024, 1024, "nn"),
    ("square 2048", 1, 2048, 2048, 2048, "nn"),
    ("mlp x.W^T", 1, 128, 784, 256, "nt"),
    ("mlp g^T.x", 1, 256, 128, 784, "tn"),
    ("mlp g.W", 1, 128, 256, 784, "nn"),
    ("cnn fc x.W^T", 1, 64, 800, 10, "nt"),
    ("batch-1 x.W^T", 1, 1, 784, 256, "nt"),
    ("batch-1 g^T.x", 1, 256, 1, 784, "tn"),
    ("gpt qkv x.W^T", 1, 2048, 64, 192, "nt"),
    ("gpt qkv g^T.x", 1, 192, 2048, 64, "tn"),
    ("gpt qkv g.W", 1, 2048, 192, 64, "nn"),
    ("gpt fc1 x.W^T", 1, 2048, 64, 256, "nt"),
    ("gpt fc2 x.W^T", 1, 2048, 256, 64, "nt"),
    ("gpt q.k^T", 128, 64, 16, 64, "nt"),
    ("gpt p.v", 128, 64, 64, 16, "nn"),
    ("base qkv x.W^T", 1, 2048, 256, 768, "nt"),
    ("base fc1 x.W^T", 1, 2048, 256, 1024, "nt"),
    ("base fc2 x.W^T", 1, 2048, 1024, 256, "nt"),
    ("base fc1 g^T.x", 1, 1024, 2048, 256, "tn"),
    ("base fc2 g.W", 1, 2048, 256, 1024, "nn"),
    ("base q.k^T", 128, 128, 32, 128, "nt"),
    ("base p.v", 128, 128, 128, 32, "nn"),
]


def operand(batch, rows, cols, t):
    return torch.randn(batch, cols, rows).transpose(1, 2) if t else torch.randn(batch, rows, cols)


def gflops(flops, fn):
    """The median of 11 samples of about 20 ms, as the Rust bench takes."""
    t = time.perf_counter()
    fn()
    reps = int(min(max(0.02 / max(time.perf_counter() - t, 1e-7), 1), 20000))
    rates = []
    for _ in range(11):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        rates.append(flops * reps / (time.perf_counter() - t) / 1e9)
    return sorted(rates)[len(rates) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    parser.add_argument("--precision", choices=["f32", "bf16", "f16"], default="f32")
    args = parser.parse_args()
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    cast = {"f32": None, "bf16": torch.bfloat16, "f16": torch.float16}[args.precision]
    if cast is not None and dtype != torch.float32:
        parser.error("--dtype bf16 and --precision: pick one")
    torch.manual_seed(0)
    print(f"{'product':<16} {'batch':>5} {'m':>5} {'k':>5} {'n':>5} {'layout':>6}  {'GFLOP/s':>8}")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for name, batch, m, k, n, layout in SHAPES:
            a, b = operand(batch, m, k, layout[0] == "t"), operand(batch, k, n, layout[1] == "t")
            a, b = a.to(dtype), b.to(dtype)
            mm = torch.mm if batch == 1 else torch.bmm
            if batch == 1:
                a, b = a[0], b[0]
            if cast is None:
                rate = gflops(2.0 * batch * m * k * n, lambda: mm(a, b))
            else:
                def autocast_mm(a=a, b=b, mm=mm):
                    with torch.autocast("cpu", dtype=cast):
                        return mm(a, b)
                rate = gflops(2.0 * batch * m * k * n, autocast_mm)
            print(f"{name:<16} {batch:>5} {m:>5} {k:>5} {n:>5} {layout:>6}  {rate:8.1f}  {threads}t")


if __name__ == "__main__":
    main()
