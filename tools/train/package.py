#!/usr/bin/env python3
"""Turns a recipe output folder into models/saker-mini/ (at most 32 MB), with saker's own GGUF.

  python3 tools/train/package.py --run OUTDIR --saker build/bin/saker [--dest models/saker-mini]
  python3 tools/train/package.py --recheck --saker build/bin/saker [--dest models/saker-mini]

1. `saker convert OUTDIR/hf -o DEST/saker-mini-q8_0.gguf --type q8_0`
2. copies the tokenizer, the drafter, metrics.json, reference.json, heldout_prompts.json
3. checks saker's CPU greedy continuations of the reference prompts against transformers' (reference.json):
   `saker run --prompt-ids ... --temp 0 --ignore-eos --print-ids`, with the default kernels and with --ref-ops
   (float activations): the first N tokens must be identical with --ref-ops, and with the default kernels
   (which also round activations to 8-bit blocks) on every prompt whose reference margin is at least NEAR_TIE
4. records `saker run -p ... --temp 0` completions of a few code prompts for the card
5. measures saker's own speculative decoding with the drafter on the held-out acceptance prompts
   (`saker run --drafter`): its mean accepted length, and that its output equals plain greedy decoding's
6. rewrites metrics.json and the card
--recheck redoes steps 3-6 on the files already in DEST (no recipe folder needed), e.g. after saker changed.
Needs only the Python standard library (no torch).
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GGUF = "saker-mini-q8_0.gguf"
LIMIT_BYTES = 32 * 1024 * 1024


# Reference margins (logits) below this may flip under saker's 8-bit activation rounding: passing the weights
# through Q8_0 (the same kind of rounding) moves the reference prompts' smallest margins by up to ~0.05.
NEAR_TIE = 0.05
SAMPLE_PROMPTS = ["def fibonacci(n):", "import os\n\n\ndef list_python_files(root):",
                  "class Stack:\n    def __init__(self):"]


def saker_greedy(saker, gguf, ids, n, ref_ops=False):
    cmd = [saker, "run", "-m", gguf, "--device", "cpu", "--prompt-ids", " ".join(map(str, ids)), "-n", str(n),
           "--temp", "0", "--ignore-eos", "--print-ids"] + (["--ref-ops"] if ref_ops else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"saker run failed: {r.stderr.strip()[-2000:]}")
    lines = [l for l in r.stdout.splitlines() if l.startswith("ids:")]
    if not lines:
        raise SystemExit(f"saker run printed no 'ids:' line:\n{r.stdout[-2000:]}")
    return [int(x) for x in lines[-1][len("ids:"):].split()]


def shell_quote(text):
    if "\n" not in text:
        return json.dumps(text)
    return "$'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def saker_sample(saker, gguf, prompt, n, ref_ops=False):
    cmd = [saker, "run", "-m", gguf, "--device", "cpu", "-p", prompt, "-n", str(n), "--temp", "0"] + \
        (["--ref-ops"] if ref_ops else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"saker run failed: {r.stderr.strip()[-2000:]}")
    return r.stdout.rstrip("\n")


def saker_speculative(saker, gguf, drafter, prompts, n):
    """saker's greedy decoding with and without the drafter on each prompt: tokens per verify step (pooled as
    the recipe pools them) and the prompts where the two outputs differ (lossless: none)."""
    hist, mismatches = None, []
    for i, p in enumerate(prompts):
        base = [saker, "run", "-m", gguf, "--device", "cpu", "--prompt-ids", " ".join(map(str, p["ids"])), "-n",
                str(n), "--temp", "0", "--ignore-eos", "--print-ids"]
        plain = saker_greedy(saker, gguf, p["ids"], n)
        r = subprocess.run(base + ["--drafter", drafter], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"saker run --drafter failed: {r.stderr.strip()[-2000:]}")
        ids = [int(x) for l in r.stdout.splitlines() if l.startswith("ids:") for x in l[len("ids:"):].split()]
        line = next((l for l in r.stderr.splitlines() if l.startswith("speculative:")), None)
        if line is None:
            raise SystemExit(f"saker run --drafter printed no 'speculative:' line:\n{r.stderr[-2000:]}")
        per = [int(x) for x in line.split("tokens per step:")[1].split()]
        hist = per if hist is None else [a + b for a, b in zip(hist, per)]
        if ids != plain:
            mismatches.append(i)
    steps = sum(hist)
    mean = sum((k + 1) * c for k, c in enumerate(hist)) / steps
    return dict(mean_accepted_length=round(mean, 3), verify_steps=steps, prompts=len(prompts),
                new_tokens_per_prompt=n, histogram_tokens_per_step=hist, greedy_mismatch_prompts=len(mismatches),
                mismatch_prompt_indices=mismatches, kernels="default (Q8_0 weights, 8-bit activations)")


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown CPU"


def check_with_saker(a, metrics, gguf):
    """Steps 3-5 on the files in a.dest (metrics updated in place); returns the reference prompts where saker
    differs from transformers beyond near-ties, and the held-out prompts where speculation changed the output."""
    with open(os.path.join(a.dest, "reference.json")) as f:
        ref = json.load(f)
    n = min(a.check_tokens, ref["new_tokens"])
    rows = []
    for p in ref["prompts"]:
        got = saker_greedy(a.saker, gguf, p["prompt_ids"], n)
        first_diff = next((i for i, (x, y) in enumerate(zip(got, p["greedy_q8_0"][:n])) if x != y), None)
        rows.append(dict(match_q8_0=got == p["greedy_q8_0"][:n], match_unquantized=got == p["greedy"][:n],
                         first_divergence_q8_0=first_diff, min_margin_q8_0=p["greedy_q8_0_min_margin"]))
    # --ref-ops: float activations (the default Q8_0 kernels also round the activations to 8-bit blocks)
    for p, row in zip(ref["prompts"], rows):
        row["match_q8_0_ref_ops"] = saker_greedy(a.saker, gguf, p["prompt_ids"], n, ref_ops=True) == \
            p["greedy_q8_0"][:n]
    version = subprocess.run([a.saker, "--version"], capture_output=True, text=True).stdout.strip()
    check = dict(tokens=n, prompts=len(rows), identical_to_q8_0_reference=sum(r["match_q8_0"] for r in rows),
                 identical_to_unquantized_reference=sum(r["match_unquantized"] for r in rows),
                 identical_to_q8_0_reference_ref_ops=sum(r["match_q8_0_ref_ops"] for r in rows),
                 near_tie=NEAR_TIE, rows=rows, saker=version, cpu=cpu_name(),
                 command=f"python3 tools/train/package.py --recheck --dest {a.dest}")
    metrics["saker_check"] = check
    print(f"saker greedy vs transformers (first {n} tokens): {check['identical_to_q8_0_reference']}/{len(rows)} "
          f"identical to the Q8_0 reference, {check['identical_to_unquantized_reference']}/{len(rows)} to the "
          f"unquantized (bf16) one; with --ref-ops {check['identical_to_q8_0_reference_ref_ops']}/{len(rows)} "
          f"identical to the Q8_0 reference")
    for i, r in enumerate(rows):
        if not r["match_q8_0"]:
            print(f"  prompt {i}: default kernels diverge at token {r['first_divergence_q8_0']} "
                  f"(reference min margin {r['min_margin_q8_0']}); --ref-ops identical: {r['match_q8_0_ref_ops']}")
    # output: the default kernels (shown in the card); output_ref_ops: float activations, what tests compare
    # with (the default kernels' activation rounding may change between saker versions, flipping near-ties)
    metrics["saker_samples"] = [dict(prompt=q, output=saker_sample(a.saker, gguf, q, 64),
                                     output_ref_ops=saker_sample(a.saker, gguf, q, 64, ref_ops=True),
                                     command=f"saker run -m {a.dest}/{GGUF} -p {shell_quote(q)} -n 64 --temp 0")
                                for q in SAMPLE_PROMPTS]

    with open(os.path.join(a.dest, "heldout_prompts.json")) as f:
        heldout = json.load(f)
    acc = metrics["acceptance"]
    spec = saker_speculative(a.saker, gguf, os.path.join(a.dest, "drafter"), heldout[:acc["prompts"]],
                             acc["new_tokens_per_prompt"])
    spec.update(saker=version, cpu=cpu_name(), command=f"python3 tools/train/package.py --recheck --dest {a.dest}")
    metrics["saker_speculative"] = spec
    print(f"saker speculative decoding: {spec['mean_accepted_length']} tokens per verify step over "
          f"{spec['verify_steps']} steps on {spec['prompts']} held-out prompts (the recipe measured "
          f"{acc['mean_accepted_length']}); output differs from plain greedy on {spec['greedy_mismatch_prompts']}")
    bad = [i for i, r in enumerate(rows)
           if not r["match_q8_0_ref_ops"] or (not r["match_q8_0"] and r["min_margin_q8_0"] >= NEAR_TIE)]
    return bad, spec["mismatch_prompt_indices"]


def package_run(a):
    """Steps 1-2: the GGUF and the files of a recipe run into a.dest; returns the run's metrics."""
    with open(os.path.join(a.run, "metrics.json")) as f:
        metrics = json.load(f)
    if metrics.get("smoke") and not a.allow_smoke:
        raise SystemExit("refusing to package a --smoke run (pass --allow-smoke to test packaging)")
    bundle = metrics.get("args", {}).get("bundle")
    if bundle and bundle != '"$OUT"':  # the transfer folder of the machine that trained it: not provenance
        metrics["command"] = metrics["command"].replace(f"--bundle {bundle}", '--bundle "$OUT"')
        metrics["args"]["bundle"] = '"$OUT"'
    os.makedirs(a.dest, exist_ok=True)
    gguf = os.path.join(a.dest, GGUF)
    # saker names the model after its folder: convert through a folder called saker-mini
    with tempfile.TemporaryDirectory() as tmp:
        named = os.path.join(tmp, "saker-mini")
        os.mkdir(named)
        for f in os.listdir(os.path.join(a.run, "hf")):
            os.symlink(os.path.abspath(os.path.join(a.run, "hf", f)), os.path.join(named, f))
        r = subprocess.run([a.saker, "convert", named, "-o", gguf, "--type", "q8_0"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"saker convert failed: {r.stderr.strip()[-2000:]}")
    version = subprocess.run([a.saker, "--version"], capture_output=True, text=True).stdout.strip()
    metrics["gguf"] = dict(path=GGUF, ok=True, bytes=os.path.getsize(gguf), saker=version,
                           command=f"saker convert OUT/hf -o {GGUF} --type q8_0")
    print(f"wrote {gguf} ({os.path.getsize(gguf) / 1e6:.1f} MB)")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy2(os.path.join(a.run, "hf", name), os.path.join(a.dest, name))
    shutil.copytree(os.path.join(a.run, "drafter"), os.path.join(a.dest, "drafter"), dirs_exist_ok=True)
    # ties the committed drafter to the acceptance measured for it (tests check the file against this)
    with open(os.path.join(a.dest, "drafter", "model.safetensors"), "rb") as f:
        metrics["acceptance"]["drafter_sha256"] = hashlib.sha256(f.read()).hexdigest()
    for name in ("reference.json", "heldout_prompts.json"):
        shutil.copy2(os.path.join(a.run, name), os.path.join(a.dest, name))
    return metrics


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", help="the recipe's --out folder")
    ap.add_argument("--recheck", action="store_true", help="redo saker's checks on the files already in --dest")
    ap.add_argument("--saker", default="build/bin/saker", help="saker binary")
    ap.add_argument("--dest", default="models/saker-mini")
    ap.add_argument("--check-tokens", type=int, default=64, help="greedy tokens that must match transformers'")
    ap.add_argument("--allow-smoke", action="store_true", help="package a --smoke run (for testing this script)")
    a = ap.parse_args()
    if bool(a.run) == a.recheck:
        ap.error("give exactly one of --run OUTDIR and --recheck")
    if a.recheck:
        with open(os.path.join(a.dest, "metrics.json")) as f:
            metrics = json.load(f)
    else:
        metrics = package_run(a)
    gguf = os.path.join(a.dest, GGUF)
    bad, spec_mismatch = check_with_saker(a, metrics, gguf)

    with open(os.path.join(a.dest, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    sys.path.insert(0, HERE)
    import card
    card.write(os.path.join(a.dest, "README.md"), metrics)
    if a.run:
        with open(os.path.join(a.run, "metrics.json"), "w") as f:
            json.dump(metrics, f, indent=1)
        shutil.copy2(os.path.join(a.dest, "README.md"), os.path.join(a.run, "README.md"))
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(a.dest) for f in fs)
    print(f"{a.dest}: {total / 1e6:.1f} MB in all")
    if total > LIMIT_BYTES:
        raise SystemExit(f"{a.dest} is {total} bytes, over the {LIMIT_BYTES}-byte limit")
    if bad:
        print(f"ERROR: saker's greedy tokens differ from transformers' beyond near-ties on prompts {bad} "
              "(see metrics.json)")
    if spec_mismatch:
        print(f"ERROR: saker's speculative output differs from its plain greedy output on held-out prompts "
              f"{spec_mismatch}")
    if bad or spec_mismatch:
        sys.exit(2)
    if metrics["saker_check"]["identical_to_q8_0_reference"] != metrics["saker_check"]["prompts"]:
        print(f"note: the default kernels differ only on prompts whose reference margin is under {NEAR_TIE}")


if __name__ == "__main__":
    main()
