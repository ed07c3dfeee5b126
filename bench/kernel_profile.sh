#!/usr/bin/env bash
# Nsight Compute on one kernel launch per target, on a GPU machine: what bounds it (speed of light, occupancy,
# warp states, scheduler) and the SASS instructions that hold its warps (stall samples per instruction, with
# the CUDA source line: the build has -lineinfo). For the largest gaps of docs/performance.md, where timing
# variants alone cannot say which instruction chain a kernel waits on.
#   bench/kernel_profile.sh BIN_DIR OUT_DIR NAME:KERNEL_REGEX:PROGRAM ARGS... [more targets]
# e.g. 'q4k16:kq_mma:matmul_cuda_bench --one q4_K 12288 4096 16' (the third of five calls of that shape).
# PROGRAM runs from BIN_DIR. Per target, OUT_DIR gets NAME.ncu-rep, NAME-details.csv, NAME-sass.csv (every SASS
# instruction with its counters) and NAME-cuda-sass.csv (the same with the CUDA lines between); the script prints
# the main figures, the stall reasons and the TOP (default 24) instructions with the most stall samples.
set -u
BIN=$(cd "$1" && pwd); OUT=$2
shift 2
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$BIN/lib:${LD_LIBRARY_PATH:-}"
NCU=${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | tail -n 1)}
[ -x "$NCU" ] || { echo "kernel_profile: no ncu on this machine"; exit 1; }

for target in "$@"; do
  name=${target%%:*}
  rest=${target#*:}
  regex=${rest%%:*}
  read -r -a cmd <<< "${rest#*:}"
  timeout 300 "$NCU" --clock-control none -k "regex:$regex" --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
    -f -o "$OUT/$name" "$BIN/${cmd[0]}" "${cmd[@]:1}" > "$OUT/$name.log" 2>&1
  echo "== $name: ncu -k regex:$regex ${cmd[*]}: rc=$?"
  [ -s "$OUT/$name.ncu-rep" ] || { tail -n 5 "$OUT/$name.log"; continue; }
  "$NCU" -i "$OUT/$name.ncu-rep" --page details --csv > "$OUT/$name-details.csv" 2> /dev/null
  "$NCU" -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/$name-sass.csv" 2> /dev/null
  "$NCU" -i "$OUT/$name.ncu-rep" --page source --csv --print-source cuda,sass > "$OUT/$name-cuda-sass.csv" 2> /dev/null
  python3 - "$OUT/$name-details.csv" "$OUT/$name-sass.csv" "${TOP:-24}" << 'EOF'
import csv, sys

wanted = ("Duration", "DRAM Throughput", "Memory Throughput", "L1/TEX Hit Rate", "L2 Hit Rate", "Registers Per Thread",
          "Achieved Occupancy", "Theoretical Occupancy", "Block Limit Registers", "Block Limit Shared Mem",
          "Issued Warp Per Scheduler", "No Eligible", "Active Warps Per Scheduler", "Eligible Warps Per Scheduler",
          "Warp Cycles Per Issued Instruction", "Executed Ipc Active", "Dynamic Shared Memory Per Block")
try:
    rows = list(csv.DictReader(open(sys.argv[1])))
except (OSError, csv.Error) as e:
    rows = []
    print("details: %s" % e)
if rows:
    print("kernel: %s" % rows[0].get("Kernel Name", "?")[:150])
seen = set()
for r in rows:
    m = r.get("Metric Name", "")
    if m in wanted and m not in seen:
        seen.add(m)
        print("  %-36s %s %s" % (m, r.get("Metric Value", ""), r.get("Metric Unit", "")))
# Cycles a warp spends stalled per issued instruction, by reason, largest first.
stalls = {}
for r in rows:
    m = r.get("Metric Name", "")
    if "issue_stalled_" in m:
        try:
            stalls[m.split("issue_stalled_")[1].split("_per_issue")[0]] = float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            pass
if stalls:
    print("  stalls per issued instruction: " + ", ".join(
        "%s %.2f" % kv for kv in sorted(stalls.items(), key=lambda kv: -kv[1]) if kv[1] >= 0.05))

# The source page: one row per SASS instruction (with --print-source cuda,sass, rows of CUDA source lines too).
try:
    lines = open(sys.argv[2]).read().splitlines()
except OSError as e:
    sys.exit("sass: %s" % e)
start = next((i for i, l in enumerate(lines) if "Address" in l and "Source" in l), None)
if start is None:
    print("sass: no table header; first lines:")
    print("\n".join(lines[:5]))
    sys.exit(0)
table = list(csv.DictReader(lines[start:]))
cols = table[0].keys() if table else []
samples = next((c for c in cols if "Warp Stall Sampling (All" in c), None)
executed = next((c for c in cols if c.startswith("Instructions Executed")), None)
if samples is None:
    print("sass: columns %s" % ", ".join(cols))
    sys.exit(0)

def num(v):
    try:
        return float(str(v).replace(",", ""))
    except ValueError:
        return 0.0

sass = [r for r in table if r.get("# Address", r.get("Address", "")).strip()]
total = sum(num(r[samples]) for r in sass) or 1.0
print("  %d SASS instructions, %d stall samples; the top %s:" % (len(sass), total, sys.argv[3]))
src_col = next((c for c in cols if c.strip().lower() in ("source", "# source")), "Source")
for r in sorted(sass, key=lambda r: -num(r[samples]))[:int(sys.argv[3])]:
    addr = r.get("# Address", r.get("Address", ""))
    ex = " exec %s" % r[executed] if executed else ""
    print("  %5.1f%% %s %s%s" % (100 * num(r[samples]) / total, addr, r.get(src_col, "")[:90], ex))
EOF
done
