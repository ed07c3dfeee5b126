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
