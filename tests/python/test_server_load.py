"""32 concurrent streaming clients on loopback: every stream completes without error, the server's RSS and
open file descriptors come back to where they were, and /metrics' counters add up to what clients saw."""
import json
import threading
import time

import pytest
import requests

from server_harness import Server, tiny_model_path

N_CLIENTS = 32


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tiny_model_path(tmp_path_factory), "--ctx", "256", "--parallel", "4")
    yield srv
    srv.stop()


def one_stream(url, i, results, errors):
    try:
        body = {"model": "tiny", "max_tokens": 16, "seed": i, "stream": True,
                "stream_options": {"include_usage": True},
                "messages": [{"role": "user", "content": f"client {i}: tell me something"}]}
        with requests.post(url + "/v1/chat/completions", json=body, stream=True, timeout=300) as r:
            if r.status_code != 200:
                raise AssertionError(f"client {i}: HTTP {r.status_code} {r.text}")
            events = [line for line in r.iter_lines() if line]
        assert events[-1] == b"data: [DONE]", events[-3:]
        chunks = [json.loads(e[6:]) for e in events[:-1]]
        assert all("error" not in c for c in chunks)
        finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
        assert len(finish) == 1
        results[i] = chunks[-1]["usage"]
    except Exception as e:  # noqa: BLE001 - reported below
        errors.append(f"client {i}: {e!r}")


def run_wave(server):
    results, errors = [None] * N_CLIENTS, []
    threads = [threading.Thread(target=one_stream, args=(server.url, i, results, errors)) for i in range(N_CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, "\n".join(errors)
    return results


def settle(server, fds_target, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline and server.open_fds() > fds_target:
        time.sleep(0.1)
    return server.open_fds()


def test_32_concurrent_streams(server):
    run_wave(server)  # warm up: threads, allocator arenas, KV caches
    time.sleep(0.5)
    fds_before = server.open_fds()
    rss_before = server.rss_kb()
    m0 = server.metrics()

    usages = run_wave(server)

    fds_after = settle(server, fds_before)
    rss_after = server.rss_kb()
    m1 = server.metrics()
    assert fds_after <= fds_before, (fds_before, fds_after)
    assert rss_after - rss_before < 32 * 1024, (rss_before, rss_after)  # no per-request growth worth the name

    def delta(key):
        return m1.get(key, 0) - m0.get(key, 0)

    assert delta('saker_requests_total{endpoint="/v1/chat/completions",status="200"}') == N_CLIENTS
    assert delta("saker_generation_tokens_total") == sum(u["completion_tokens"] for u in usages)
    assert delta("saker_prompt_tokens_total") == sum(u["prompt_tokens"] for u in usages)
    finished = sum(v for k, v in m1.items() if k.startswith("saker_generations_total")) - \
        sum(v for k, v in m0.items() if k.startswith("saker_generations_total"))
    assert finished == N_CLIENTS
    with_tokens = sum(1 for u in usages if u["completion_tokens"] > 0)
    assert delta("saker_time_to_first_token_seconds_count") == with_tokens
    assert delta("saker_time_per_output_token_seconds_count") == sum(max(0, u["completion_tokens"] - 1) for u in usages)
    assert m1["saker_queue_depth"] == 0 and m1["saker_slots_busy"] == 0 and m1["saker_slots_total"] == 4
    assert requests.get(server.url + "/health").status_code == 200
