"""PyTorch side of `examples/gpt.rs`: the same decoder-only transformer
(width 64, 4 heads of nn.MultiheadAttention with a causal mask, 4
pre-LayerNorm blocks, context 64, vocabulary 64), batch 32, AdamW with
weight decay 0.01 and gradient clipping at 1.0, on random ids; prints the
median milliseconds per training step. `--hand-attention` writes the
attention out (a qkv Linear, masked softmax) instead, as the example did
before it used MultiHeadAttention. `--compile` runs the model under
`torch.compile` (Inductor, which needs the machine's C++ compiler); its
first steps compile and are not timed. `--size base` times the example's
`base` size (width 256, 8 heads, context 128, batch 16). `--autocast bf16`
(or f16) runs the forward and loss under `torch.autocast("cpu", dtype)`,
as `--precision` does in the example.

Run: python3 bench/torch_gpt.py [--size base] [--autocast bf16] [--hand-attention] [--compile]
(needs `pip install torch`; runs on the CPU)
"""
import math
import statistics
import sys
import time

import torch
from torch import nn

ARGS = sys.argv[1:]


def flag(name, default):
    """The value after `name` in the arguments, else `default`."""
    return ARGS[ARGS.index(name) + 1] if name in ARGS else default


SIZE = flag("--size", "small")
V, L = 64, 4
T, D, H, B = {"small": (64, 64, 4, 32), "base": (128, 256, 8, 16)}[SIZE]
AUTOCAST = {"f32": None, "bf16": torch.bfloat16, "f16": torch.float16}[flag("--autocast", "f32")]


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).split(D, dim=-1)
        q, k, v = (z.reshape(b, t, H, D // H).transpose(1, 2) for z in (q, k, v))
        att = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(D // H))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, D))


class Causal(nn.Module):
    """nn.MultiheadAttention over a causal mask, as Blaze's
    MultiHeadAttention<D, H> with causal = true."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(D, H, batch_first=True)

    def forward(self, x):
        t = x.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        return self.mha(x, x, x, attn_mask=mask, need_weights=False)[0]


HAND = "--hand-attention" in ARGS
COMPILE = "--compile" in ARGS


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        attn = Attention() if HAND else Causal()
        self.ln1, self.attn, self.ln2 = nn.LayerNorm(D), attn, nn.LayerNorm(D)
        self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, D), nn.Embedding(T, D)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.ln, self.head = nn.LayerNorm(D), nn.Linear(D, V)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def main():
    torch.manual_seed(0)
    model = Gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    forward = torch.compile(model) if COMPILE else model
    x = torch.randint(0, V, (B, T))
    y = torch.randint(0, V, (B * T,))

    scaler = torch.amp.GradScaler("cpu", enabled=AUTOCAST == torch.float16)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=AUTOCAST or torch.bfloat16, enabled=AUTOCAST is not None):
            loss = nn.functional.cross_entropy(forward(x).reshape(-1, V), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()

    for _ in range(5):
        step()
    times = []
    for _ in range(30):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    kind = f"{SIZE}, " + ("hand-written attention" if HAND else "nn.MultiheadAttention")
    if AUTOCAST is not None:
        kind += f", autocast {flag('--autocast', '')}"
    if COMPILE:
        kind += ", torch.compile"
    print(f"pytorch {torch.__version__}, {torch.get_num_threads()} threads, {kind}: "
          f"{1e3 * statistics.median(times):.1f} ms per step")


if __name__ == "__main__":
    main()
