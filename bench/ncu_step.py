#!/usr/bin/env python3
"""Where one engine step's GPU time goes, kernel by kernel, from Nsight Compute.

  ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \\
      saker bench -m MODEL.gguf --device cuda -p 16 --decode-ctx 512 -n 1 --rows R -r 1 --warmup 0 \\
      --no-cuda-graphs > rows-R.csv
  bench/ncu_step.py rows-1.csv rows-16.csv

For each CSV, the kernels of the last step (from the last embedding launch on: with `--rows R` and nothing
after it, the R-row verify step after the context, in its argmax-ids form: saker bench times each width with
logits, then with ids) are summed by kernel name (template arguments kept, so
the one-row and the tensor-core matmul kernels stay apart) and printed as a table, largest first: total us,
share of the step, calls, us a call. ncu runs every kernel alone with cold caches (and without the CUDA
graph's overlap), so the step's sum exceeds its time in a graph; the shares are what to read.
"""
import collections
import csv
import re
import sys


def load(path):
    """(kernel name, duration in us) of every launch in the CSV, in launch order."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own log lines are not quoted
    launches = []
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = row["Metric Value"].replace(",", "")  # thousands separators
        launches.append((row["Kernel Name"], float(value) / 1000.0))  # ns -> us
    return launches


def short_name(name):
    name = re.sub(r"\(.*", "", name)  # the parameter list
    name = re.sub(r"^void ", "", name)
    for prefix in ("saker::cuda::", "saker::", "detail::", "(anonymous namespace)::", "<unnamed>::"):
        name = name.replace(prefix, "")
    return name[:100]


def last_step(launches):
    starts = [i for i, (name, _) in enumerate(launches) if "embedding" in name.lower()]
    return launches[starts[-1]:] if starts else []


def main(paths):
    if not paths:
        print(__doc__.strip())
        return 2
    for path in paths:
        step = last_step(load(path))
        if not step:
            print(f"{path}: no embedding launch found (is it ncu's --csv output of a saker run?)")
            continue
        total = sum(us for _, us in step)
        by_name = collections.OrderedDict()
        for name, us in step:
            key = short_name(name)
            calls, summed = by_name.get(key, (0, 0.0))
            by_name[key] = (calls + 1, summed + us)
        print(f"\n{path}: last step {len(step)} kernels, {total:.1f} us")
        print("| kernel | us | share | calls | us a call |\n|---|---:|---:|---:|---:|")
        for name, (calls, summed) in sorted(by_name.items(), key=lambda kv: -kv[1][1]):
            print(f"| {name} | {summed:.1f} | {100 * summed / total:.1f}% | {calls} | {summed / calls:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
