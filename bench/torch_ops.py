"""PyTorch timings of the work in `cargo bench -p blaze-cpu` (benches/ops.rs).

Run: python3 bench/torch_ops.py   (needs `pip install torch`; runs on the CPU)
Prints one row per benchmark: median time and throughput, like divan's
median column, so the two tables can be compared line by line.
"""
import statistics
import time

import torch


def median_time(fn, min_runs=20, min_seconds=1.0):
    for _ in range(3):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < min_seconds:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if len(times) >= 2000:
            break
    return statistics.median(times)


def row(name, seconds, items=None, unit="item/s"):
    rate = f"{items / seconds / 1e9:8.2f} G{unit}" if items else ""
    print(f"{name:<28} {seconds * 1e6:12.2f} us  {rate}")


def main():
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads available")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for n in (256, 512, 1024, 2048):
            a, b = torch.randn(n, n), torch.randn(n, n)
            row(f"sgemm {threads}t n={n}", median_time(lambda: torch.mm(a, b)), 2 * n**3, "FLOP/s")
        big = 1 << 22
        x, y = torch.randn(big), torch.randn(big)
        row(f"add_4m {threads}t", median_time(lambda: x + y), big)
        row(f"exp_4m {threads}t", median_time(lambda: x.exp()), big)
        m, bias = torch.randn(big // 1024, 1024), torch.randn(1, 1024)
        row(f"bias_add_relu_4m {threads}t", median_time(lambda: (m + bias).relu()), big)
        row(f"sum_rows_4m {threads}t", median_time(lambda: m.sum(1, keepdim=True)), big)
        row(f"sum_cols_4m {threads}t", median_time(lambda: m.sum(0, keepdim=True)), big)
        row(f"softmax_rows_4m {threads}t", median_time(lambda: m.softmax(1)), big)
        xl = torch.randn(big // 1024, 1024, requires_grad=True)
        wl = torch.randn(1024, requires_grad=True)
        bl = torch.randn(1024, requires_grad=True)
        gl = torch.randn(big // 1024, 1024)

        def layer_norm():
            torch.nn.functional.layer_norm(xl, [1024], wl, bl, 1e-5).backward(gl)

        row(f"layer_norm_rows_4m_fwd_bwd {threads}t", median_time(layer_norm), big)
        xg = torch.randn(big, requires_grad=True)
        gg = torch.randn(big)
        row(f"gelu_4m_fwd_bwd {threads}t", median_time(lambda: torch.nn.functional.gelu(xg).backward(gg)), big)
        sa = torch.randn(32, 4, 64, 64, requires_grad=True)
        ga = torch.randn(32, 4, 64, 64)
        causal = torch.triu(torch.ones(64, 64, dtype=torch.bool), diagonal=1)

        def attention_softmax():
            (sa * 0.25).masked_fill(causal, float("-inf")).softmax(-1).backward(ga)

        row(f"attention_softmax_fwd_bwd {threads}t", median_time(attention_softmax), 32 * 4 * 64 * 64)
        xc, w, cb = torch.randn(64, 16, 14, 14), torch.randn(32, 16, 3, 3), torch.randn(32)
        flops = 2 * 64 * 32 * 12 * 12 * 16 * 9
        row(f"conv3x3_b64 {threads}t", median_time(lambda: torch.nn.functional.conv2d(xc, w, cb)), flops, "FLOP/s")
    torch.set_num_threads(2)
    s1, s2 = torch.randn(16), torch.randn(16)
    row("small_add_16", median_time(lambda: s1 + s2, min_runs=10000))
    layers = [(torch.randn(o, i), torch.randn(1, o)) for i, o in [(784, 256), (256, 128), (128, 10)]]
    xin = torch.randn(1, 784)

    def mlp():
        h = xin
        for k, (w, b) in enumerate(layers):
            h = h @ w.t() + b
            if k < 2:
                h = h.relu()
        return h

    with torch.inference_mode():
        row("mlp_forward_batch1", median_time(mlp, min_runs=10000))


if __name__ == "__main__":
    main()
