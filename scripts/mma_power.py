"""The mma rung's fp16 matmul held for a few seconds at each size, with nvidia-smi sampling the SM clock and
the board power every 100 ms: shows whether a size runs at the power limit (docs/design/matmul.md, "What
bounds each rung").

    python scripts/mma_power.py [--sizes 4096,8192,4096] [--seconds 2]
"""
import argparse
import statistics
import subprocess
import time

import torch

import kernelkit


def hold(n: int, seconds: float) -> str:
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    kernelkit.matmul(a, b, variant="mma")
    torch.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                            "-lms", "100"], stdout=subprocess.PIPE, text=True)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0, calls = time.time(), 0
    start.record()
    while time.time() - t0 < seconds:
        for _ in range(10):
            kernelkit.matmul(a, b, variant="mma")
        torch.cuda.synchronize()
        calls += 10
    end.record()
    torch.cuda.synchronize()
    smi.terminate()
    samples = [line.split(",") for line in smi.communicate()[0].splitlines() if line.count(",") == 1][3:]
    clock = [float(c) for c, _ in samples]
    power = [float(p) for _, p in samples]
    ms = start.elapsed_time(end) / calls
    return (f"{n}^3: {2 * n ** 3 / ms / 1e9:.1f} TFLOP/s, SM clock median {statistics.median(clock):.0f} MHz "
            f"(min {min(clock):.0f}), power median {statistics.median(power):.0f} W")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096,8192,4096")
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        print(hold(n, args.seconds), flush=True)
        time.sleep(1)


if __name__ == "__main__":
    main()
