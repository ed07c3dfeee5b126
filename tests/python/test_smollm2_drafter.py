"""The DFlash drafter trained for SmolLM2-135M-Instruct (models/smollm2-135m-instruct-dflash, written by
tools/train/drafter_for.py on a GPU machine; its card is the folder's README.md) with the file `saker pull`
fetches: on held-out code prompts the speculative greedy text and ids equal plain greedy decoding's, and its
drafts are accepted about as often as PyTorch measured when it was trained."""
import json

from conftest import ROOT

DRAFTER = ROOT / "models" / "smollm2-135m-instruct-dflash"


def card(name):
    return json.loads((DRAFTER / name).read_text(encoding="utf-8"))


def test_drafter_on_heldout_code_matches_plain_and_is_accepted(saker, smollm2_path):
    steps = tokens = 0
    for p in card("heldout_prompts.json")[:4]:
        args = ["run", "-m", smollm2_path, "--device", "cpu", "-p", p["text"], "-n", "128", "--temp", "0",
                "--print-ids", "--ignore-eos"]
        plain = saker(*args, timeout=300)
        spec = saker(*args, "--drafter", DRAFTER / "drafter", "--always-speculate", timeout=300)
        assert spec.stdout == plain.stdout, p["text"]
        line = next(l for l in spec.stderr.decode().splitlines() if l.startswith("speculative:"))
        hist = [int(x) for x in line.split("tokens per step: ")[1].split()]
        assert len(hist) == card("drafter/config.json")["block_size"], line
        steps += sum(hist)
        tokens += sum((i + 1) * n for i, n in enumerate(hist))
    # PyTorch's mean over the held-out code prompts at training time; a drafter whose drafts never match
    # (a random one) commits 1.0 token a step.
    expected = card("metrics.json")["acceptance"]["code"]["mean_accepted_length"]
    assert tokens / steps >= 0.8 * expected and tokens / steps > 1.15, (tokens, steps, expected)
