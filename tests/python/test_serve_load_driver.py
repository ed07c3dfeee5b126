"""bench/serve_load.py against `saker serve` on the tiny model: every level completes without errors, the JSON
carries sane figures, and bad flags are refused. (Speed itself is measured on the GPU machine.)"""
import json
import subprocess
import sys

import pytest

from conftest import ROOT
from server_harness import Server, tiny_model_path

DRIVER = ROOT / "bench" / "serve_load.py"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tiny_model_path(tmp_path_factory), "--ctx", "256", "--parallel", "2")
    yield srv
    srv.stop()


def drive(*args, timeout=300):
    return subprocess.run([sys.executable, str(DRIVER), *map(str, args)], capture_output=True, timeout=timeout)


@pytest.mark.parametrize("endpoint,source", [("completions", "random"), ("chat", "text")])
def test_driver_levels(server, tmp_path, endpoint, source):
    out = tmp_path / "load.json"
    proc = drive("--url", server.url, "--endpoint", endpoint, "--prompt-source", source, "--concurrency", "1,2",
                 "--requests-per-client", "2", "--prompt-tokens", "16", "--gen-tokens", "8", "--json", out)
    assert proc.returncode == 0, proc.stderr.decode() + "\n" + server.output()[-3000:]
    assert "| N | requests | errors |" in proc.stdout.decode()
    j = json.loads(out.read_text())
    assert j["endpoint"] == endpoint and j["model"] == "tiny"
    levels = {r["concurrency"]: r for r in j["levels"]}
    assert set(levels) == {1, 2}
    for n, r in levels.items():
        assert r["errors"] == 0, r["error_samples"]
        assert r["requests"] == 2 * n
        assert r["tokens_per_s"] > 0 and r["wall_s"] > 0
        assert 0 < r["completion_tokens"] <= 2 * n * 8  # the server may stop a request at end-of-generation
        assert 0 < r["ttft_ms_p50"] <= r["ttft_ms_p99"] <= r["latency_ms_p99"]
        if endpoint == "completions":
            assert r["prompt_tokens_mean"] == 16  # token-id prompts arrive as sent
        else:
            assert r["prompt_tokens_mean"] >= 16  # the text plus the chat template's markers


def test_driver_rejects_bad_flags(server):
    bad = drive("--url", server.url, "--concurrency", "1,0")
    assert bad.returncode != 0 and "--concurrency" in bad.stderr.decode()
    bad = drive("--url", server.url, "--gen-tokens", "0")
    assert bad.returncode != 0 and "--gen-tokens" in bad.stderr.decode()


def test_driver_counts_errors(server, tmp_path):
    # A prompt longer than the server's context is refused per request: counted, reported, exit status 1.
    out = tmp_path / "errors.json"
    proc = drive("--url", server.url, "--concurrency", "2", "--prompt-tokens", "400", "--gen-tokens", "4",
                 "--warmup", "0", "--json", out)
    assert proc.returncode == 1, proc.stderr.decode()
    (level,) = json.loads(out.read_text())["levels"]
    assert level["errors"] == 2 and "HTTP 400" in level["error_samples"][0]


def test_driver_real_prompts_and_speculation_counts(tmp_path):
    """--prompts FILE sends a file's prompts (ids as ids, text as text) in order; against saker-mini serving with
    its DFlash drafter, the level reports the drafts the responses counted."""
    mini = ROOT / "models" / "saker-mini"
    held = json.loads((mini / "heldout_prompts.json").read_text())
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps([{"ids": held[0]["ids"]}, held[1]["text"], {"text": held[2]["text"]}]))
    srv = Server(mini / "saker-mini-q8_0.gguf", "--ctx", "512", "--parallel", "2", "--device", "cpu",
                 "--drafter", str(mini / "drafter"), "--always-speculate", name="saker-mini", log_dir=tmp_path)
    try:
        out = tmp_path / "spec.json"
        proc = drive("--url", srv.url, "--prompts", prompts, "--concurrency", "1,2", "--requests-per-client", "3",
                     "--gen-tokens", "24", "--warmup", "1", "--json", out)
        assert proc.returncode == 0, proc.stderr.decode() + "\n" + srv.output()[-3000:]
        j = json.loads(out.read_text())
        assert j["prompt_source"].startswith("file ")
        for r in j["levels"]:
            assert r["errors"] == 0, r["error_samples"]
            assert r["drafted_tokens"] > 0 and 0 < r["accepted_tokens"] <= r["drafted_tokens"], r
        assert "drafts accepted" in proc.stdout.decode()
        (first,) = [r for r in j["levels"] if r["concurrency"] == 1]
        assert first["prompt_tokens_mean"] > 20  # the file's prompts, not --prompt-tokens
    finally:
        srv.stop()
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    proc = drive("--url", "http://127.0.0.1:9", "--prompts", bad, "--model", "x")
    assert proc.returncode != 0 and "--prompts" in proc.stderr.decode()
