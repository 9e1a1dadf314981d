"""Reads the TensorBoard event files Blaze's `fit` writes with TensorBoard's
own reader, and prints what it finds: every scalar tag with its steps and
last value, and the text tags. Exits with an error if a file does not load
or holds no scalars.

    pip install tensorboard
    cargo run --release --example mnist -- --tensorboard out/runs
    python3 scripts/check_tensorboard.py out/runs
    tensorboard --logdir out/runs
"""

import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main(logdir: str) -> None:
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    tags = acc.Tags()
    if not tags["scalars"]:
        sys.exit(f"{logdir}: no scalars (tags: {tags})")
    for tag in sorted(tags["scalars"]):
        events = acc.Scalars(tag)
        steps = [e.step for e in events]
        print(f"{tag:24} {len(events):5} points, steps {steps[0]}..{steps[-1]}, last {events[-1].value:.4f}")
    for tag in sorted(tags["tensors"]):
        text = acc.Tensors(tag)[-1].tensor_proto.string_val[0].decode()
        print(f"{tag:24} text, {len(text.splitlines())} lines")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_tensorboard.py LOGDIR")
    main(sys.argv[1])
