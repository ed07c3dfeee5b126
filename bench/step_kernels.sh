#!/usr/bin/env bash
# Where one engine step's time goes, kernel by kernel, on a GPU machine: Nsight Compute times every kernel of a
# short `saker bench` verify run (gpu__time_duration only, caches and clocks left alone, graph nodes one by one),
# then the last step is found as the run's repeating tail (its kernel names repeat with that period) and its
# kernels are printed grouped by name, largest total first, with the step's sum.
#   bench/step_kernels.sh BIN_DIR OUT_DIR MODEL ROWS [ROWS...]
# e.g. bench/step_kernels.sh bins out 8b.gguf 1 16: the one-row and the 16-row verify step after 512 tokens.
# Kernels run one at a time under the profiler, so the sum is the kernels' own time without their overlap in a
# graph (chained launches): compare widths with it, not against `saker bench`'s step time.
set -u
BIN=$(cd "$1" && pwd); OUT=$2; MODEL=$3
shift 3
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BIN/lib:${LD_LIBRARY_PATH:-}"
NCU=${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | tail -n 1)}
[ -x "$NCU" ] || { echo "step_kernels: no ncu on this machine"; exit 1; }
for rows in "$@"; do
  timeout 300 "$NCU" --csv --metrics gpu__time_duration.sum --cache-control none --clock-control none \
    "$BIN/saker" bench -m "$MODEL" --device cuda -p 16 --decode-ctx 0 -n 2 --rows "$rows" -r 2 --warmup 1 \
    > "$OUT/step-$rows.csv" 2> "$OUT/step-$rows.log"
  echo "== $rows rows: rc=$?"
  python3 - "$OUT/step-$rows.csv" << 'PY'
import csv, sys, collections
lines = open(sys.argv[1]).read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
if start is None:
    sys.exit("no ncu table; " + " | ".join(lines[-3:]))
launches = {}
for r in csv.DictReader(lines[start:]):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    t = float(r["Metric Value"].replace(",", ""))
    t *= {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(r.get("Metric Unit", "nsecond"), 1e-3)
    launches[int(r["ID"])] = (r["Kernel Name"], t)
seq = [launches[i] for i in sorted(launches)]
names = [n for n, _ in seq]
# The step: the shortest period p with the last p names equal to the p before them.
period = next((p for p in range(8, len(names) // 2 + 1) if names[-p:] == names[-2 * p:-p]), None)
if period is None:
    sys.exit("no repeating step in %d launches" % len(names))
step = seq[-period:]
total = sum(t for _, t in step)
groups = collections.OrderedDict()
for n, t in step:
    short = n[:n.rfind("(")] if n.endswith(")") else n  # the parameter list off
    for noise in ("void ", "saker::cuda::detail::", "saker::cuda::", "(anonymous namespace)::"):
        short = short.replace(noise, "")
    short = short[:140]
    c, s = groups.get(short, (0, 0.0))
    groups[short] = (c + 1, s + t)
print("step: %d kernels, %.1f us (kernels one at a time)" % (period, total))
for n, (c, s) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
    print("  %8.1f us %5.1f%% %4d x  %s" % (s, 100 * s / total, c, n))
PY
done
