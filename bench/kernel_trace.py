#!/usr/bin/env python3
"""What each kernel adds to a CUDA graph's run, from bench/ops/kernel_trace.cpp's records.

A decode step is one graph of chained kernels: each waits for the one before it, so ordered by their ends,
kernel i adds end[i] - end[i-1] to the step. That splits into a gap (the kernel started after its predecessor
ended: launch latency) and its own time after the later of the two. Start times of chained kernels come
early (their blocks wait on the GPU), so a kernel's duration alone says little.

    python3 bench/kernel_trace.py trace.csv [--graph ID] [--skip N] [--layer K] [--json OUT]
    python3 bench/kernel_trace.py cand.csv --against base.csv      # kernel by kernel name, both and the change

Takes the graph with the most launches (the steady decode step) unless --graph names one, drops its first
--skip launches (default 1: its upload), and prints, medians over the launches: the step and the time between
launches (the host's turn), then each kernel
name's count a step and what it adds (sum of end-to-end increments, and of those the gaps), then a layer's
kernels one by one (the repeating run of kernel names found in the step: each slot's median over the layers),
then the first --layer kernels of a step one by one (default 0: not printed).
"""
import argparse
import csv
import json
import re
import statistics
import sys
from collections import Counter, defaultdict

_QUALIFIER = re.compile(r"\(anonymous namespace\)::|[A-Za-z_][A-Za-z0-9_]*::")


def short_name(name):
    """A demangled kernel name without its return type, parameters and namespaces."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    depth, cut = 0, len(s)
    for i, c in enumerate(s):  # the parameter list: the first '(' outside template brackets
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0 and not s.startswith("(anonymous", i):
            cut = i
            break
    return _QUALIFIER.sub("", s[:cut]).strip()


def read_records(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        out.append({
            "start": int(r["start"]), "end": int(r["end"]), "graph": int(r["graph"]), "node": int(r["node"]),
            "corr": int(r["corr"]), "grid": int(r["grid"]), "block": int(r["block"]),
            "smem_config": int(r["smem_config"]), "dyn_smem": int(r["dyn_smem"]), "name": short_name(r["name"]),
        })
    return out


def launches_of(records, graph=None):
    """The launches (lists of kernels ordered by end) of one graph: `graph`, else the one launched most."""
    by_corr = defaultdict(list)
    for r in records:
        if r["graph"] != 0:
            by_corr[(r["graph"], r["corr"])].append(r)
    if not by_corr:
        return None, []
    counts = Counter(g for g, _ in by_corr)
    if graph is None:
        graph = max(counts, key=lambda g: (counts[g], g))
    launches = [sorted(ks, key=lambda k: (k["end"], k["start"])) for (g, _), ks in by_corr.items() if g == graph]
    launches.sort(key=lambda ks: ks[0]["start"])
    return graph, launches


def increments(launch):
    """(added, gap) a kernel of one launch, in end order: added = end - previous end (the first: its duration),
    gap = how long after the previous end it started (0 when it was already running)."""
    out = []
    prev_end = None
    for k in launch:
        if prev_end is None:
            out.append((k["end"] - k["start"], 0))
        else:
            out.append((k["end"] - prev_end, max(0, k["start"] - prev_end)))
        prev_end = k["end"]
    return out


def position_medians(incs, positions):
    """(added us, gap us): the medians, over the launches' increments `incs`, of the kernels at `positions`."""
    added = [inc[i][0] / 1e3 for inc in incs for i in positions]
    gaps = [inc[i][1] / 1e3 for inc in incs for i in positions]
    return statistics.median(added), statistics.median(gaps)


def layer_period(names, lo=2, hi=64):
    """(period, offset, layers) of the repeating run of kernel names (a model's layers), or None: the period whose
    longest run of names[i] == names[i + period] covers the most kernels, at least two layers of it."""
    best = None
    for p in range(lo, min(hi, len(names) // 2) + 1):
        i, run_start, longest = 0, 0, (0, 0)
        while i + p < len(names):
            if names[i] != names[i + p]:
                run_start = i + 1
            elif i + 1 - run_start > longest[1]:
                longest = (run_start, i + 1 - run_start)
            i += 1
        start, length = longest
        layers = (length + p) // p  # a run of length L covers L + p kernels
        if layers >= 2 and (best is None or layers * p > best[2] * best[0]):
            best = (p, start, layers)
    return best


def layer_slots(launches, incs):
    """A layer's kernels one by one, each with its median added time over the layers and launches (incs: each
    launch's increments)."""
    found = layer_period([k["name"] for k in launches[-1]])
    if found is None:
        return None
    p, offset, layers = found
    ref = launches[-1]
    slots = []
    for slot in range(p):
        added, gap = position_medians(incs, [offset + layer * p + slot for layer in range(layers)])
        slots.append({"slot": slot, "name": ref[offset + slot]["name"], "grid": ref[offset + slot]["grid"],
                      "added_us": added, "gap_us": gap})
    return {"period": p, "offset": offset, "layers": layers, "slots": slots,
            "layer_us": sum(v["added_us"] for v in slots)}


def summarise(records, graph=None, skip=1, layer=0):
    graph, launches = launches_of(records, graph)
    launches = launches[skip:] if len(launches) > skip else launches
    if not launches:
        return {"graph": graph, "launches": 0}
    n = Counter(len(ks) for ks in launches).most_common(1)[0][0]
    launches = [ks for ks in launches if len(ks) == n]  # steps of the usual shape only
    steps_us = [(ks[-1]["end"] - ks[0]["start"]) / 1e3 for ks in launches]
    # Between one launch's last end and the next one's first start: the host's turn (outputs copied back, the
    # next step prepared and launched), when the launches follow each other.
    between = [(b[0]["start"] - a[-1]["end"]) / 1e3 for a, b in zip(launches, launches[1:])]
    incs = [increments(ks) for ks in launches]
    per_name = defaultdict(lambda: {"count": 0, "added": [], "gap": []})
    configs = defaultdict(set)
    for ks, inc in zip(launches, incs):
        sums = defaultdict(lambda: [0, 0, 0])
        for k, (added, gap) in zip(ks, inc):
            s = sums[k["name"]]
            s[0] += 1
            s[1] += added
            s[2] += gap
            configs[k["name"]].add(k["smem_config"])
        for name, (count, added, gap) in sums.items():
            per_name[name]["count"] = count
            per_name[name]["added"].append(added / 1e3)
            per_name[name]["gap"].append(gap / 1e3)
    names = []
    for name, v in per_name.items():
        names.append({"name": name, "per_step": v["count"], "added_us": statistics.median(v["added"]),
                      "gap_us": statistics.median(v["gap"]), "smem_configs": sorted(configs[name])})
    names.sort(key=lambda v: -v["added_us"])
    first = []
    for i in range(min(layer, n)):
        added, gap = position_medians(incs, [i])
        k = launches[-1][i]
        first.append({"i": i, "name": k["name"], "grid": k["grid"], "block": k["block"], "added_us": added,
                      "gap_us": gap, "smem_config": k["smem_config"]})
    return {"graph": graph, "launches": len(launches), "kernels_a_step": n, "step_us": statistics.median(steps_us),
            "between_us": statistics.median(between) if between else None,
            "by_name": names, "first": first, "layer": layer_slots(launches, incs)}


def print_summary(s, out=sys.stdout):
    if not s.get("launches"):
        print("kernel_trace: no graph launch in the records", file=out)
        return
    print("graph %d: %d launches of %d kernels, step %.1f us (median)" %
          (s["graph"], s["launches"], s["kernels_a_step"], s["step_us"]), file=out)
    if s.get("between_us") is not None:
        print("between launches (the host's turn): %.1f us (median)" % s["between_us"], file=out)
    print("| kernel | a step | adds us | of it gaps us | share | smem configs |", file=out)
    print("|---|---:|---:|---:|---:|---|", file=out)
    for v in s["by_name"]:
        print("| %s | %d | %.1f | %.1f | %.1f%% | %s |" % (v["name"], v["per_step"], v["added_us"], v["gap_us"],
                                                          100.0 * v["added_us"] / s["step_us"],
                                                          " ".join(str(c) for c in v["smem_configs"])), file=out)
    lay = s.get("layer")
    if lay:
        print("a layer: %d kernels from kernel %d, %d layers, %.1f us a layer (medians of each kernel's adds)" %
              (lay["period"], lay["offset"], lay["layers"], lay["layer_us"]), file=out)
        print("| slot | kernel | grid | adds us | gap us |", file=out)
        print("|---:|---|---:|---:|---:|", file=out)
        for v in lay["slots"]:
            print("| %d | %s | %d | %.2f | %.2f |" % (v["slot"], v["name"], v["grid"], v["added_us"], v["gap_us"]),
                  file=out)
    if s["first"]:
        print("| # | kernel | grid x block | adds us | gap us | smem config |", file=out)
        print("|---:|---|---|---:|---:|---:|", file=out)
        for v in s["first"]:
            print("| %d | %s | %d x %d | %.2f | %.2f | %d |" % (v["i"], v["name"], v["grid"], v["block"],
                                                             v["added_us"], v["gap_us"], v["smem_config"]), file=out)


def print_against(s, base, out=sys.stdout):
    """Each kernel name's added time in `base` and in `s` (the candidate), and the step's."""
    if not s.get("launches") or not base.get("launches"):
        print("kernel_trace: no graph launch in one of the traces", file=out)
        return
    b = {v["name"]: v for v in base["by_name"]}
    c = {v["name"]: v for v in s["by_name"]}
    print("| kernel | base a step | base us | cand a step | cand us | change us |", file=out)
    print("|---|---:|---:|---:|---:|---:|", file=out)
    print("| (step) | %d | %.1f | %d | %.1f | %+.1f |" % (base["kernels_a_step"], base["step_us"], s["kernels_a_step"],
                                                    s["step_us"], s["step_us"] - base["step_us"]), file=out)
    names = sorted(set(b) | set(c), key=lambda n: -max(b.get(n, {}).get("added_us", 0), c.get(n, {}).get("added_us", 0)))
    for n in names:
        bv, cv = b.get(n), c.get(n)
        print("| %s | %s | %s | %s | %s | %+.1f |" % (
            n, bv["per_step"] if bv else "-", "%.1f" % bv["added_us"] if bv else "-", cv["per_step"] if cv else "-",
            "%.1f" % cv["added_us"] if cv else "-",
            (cv["added_us"] if cv else 0.0) - (bv["added_us"] if bv else 0.0)), file=out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--graph", type=int, default=None, help="graph id (default: the one launched most)")
    p.add_argument("--skip", type=int, default=1, help="first launches of the graph to leave out")
    p.add_argument("--layer", type=int, default=0, help="print the first K kernels of a step one by one")
    p.add_argument("--json", default=None, help="also write the summary here")
    p.add_argument("--against", default=None, help="a base trace: print both by kernel name and the change")
    a = p.parse_args(argv)
    s = summarise(read_records(a.trace), a.graph, a.skip, a.layer)
    if a.against:
        print_against(s, summarise(read_records(a.against), None, a.skip, 0))
    else:
        print_summary(s)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(s, f, indent=1)
    return 0 if s.get("launches") else 1


if __name__ == "__main__":
    sys.exit(main())
