#!/usr/bin/env python3
"""Turns a recipe output folder into models/saker-mini/ (at most 32 MB), with saker's own GGUF.

  python3 tools/train/package.py --run OUTDIR --saker build/bin/saker [--dest models/saker-mini]

1. `saker convert OUTDIR/hf -o DEST/saker-mini-q8_0.gguf --type q8_0`
2. checks saker's CPU greedy continuations of the reference prompts against transformers' (reference.json):
   `saker run --prompt-ids ... --temp 0 --ignore-eos --print-ids`, with the default kernels and with --ref-ops
   (float activations): the first N tokens must be identical with --ref-ops, and with the default kernels
   (which also round activations to 8-bit blocks) on every prompt whose reference margin is at least NEAR_TIE
3. records `saker run -p ... --temp 0` completions of a few code prompts for the card
4. copies the tokenizer, the drafter, metrics.json, reference.json, heldout_prompts.json; rewrites the card
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="the recipe's --out folder")
    ap.add_argument("--saker", default="build/bin/saker", help="saker binary")
    ap.add_argument("--dest", default="models/saker-mini")
    ap.add_argument("--check-tokens", type=int, default=64, help="greedy tokens that must match transformers'")
    ap.add_argument("--allow-smoke", action="store_true", help="package a --smoke run (for testing this script)")
    a = ap.parse_args()
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

    with open(os.path.join(a.run, "reference.json")) as f:
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
    check = dict(tokens=n, prompts=len(rows), identical_to_q8_0_reference=sum(r["match_q8_0"] for r in rows),
                 identical_to_unquantized_reference=sum(r["match_unquantized"] for r in rows),
                 identical_to_q8_0_reference_ref_ops=sum(r["match_q8_0_ref_ops"] for r in rows),
                 near_tie=NEAR_TIE, rows=rows,
                 command=f"python3 tools/train/package.py --run OUT --dest {a.dest}")
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

    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy2(os.path.join(a.run, "hf", name), os.path.join(a.dest, name))
    shutil.copytree(os.path.join(a.run, "drafter"), os.path.join(a.dest, "drafter"), dirs_exist_ok=True)
    # ties the committed drafter to the acceptance measured for it (tests check the file against this)
    with open(os.path.join(a.dest, "drafter", "model.safetensors"), "rb") as f:
        metrics["acceptance"]["drafter_sha256"] = hashlib.sha256(f.read()).hexdigest()
    for name in ("reference.json", "heldout_prompts.json"):
        shutil.copy2(os.path.join(a.run, name), os.path.join(a.dest, name))
    with open(os.path.join(a.dest, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    with open(os.path.join(a.run, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    sys.path.insert(0, HERE)
    import card
    card.write(os.path.join(a.dest, "README.md"), metrics)
    shutil.copy2(os.path.join(a.dest, "README.md"), os.path.join(a.run, "README.md"))
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(a.dest) for f in fs)
    print(f"{a.dest}: {total / 1e6:.1f} MB in all")
    if total > LIMIT_BYTES:
        raise SystemExit(f"{a.dest} is {total} bytes, over the {LIMIT_BYTES}-byte limit")
    bad = [i for i, r in enumerate(rows)
           if not r["match_q8_0_ref_ops"] or (not r["match_q8_0"] and r["min_margin_q8_0"] >= NEAR_TIE)]
    if bad:
        print(f"ERROR: saker's greedy tokens differ from transformers' beyond near-ties on prompts {bad} "
              "(see metrics.json)")
        sys.exit(2)
    if check["identical_to_q8_0_reference"] != len(rows):
        print(f"note: the default kernels differ only on prompts whose reference margin is under {NEAR_TIE}")


if __name__ == "__main__":
    main()
