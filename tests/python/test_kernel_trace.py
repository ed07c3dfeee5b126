"""bench/kernel_trace.py on records written here (the records themselves come from a GPU machine): the graph
launched most is taken, its launches split by correlation id, each kernel's share is its end minus the
previous end, gaps are split out, and the names lose namespaces, return type and parameters."""
import csv
import json
import subprocess
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import kernel_trace  # noqa: E402

SCRIPT = ROOT / "bench" / "kernel_trace.py"
NORM = "void saker::cuda::(anonymous namespace)::rms_norm_kernel<256>(float const*, float*, int)"
MATMUL = ("void saker::cuda::detail::(anonymous namespace)::kq_lane_kernel<saker::cuda::detail::(anonymous "
          "namespace)::LaneQ4K, 16, 8, 2>(unsigned char const*, long, long, int, signed char const*, "
          "saker::kq::KxBlock const*, float*, int)")


def write_trace(path, launches, other_graph_launches=1):
    """launches: one list a launch of (name, start, end); ns from an origin a launch apart."""
    fields = ["start", "end", "graph", "node", "corr", "stream", "grid", "block", "dyn_smem", "smem_config", "regs",
              "name"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(fields)
        corr = 100
        t0 = 0
        for kernels in launches:
            corr += 1
            for node, (name, start, end) in enumerate(kernels):
                w.writerow([t0 + start, t0 + end, 7, node, corr, 13, 264, 256, 81920, 233472, 76, name])
            t0 += 1_000_000
        for i in range(other_graph_launches):  # a prefill graph, launched fewer times
            w.writerow([t0 + i, t0 + i + 500, 3, 0, 900 + i, 13, 1, 32, 0, 0, 20, NORM])
        w.writerow([t0 + 10, t0 + 20, 0, 0, 999, 13, 1, 32, 0, 0, 20, NORM])  # outside any graph


def step(norm_end=2000, matmul_start=1500, matmul_end=9000):
    # The norm runs 0-2000 ns; the chained matmul launches while it runs and ends at matmul_end.
    return [(NORM, 0, norm_end), (MATMUL, matmul_start, matmul_end)]


def test_short_names():
    assert kernel_trace.short_name(NORM) == "rms_norm_kernel<256>"
    assert kernel_trace.short_name(MATMUL) == "kq_lane_kernel<LaneQ4K, 16, 8, 2>"
    assert kernel_trace.short_name("void a::b()") == "b"


def test_increments_and_gaps(tmp_path):
    path = tmp_path / "t.csv"
    # Launch 1 is the upload (skipped); the matmul of launch 3 starts 500 ns after the norm's end: a gap.
    write_trace(path, [step(matmul_end=50000), step(), step(matmul_start=2500, matmul_end=9500), step()])
    s = kernel_trace.summarise(kernel_trace.read_records(path), skip=1, layer=2)
    assert s["graph"] == 7 and s["launches"] == 3 and s["kernels_a_step"] == 2
    by = {v["name"]: v for v in s["by_name"]}
    assert by["rms_norm_kernel<256>"]["added_us"] == 2.0
    # Adds 7.0, 7.5, 7.0 us (end - previous end); median 7.0. Gaps 0, 0.5, 0: median 0.
    assert by["kq_lane_kernel<LaneQ4K, 16, 8, 2>"]["added_us"] == 7.0
    assert by["kq_lane_kernel<LaneQ4K, 16, 8, 2>"]["gap_us"] == 0.0
    assert by["kq_lane_kernel<LaneQ4K, 16, 8, 2>"]["smem_configs"] == [233472]
    assert s["step_us"] == 9.0
    assert s["between_us"] == 990.75  # launches 1 ms apart: 991 after a 9 us one, 990.5 after the 9.5 us one
    assert [v["name"] for v in s["first"]] == ["rms_norm_kernel<256>", "kq_lane_kernel<LaneQ4K, 16, 8, 2>"]
    assert s["first"][1]["grid"] == 264


def test_gap_counted(tmp_path):
    path = tmp_path / "t.csv"
    write_trace(path, [step(), step(matmul_start=2500, matmul_end=9500)] * 2)
    s = kernel_trace.summarise(kernel_trace.read_records(path), skip=0)
    gaps = sorted(v["gap_us"] for v in s["by_name"])
    assert gaps == [0.0, 0.25]  # median of 0, 0.5, 0, 0.5


def test_other_shapes_left_out(tmp_path):
    path = tmp_path / "t.csv"
    odd = step() + [(NORM, 9000, 9100)]
    write_trace(path, [step(), step(), odd, step()])
    s = kernel_trace.summarise(kernel_trace.read_records(path), skip=0)
    assert s["launches"] == 3 and s["kernels_a_step"] == 2


def test_command_line(tmp_path):
    path = tmp_path / "t.csv"
    write_trace(path, [step()] * 3)
    out = tmp_path / "s.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), str(path), "--layer", "2", "--json", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "graph 7: 2 launches of 2 kernels, step 9.0 us" in proc.stdout
    assert "| kq_lane_kernel<LaneQ4K, 16, 8, 2> | 1 | 7.0 | 0.0 |" in proc.stdout
    assert json.loads(out.read_text())["kernels_a_step"] == 2


def test_no_graph(tmp_path):
    path = tmp_path / "t.csv"
    write_trace(path, [], other_graph_launches=0)
    proc = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "no graph launch" in proc.stdout


def test_against(tmp_path):
    base, cand = tmp_path / "base.csv", tmp_path / "cand.csv"
    write_trace(base, [step()] * 3)
    write_trace(cand, [step(matmul_end=8000)] * 3)  # the matmul 1 us shorter
    proc = subprocess.run([sys.executable, str(SCRIPT), str(cand), "--against", str(base)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "| (step) | 2 | 9.0 | 2 | 8.0 | -1.0 |" in proc.stdout
    assert "| kq_lane_kernel<LaneQ4K, 16, 8, 2> | 1 | 7.0 | 1 | 6.0 | -1.0 |" in proc.stdout
    assert "| rms_norm_kernel<256> | 1 | 2.0 | 1 | 2.0 | +0.0 |" in proc.stdout


def test_layer_period():
    names = ["embed"] + ["norm", "mm", "attn", "mm"] * 5 + ["norm", "head"]
    assert kernel_trace.layer_period(names) == (4, 1, 5)
    assert kernel_trace.layer_period(["a", "b", "c"]) is None


def test_layer_slots(tmp_path):
    path = tmp_path / "t.csv"
    # An embedding, three layers of (norm 1 us, matmul 3 us), a head of 5 us; the second layer's matmul 5 us.
    def launch(slow):
        ks, t = [("embed", 0, 500)], 500
        for layer in range(3):
            ks.append((NORM, t, t + 1000))
            mm = 5000 if slow and layer == 1 else 3000
            ks.append((MATMUL, t + 500, t + 1000 + mm))
            t += 1000 + mm
        ks.append(("void head(int)", t, t + 5000))
        return ks
    write_trace(path, [launch(False), launch(True), launch(True), launch(True)])
    s = kernel_trace.summarise(kernel_trace.read_records(path), skip=1)
    lay = s["layer"]
    assert (lay["period"], lay["offset"], lay["layers"]) == (2, 1, 3)
    assert [v["name"] for v in lay["slots"]] == ["rms_norm_kernel<256>", "kq_lane_kernel<LaneQ4K, 16, 8, 2>"]
    assert [v["added_us"] for v in lay["slots"]] == [1.0, 3.0]  # medians over 3 launches x 3 layers
    assert lay["layer_us"] == 4.0
