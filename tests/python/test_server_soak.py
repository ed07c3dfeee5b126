"""The soak: 32 streaming clients for 60 s against saker-mini (runs in `make test`, about 70 s). Each client
streams greedy chat completions back to back; every stream must end with [DONE] and carry exactly the text
and token count of the same request answered alone (greedy output does not depend on what else runs), so
nothing is lost, cut or mixed up. Afterwards the server's open file descriptors and RSS are back near where
they were before the soak."""
import json
import threading
import time

import pytest
import requests

from conftest import ROOT
from server_harness import Server

MINI = ROOT / "models" / "saker-mini" / "saker-mini-q8_0.gguf"
CLIENTS = 32
SOAK_S = 60
TOKENS = 24
PROMPTS = ["def add(a, b):", "class Stack:", "import os\n\ndef walk(path):", "# sort a list\ndef sort(xs):"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not MINI.exists():
        pytest.skip("models/saker-mini is absent (package it with tools/train/package.py): test skipped")
    srv = Server(MINI, "--device", "cpu", "--parallel", "8", "--ctx", "512", name="saker-mini",
                 log_dir=tmp_path_factory.mktemp("soak-logs"))
    yield srv
    srv.stop()


def body(prompt, stream):
    b = {"messages": [{"role": "user", "content": prompt}], "max_tokens": TOKENS, "temperature": 0,
         "ignore_eos": True, "stream": stream}
    if stream:
        b["stream_options"] = {"include_usage": True}
    return b


def one_stream(url, prompt):
    """(text, completion tokens) of one streamed answer; raises on anything but a clean end."""
    with requests.post(url + "/v1/chat/completions", json=body(prompt, True), stream=True, timeout=60) as r:
        assert r.status_code == 200, r.text
        lines = [line for line in r.iter_lines() if line]
    assert lines and lines[-1] == b"data: [DONE]", lines[-3:]
    chunks = [json.loads(x[6:]) for x in lines[:-1]]
    assert all("error" not in c for c in chunks), chunks[-1]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert finishes == ["length"], finishes
    return text, chunks[-1]["usage"]["completion_tokens"]


def test_32_streaming_clients_for_60_seconds_lose_nothing(server):
    expected = {}
    for p in PROMPTS:
        r = requests.post(server.url + "/v1/chat/completions", json=body(p, False), timeout=60).json()
        expected[p] = (r["choices"][0]["message"]["content"], r["usage"]["completion_tokens"])
        assert expected[p][1] == TOKENS

    def wave():
        errors = []
        threads = [threading.Thread(target=lambda i=i: errors.extend(check(i, 1))) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors

    def check(i, rounds=None, until=None):
        errors, n = [], 0
        while (rounds is not None and n < rounds) or (until is not None and time.time() < until):
            p = PROMPTS[(i + n) % len(PROMPTS)]
            try:
                got = one_stream(server.url, p)
                if got != expected[p]:
                    errors.append(f"client {i} round {n}: {got!r} != {expected[p]!r}")
            except Exception as e:  # noqa: BLE001 - collected and reported
                errors.append(f"client {i} round {n}: {e!r}")
            n += 1
        counts[i] = n
        return errors

    counts = {}
    wave()  # warm up: handler threads, allocator arenas, KV pages, prefix cache
    time.sleep(0.5)
    fds_before, rss_before = server.open_fds(), server.rss_kb()

    errors = []
    until = time.time() + SOAK_S
    lock = threading.Lock()

    def client(i):
        e = check(i, until=until)
        with lock:
            errors.extend(e)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SOAK_S + 60)
    took = time.time() - start
    assert not errors, f"{len(errors)} bad streams, first: " + "\n".join(errors[:5])
    total = sum(counts.values())
    assert all(counts[i] > 0 for i in range(CLIENTS)), counts

    deadline = time.time() + 10
    while time.time() < deadline and server.open_fds() > fds_before:
        time.sleep(0.1)
    fds_after, rss_after = server.open_fds(), server.rss_kb()
    print(f"{total} streams in {took:.1f}s; fds {fds_before} -> {fds_after}; "
          f"RSS {rss_before / 1024:.0f} -> {rss_after / 1024:.0f} MB")
    assert fds_after <= fds_before, (fds_before, fds_after)
    assert rss_after - rss_before < 48 * 1024, (rss_before, rss_after)
    m = server.metrics()
    assert m["saker_queue_depth"] == 0 and m["saker_slots_busy"] == 0
    assert requests.get(server.url + "/health", timeout=5).status_code == 200
