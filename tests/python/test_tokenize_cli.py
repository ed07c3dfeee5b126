"""`saker tokenize` against outside oracles.

1. llama.cpp's golden vectors (../shared/data/vocab), through the command line.
2. Vocabularies saker has never seen: byte-level BPE tokenizers trained here with Hugging Face `tokenizers`
   (gpt-2 style and qwen2 style pre-tokenization), written to GGUF with the `gguf` package; saker must
   produce exactly the ids that `tokenizers` produces.
"""
import json
import pathlib
import random
import sys

import pytest

from conftest import shared_data

SEPARATOR = "\n__ggml_vocab_test__\n"


def golden_cases(vocab_dir: pathlib.Path, name: str):
    inputs = (vocab_dir / f"ggml-vocab-{name}.gguf.inp").read_text(encoding="utf-8").split(SEPARATOR)
    outputs = (vocab_dir / f"ggml-vocab-{name}.gguf.out").read_text(encoding="utf-8").split("\n")
    if inputs and inputs[-1] == "":
        inputs = inputs[:-1]
    return list(zip(inputs, outputs))


@pytest.mark.parametrize("name", ["gpt-2", "deepseek-llm", "falcon", "starcoder", "llama-spm"])
def test_golden_vocab_through_cli(saker, name):
    vocab_dir = shared_data("vocab")
    model = vocab_dir / f"ggml-vocab-{name}.gguf"
    cases = golden_cases(vocab_dir, name)
    assert len(cases) > 10
    failures = []
    for text, expected in cases:
        got = saker("tokenize", "-m", model, "--ids", stdin=text).stdout.decode().strip()
        if got != expected.strip():
            failures.append(f"{text!r}: expected [{expected}] got [{got}]")
    assert not failures, f"{len(failures)}/{len(cases)} mismatches:\n" + "\n".join(failures[:10])


# --- vocabularies saker has never seen -------------------------------------------------------------------

tokenizers = pytest.importorskip("tokenizers")
gguf = pytest.importorskip("gguf")

QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")

TEST_STRINGS = [
    "Hello world",
    " Hello world",
    "Hello World!  How are you?\n\nFine, thanks.",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "    indented\ttabs\t\tand  double  spaces   ",
    "numbers 1234567890 and 3.14159, 1e-10",
    "I'm sure they'll say it's 'fine' — we've READ it, DON'T worry",
    "Ünïcödé: naïve café, 日本語のテキスト, 한국어, emoji 🤖🚀 and math ∑∫√",
    "\n\n\n",
    " ",
    "a" * 300,
    "mixed\r\nline\rendings\n",
]


def corpus_text() -> list[str]:
    """Python source of the standard library: real, varied text that is present everywhere."""
    lib = pathlib.Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    files = sorted(lib.glob("*.py"))[:120]
    texts = [f.read_text(encoding="utf-8", errors="ignore") for f in files]
    texts += TEST_STRINGS * 3 + ["日本語のテキスト 한국어 🤖🚀 ∑∫√ naïve café Ünïcödé"] * 20
    return texts


def train_byte_level_bpe(pre_tokenizer, vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>", "<|im_start|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus_text(), trainer=trainer)
    return tok


def write_vocab_gguf(tok, path: pathlib.Path, pre: str):
    spec = json.loads(tok.to_str())
    model = spec["model"]
    vocab = model["vocab"]
    tokens = [None] * len(vocab)
    for piece, idx in vocab.items():
        tokens[idx] = piece
    added = spec["added_tokens"]
    types = [1] * len(tokens)
    for a in added:
        types[a["id"]] = 3  # control
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(0)
    w.add_eos_token_id(0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def random_strings(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n\t.,;:'\"!?()[]{}<>-_=+*/\\#@$%^&|~`") + \
        list("éüßñçøå日本語한국🤖∑√") + ["'s", "'ll", "  ", "\r\n", "    "]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))) for _ in range(n)]


@pytest.mark.parametrize("style", ["gpt-2", "qwen2"])
def test_unseen_byte_level_vocab_matches_hf_tokenizers(saker, tmp_path, style):
    from tokenizers import Regex, pre_tokenizers

    if style == "gpt-2":
        pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        pre = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    tok = train_byte_level_bpe(pre, vocab_size=3000)
    path = tmp_path / f"unseen-{style}.gguf"
    write_vocab_gguf(tok, path, style)

    failures = []
    for text in TEST_STRINGS + random_strings(seed=11, n=40):
        expected = tok.encode(text, add_special_tokens=False).ids
        got = saker("tokenize", "-m", path, "--ids", stdin=text).stdout.decode().split()
        if list(map(int, got)) != expected:
            failures.append(f"{text!r}:\n  hf    {expected}\n  saker {got}")
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:8])


def test_special_tokens_in_text_are_recognised(saker, tmp_path):
    from tokenizers import pre_tokenizers

    tok = train_byte_level_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), vocab_size=1000)
    path = tmp_path / "special.gguf"
    write_vocab_gguf(tok, path, "gpt-2")
    text = "<|im_start|>user hi<|endoftext|>"
    expected = tok.encode(text, add_special_tokens=False).ids
    got = list(map(int, saker("tokenize", "-m", path, "--ids", stdin=text).stdout.decode().split()))
    assert got == expected
    assert got[0] == tok.token_to_id("<|im_start|>") and got[-1] == tok.token_to_id("<|endoftext|>")
