#!/usr/bin/env bash
# Where one verify step's GPU time goes, kernel by kernel, on a GPU machine: Nsight Compute times every kernel
# of a short `saker bench` verify run (gpu__time_duration only; caches and clocks left alone, the CUDA graph's
# nodes one at a time), and bench/ncu_step.py sums the last step's kernels by name.
#   bench/step_kernels.sh BIN_DIR OUT_DIR MODEL ROWS [ROWS...]
# e.g. bench/step_kernels.sh bins out 8b.gguf 1 16: the one-row and the 16-row verify step after 512 tokens
# (OUT_DIR/step-R.csv, then the tables). Kernels run one at a time under the profiler, so the sum is their own
# time without a graph's overlap (chained launches): compare widths with it, not with `saker bench`'s steps.
set -u
BIN=$(cd "$1" && pwd); OUT=$2; MODEL=$3
shift 3
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BIN/lib:${LD_LIBRARY_PATH:-}"
NCU=${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | tail -n 1)}
[ -x "$NCU" ] || { echo "step_kernels: no ncu on this machine"; exit 1; }
csvs=()
for rows in "$@"; do
  timeout 300 "$NCU" --csv --print-units base --metrics gpu__time_duration.sum --cache-control none \
    --clock-control none "$BIN/saker" bench -m "$MODEL" --device cuda -p 16 --decode-ctx 0 -n 2 --rows "$rows" -r 2 \
    > "$OUT/step-$rows.csv" 2> "$OUT/step-$rows.log"
  echo "== $rows rows: rc=$?"
  csvs+=("$OUT/step-$rows.csv")
done
python3 "$(dirname "$0")/ncu_step.py" "${csvs[@]}"
