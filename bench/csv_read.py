"""Blaze's read_csv against NumPy's loadtxt on one numeric table.

Run: python3 bench/csv_read.py [--rounds 5]   (needs numpy)

Writes a seeded 500k x 21 table of floats (about 107 MB, header
x0..x19,y) to /tmp once, builds bench/csv_read.rs in release, then
alternates the two readers, each in a fresh process so that its peak
memory is its own: `numpy.loadtxt(delimiter=",", skiprows=1)` (float64,
NumPy's default) and `read_csv(CsvOptions::real("y"))` (f32). Prints each
round and the medians: seconds, peak resident memory, and NumPy's time
over Blaze's (above 1: Blaze is faster).
"""
import argparse
import os
import statistics
import subprocess
import sys

ROWS, FEATURES = 500_000, 20
FILE = "/tmp/blaze_csv_read_500k.csv"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NUMPY = """
import resource, sys, time
import numpy as np
t = time.perf_counter()
x = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1)
s = time.perf_counter() - t
print(f"{s:.4f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024} {x.nbytes}")
"""


def write_table():
    if os.path.exists(FILE):
        return
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.normal(0, 10, size=(ROWS, FEATURES + 1))
    header = ",".join([f"x{i}" for i in range(FEATURES)] + ["y"])
    np.savetxt(FILE, x, fmt="%.6f", delimiter=",", header=header, comments="")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    write_table()
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "blaze-runtime", "--example", "csv_read"],
                   cwd=ROOT, check=True)
    blaze = os.path.join(ROOT, "target", "release", "examples", "csv_read")
    print(f"{FILE}: {os.path.getsize(FILE) / 1e6:.0f} MB, {ROWS} rows x {FEATURES + 1} columns")
    print(subprocess.run([blaze, "--parse", FILE], capture_output=True, text=True, check=True).stdout.strip())
    ratios, times, peaks = [], {"numpy": [], "blaze": []}, {"numpy": [], "blaze": []}
    for r in range(rounds):
        out = subprocess.run([sys.executable, "-c", NUMPY, FILE], capture_output=True, text=True, check=True)
        np_s, np_peak, np_bytes = out.stdout.split()
        out = subprocess.run([blaze, FILE, "y"], capture_output=True, text=True, check=True)
        bz_s, bz_peak, bz_start, bz_bytes = out.stdout.split()
        np_s, bz_s = float(np_s), float(bz_s)
        ratios.append(np_s / bz_s)
        times["numpy"].append(np_s)
        times["blaze"].append(bz_s)
        peaks["numpy"].append(int(np_peak))
        peaks["blaze"].append(int(bz_peak))
        print(f"round {r + 1}: numpy {np_s:.3f} s, blaze {bz_s:.3f} s, ratio {np_s / bz_s:.2f}; "
              f"peak numpy {int(np_peak) / 1e6:.0f} MB, blaze {int(bz_peak) / 1e6:.0f} MB "
              f"({int(bz_start) / 1e6:.0f} MB before the read)")
    mb = lambda v: f"{statistics.median(v) / 1e6:.0f} MB"
    print(f"median: numpy {statistics.median(times['numpy']):.3f} s, peak {mb(peaks['numpy'])} "
          f"for {int(np_bytes) / 1e6:.0f} MB of float64")
    print(f"median: blaze {statistics.median(times['blaze']):.3f} s, peak {mb(peaks['blaze'])} "
          f"for {int(bz_bytes) / 1e6:.0f} MB of f32")
    print(f"median ratio numpy / blaze: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
