"""saker-mini (models/saker-mini, trained by tools/train/recipe.py, packaged by tools/train/package.py) driven
through the command line: its tokenizer against Hugging Face `tokenizers`' ids, and `saker run` completing
code prompts. The C++ golden test (tests/golden/saker_mini_test.cpp) compares greedy tokens with transformers'."""
import concurrent.futures
import json

import pytest
import requests

from conftest import ROOT
from server_harness import Server, synth_tiny_model

MINI = ROOT / "models" / "saker-mini"
GGUF = MINI / "saker-mini-q8_0.gguf"


def load(name):
    if not GGUF.exists() or not (MINI / name).exists():
        pytest.skip("models/saker-mini is absent (package it with tools/train/package.py): test skipped")
    return json.loads((MINI / name).read_text(encoding="utf-8"))


def test_tokenizer_matches_hf_tokenizers_on_heldout_prompts(saker):
    ref = load("reference.json")
    for i, p in enumerate(ref["prompts"]):
        out = saker("tokenize", "-m", GGUF, "--ids", stdin=p["prompt"].encode()).stdout.decode()
        assert [int(x) for x in out.split()] == p["prompt_ids"], f"reference prompt {i}"


@pytest.mark.parametrize("index", [0, 1, 2])
def test_run_completes_code_prompt(saker, index):
    samples = load("metrics.json").get("saker_samples") or []
    if index >= len(samples):
        pytest.skip(f"metrics.json records {len(samples)} saker run samples")
    s = samples[index]
    prompt = s["prompt"]
    head = prompt.splitlines()[-1]
    indent = len(head) - len(head.lstrip())
    for ref_ops in (False, True):
        flags = ["--ref-ops"] if ref_ops else []
        out = saker("run", "-m", GGUF, "--device", "cpu", "-p", prompt, "-n", "64", "--temp", "0", *flags)
        out = out.stdout.decode()
        assert out.startswith(prompt)
        # Plausible Python: the prompt ends in a `def` or `class` header, so the next line is its indented body.
        body = next(l for l in out[len(prompt):].split("\n")[1:] if l.strip())
        assert len(body) - len(body.lstrip()) > indent, f"not an indented body after {head!r}:\n{out}"
    # With float activations, exactly what saker printed when the model was packaged. (The default kernels
    # round activations to 8-bit blocks; that rounding may change between versions and flip near-ties.)
    assert out.rstrip("\n") == s["output_ref_ops"], f"greedy completion changed since packaging:\n{out}"


def test_serve_with_reference_ops_completes_as_packaged(tmp_path):
    """`saker serve --ref-ops` runs the reference matmul and attention inside the batched step: the greedy
    completion equals what `saker run --ref-ops` printed when the model was packaged, for requests in flight
    together."""
    samples = load("metrics.json").get("saker_samples") or []
    if not samples:
        pytest.skip("metrics.json records no saker run samples")
    server = Server(GGUF, "--device", "cpu", "--ref-ops", "--parallel", "2", name="saker-mini", log_dir=tmp_path)
    try:
        prompts = [s["prompt"] for s in samples[:2]]
        body = lambda p: {"prompt": p, "max_tokens": 64, "temperature": 0}
        with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
            replies = list(pool.map(lambda p: requests.post(server.url + "/v1/completions", json=body(p), timeout=300),
                                    prompts))
        for s, r in zip(samples, replies):
            assert r.status_code == 200, r.text
            text = r.json()["choices"][0]["text"]
            assert s["prompt"] + text == s["output_ref_ops"].rstrip("\n"), f"serve --ref-ops:\n{s['prompt'] + text}"
    finally:
        server.stop()


def test_run_with_drafter_prints_the_same_text_and_its_acceptance(saker):
    """`saker run --drafter`: speculative greedy decoding prints exactly plain greedy's text and ids, and
    reports the verify steps and the mean accepted length."""
    ref = load("reference.json")
    prompt = ref["prompts"][0]["prompt"]
    args = ["run", "-m", GGUF, "--device", "cpu", "-p", prompt, "-n", "96", "--temp", "0", "--print-ids"]
    plain = saker(*args)
    spec = saker(*args, "--drafter", MINI / "drafter", "--always-speculate")
    assert spec.stdout == plain.stdout
    err = spec.stderr.decode()
    line = next(l for l in err.splitlines() if l.startswith("speculative:"))
    steps = int(line.split()[1])
    mean = float(line.split("mean accepted length ")[1].split()[0])
    assert 0 < steps < 96 and mean > 1.0, line
    hist = [int(x) for x in line.split("tokens per step: ")[1].split()]
    assert len(hist) == 16 and sum(hist) == steps, line


@pytest.mark.parametrize("flags", [
    ["--temp", "0.8", "--seed", "7"],
    ["--temp", "0.8", "--seed", "5", "+tree", "24"],
    ["--temp", "0", "+tree", "30"],
    ["--temp", "1", "--top-k", "0", "--top-p", "1", "--min-p", "0", "--seed", "3"],
    ["--temp", "0.7", "--repeat-penalty", "1.2", "--seed", "11"],
    ["--temp", "0", "--stop", "return"],
])
def test_run_with_drafter_samples_exactly_as_without(saker, flags):
    """Sampling flags, penalties, stop strings, chains and trees ("+tree N": --draft-tree N on the speculative
    run): with the same seed, the same text and ids as plain decoding."""
    load("metrics.json")
    tree = flags[flags.index("+tree") + 1:][:1] if "+tree" in flags else []
    flags = flags[:flags.index("+tree")] if tree else flags
    args = ["run", "-m", GGUF, "--device", "cpu", "-p", "def fibonacci(n):", "-n", "96", "--print-ids", *flags]
    plain = saker(*args)
    spec = saker(*args, "--drafter", MINI / "drafter", "--always-speculate", *(["--draft-tree", *tree] if tree else []))
    assert spec.stdout == plain.stdout
    finish = lambda p: p.stderr.decode().split("finish: ")[1].split()[0]
    assert finish(spec) == finish(plain)


@pytest.mark.parametrize("sampling,extra", [
    (["--temp", "0"], []),
    (["--temp", "0.8", "--seed", "7"], []),
    (["--temp", "0"], ["--draft-max", "3", "--ngram-min", "1", "--ngram-max", "2"]),
])
def test_run_with_ngram_speculation_prints_the_same_as_without(saker, sampling, extra):
    """`saker run --spec ngram`: prompt-lookup drafts verified in the engine step; same text and ids as plain
    decoding, and the drafts are used (a Python body repeats its names)."""
    load("metrics.json")
    args = ["run", "-m", GGUF, "--device", "cpu", "-p", "def fibonacci(n):", "-n", "96", "--print-ids",
            "--ignore-eos", *sampling]
    plain = saker(*args)
    spec = saker(*args, "--spec", "ngram", "--always-speculate", *extra)
    assert spec.stdout == plain.stdout
    line = next(l for l in spec.stderr.decode().splitlines() if l.startswith("speculative:"))
    assert "n-gram prompt lookup" in line, line
    steps = int(line.split()[1])
    assert steps > 0 and float(line.split("mean accepted length ")[1].split()[0]) >= 1.0, line


@pytest.mark.parametrize("proposer", [["--spec", "ngram"], ["--draft-model", str(GGUF), "--draft-max", "5"]])
def test_the_speculation_cost_policy_keeps_plain_decodings_output(saker, proposer):
    """By default a step drafts only where the measured step times say it pays (on this CPU often not); the
    text and ids stay plain decoding's whatever it decides."""
    load("metrics.json")
    args = ["run", "-m", GGUF, "--device", "cpu", "-p", "def fibonacci(n):", "-n", "64", "--print-ids",
            "--ignore-eos", "--temp", "0"]
    plain = saker(*args)
    spec = saker(*args, *proposer)
    assert spec.stdout == plain.stdout
    assert any(l.startswith("speculative:") for l in spec.stderr.decode().splitlines()), spec.stderr.decode()


@pytest.mark.parametrize("extra,message", [
    (["--drafter", str(MINI / "drafter"), "--draft-model", str(GGUF)], "not both"),
    (["--spec", "ngram", "--ngram-min", "4", "--ngram-max", "2"], "--ngram-max"),
    (["--spec", "lookahead"], "--spec"),
    (["--draft-max", "4"], "--draft-max needs"),
])
def test_ngram_speculation_refuses_what_it_cannot_honour(saker, extra, message):
    load("metrics.json")
    r = saker("run", "-m", GGUF, "-p", "def f(x):", "-n", "8", *extra, check=False)
    assert r.returncode != 0 and message in r.stderr.decode(), r.stderr.decode()


@pytest.mark.parametrize("sampling", [["--temp", "0"], ["--temp", "0.9", "--seed", "4"]])
def test_run_with_a_draft_model_prints_the_same_as_without(saker, sampling):
    """`saker run --draft-model FILE`: a model of the same tokenizer drafts its greedy chain (here saker-mini
    for itself, so greedy accepts everything and sampling rejects often); same text and ids as without."""
    load("metrics.json")
    args = ["run", "-m", GGUF, "--device", "cpu", "-p", "class Stack:", "-n", "80", "--print-ids", "--ignore-eos",
            *sampling]
    plain = saker(*args)
    spec = saker(*args, "--draft-model", GGUF, "--draft-max", "5", "--always-speculate")
    assert spec.stdout == plain.stdout
    line = next(l for l in spec.stderr.decode().splitlines() if l.startswith("speculative:"))
    mean = float(line.split("mean accepted length ")[1].split()[0])
    assert "draft model" in line and mean >= 1.0, line
    if sampling[1] == "0":
        assert mean > 5.0, line


@pytest.mark.parametrize("model", [["--drafter", str(MINI / "drafter")], ["--draft-model", str(GGUF)]])
def test_run_with_ngram_chained_to_a_model_prints_the_same_as_without(saker, model):
    """`--spec ngram` with `--drafter` or `--draft-model`: prompt lookup first, the model where it finds
    nothing; same text and ids as plain decoding."""
    load("metrics.json")
    args = ["run", "-m", GGUF, "--device", "cpu", "-p", "def fibonacci(n):", "-n", "96", "--print-ids",
            "--ignore-eos", "--temp", "0.7", "--seed", "9"]
    plain = saker(*args)
    spec = saker(*args, "--spec", "ngram", "--always-speculate", *model)
    assert spec.stdout == plain.stdout
    line = next(l for l in spec.stderr.decode().splitlines() if l.startswith("speculative:"))
    assert "n-gram prompt lookup" in line and ", then " in line, line


def test_draft_model_of_another_tokenizer_is_refused(saker, tmp_path):
    load("metrics.json")
    other = synth_tiny_model(tmp_path)
    r = saker("run", "-m", GGUF, "-p", "def f(x):", "-n", "8", "--draft-model", other, check=False)
    assert r.returncode != 0 and "--draft-model" in r.stderr.decode() and "tokenizer" in r.stderr.decode(), \
        r.stderr.decode()


def test_draft_tree_needs_a_drafter_and_a_budget_in_range(saker):
    load("metrics.json")
    r = saker("run", "-m", GGUF, "-p", "def f(x):", "-n", "8", "--draft-tree", "8", check=False)
    assert r.returncode != 0 and "--draft-tree needs --drafter" in r.stderr.decode(), r.stderr.decode()
    r = saker("run", "-m", GGUF, "-p", "def f(x):", "-n", "8", "--drafter", MINI / "drafter", "--draft-tree", "31",
              check=False)
    assert r.returncode != 0 and "31" in r.stderr.decode(), r.stderr.decode()


@pytest.mark.parametrize("extra,message", [
    (["--temp", "0", "--logits-out", "/dev/null"], "--logits-out"),
])
def test_run_with_drafter_refuses_what_it_cannot_honour(saker, extra, message):
    load("metrics.json")
    r = saker("run", "-m", GGUF, "-p", "def f(x):", "-n", "8", "--drafter", MINI / "drafter", *extra, check=False)
    assert r.returncode != 0 and message in r.stderr.decode(), r.stderr.decode()


def test_run_with_a_folder_that_is_no_drafter(saker, tmp_path):
    load("metrics.json")
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"]}))
    r = saker("run", "-m", GGUF, "-p", "def f(x):", "-n", "8", "--temp", "0", "--drafter", tmp_path, check=False)
    assert r.returncode != 0 and "not a DFlash drafter" in r.stderr.decode(), r.stderr.decode()
    r = saker("run", "-m", GGUF, "-p", "def f(x):", "-n", "8", "--temp", "0", "--drafter", tmp_path / "nope",
              check=False)
    assert r.returncode != 0 and "config.json and model.safetensors" in r.stderr.decode(), r.stderr.decode()
