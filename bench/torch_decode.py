"""Tokens a second of greedy generation at batch 1 with `transformers`' GPT-2
and its cache (`use_cache=True`), at the sizes of examples/decode_bench.rs:
width 256, 8 heads, MLP 1024, four blocks, 64 tokens, context 256; from one
token to the full context. PyTorch eager, CPU. Prints the median of five
runs after a warm-up, as decode_bench prints its own.

    python3 bench/torch_decode.py --threads 1
"""

import argparse
import statistics
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=1)
args = parser.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(0)
config = GPT2Config(
    vocab_size=64, n_positions=256, n_embd=256, n_layer=4, n_head=8, n_inner=1024,
    resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0, pad_token_id=0,
)
model = GPT2LMHeadModel(config).eval()
prompt = torch.tensor([[1]])
n = 256 - 1


def run():
    with torch.no_grad():
        out = model.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False, use_cache=True)
    assert out.shape[1] == 1 + n


run()
times = []
for _ in range(5):
    start = time.perf_counter()
    run()
    times.append(time.perf_counter() - start)
print(f"decode, {n} tokens to context 256, {args.threads} thread(s)")
print(f"with cache     {n / statistics.median(times):10.1f} tokens/s")
