"""Trains a small LeNet on the 8x8 handwritten digits shipped in data/
(pixels scaled to [0, 1], as blaze::data::mnist reads them) and exports it
to lenet_digits.onnx, next to this script, for the lenet_digits example.

Run: python3 onnx/examples/make_lenet_digits.py   (needs torch, onnx, onnxscript)
"""
import gzip
import pathlib

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

HERE = pathlib.Path(__file__).parent
DATA = HERE.parent.parent / "data" / "digits-8x8"


def idx(name):
    raw = gzip.open(DATA / name).read()
    rank = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(raw[4 + 4 * rank :], dtype=np.uint8).reshape(dims)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, padding=1)
        self.conv2 = nn.Conv2d(6, 16, 3, padding=1)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)  # [6, 4, 4]
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)  # [16, 2, 2]
        x = torch.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


def main():
    torch.manual_seed(0)
    xs = {s: torch.from_numpy(idx(f"{s}-images-idx3-ubyte.gz").astype(np.float32) / 16.0)[:, None] for s in ("train", "t10k")}
    ys = {s: torch.from_numpy(idx(f"{s}-labels-idx1-ubyte.gz").astype(np.int64)) for s in ("train", "t10k")}
    model = LeNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(30):
        perm = torch.randperm(len(xs["train"]))
        for i in range(0, len(perm), 64):
            b = perm[i : i + 64]
            opt.zero_grad()
            F.cross_entropy(model(xs["train"][b]), ys["train"][b]).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        acc = (model(xs["t10k"]).argmax(1) == ys["t10k"]).float().mean().item()
    print(f"PyTorch test accuracy: {acc:.4f} on {len(ys['t10k'])} images")
    path = HERE / "lenet_digits.onnx"
    batch = torch.export.Dim("batch", min=1, max=4096)
    torch.onnx.export(model, (xs["t10k"][:4],), str(path), dynamo=True, opset_version=18,
                      input_names=["image"], output_names=["logits"], dynamic_shapes={"x": {0: batch}},
                      external_data=False)
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
