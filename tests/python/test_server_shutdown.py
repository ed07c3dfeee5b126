"""Honest endings: after SIGTERM the server stops accepting, lets running requests finish for --shutdown-grace,
then ends what is left with an error, never with a fake completion: a stream gets an error event (OpenAI:
`data: {"error": ...}` and no [DONE]; Anthropic: `event: error` and no message_stop), a non-streaming request
(running or queued) a 503 `shutting_down`. The process exits within the grace period plus a small margin while
one client trickles header bytes and another never reads its stream. And a client that leaves cancels every
generation of its request (multi-prompt x n, running and queued, streamed or not). Against saker-mini; bounded
in time."""
import json
import signal
import socket
import threading
import time

import pytest
import requests

from conftest import ROOT
from server_harness import HeaderTrickler, Server

MINI = ROOT / "models" / "saker-mini" / "saker-mini-q8_0.gguf"
GRACE = 2.0
MARGIN = 1.5  # the answers' bound after the grace (0.5 s), closing, the engine's last step, process exit

# Far longer than the test: still running when the grace ends (no end-of-text either).
LONG = {"max_tokens": 16000, "temperature": 1, "logit_bias": {"300": 100}}


@pytest.fixture
def server(tmp_path_factory):
    if not MINI.exists():
        pytest.skip("models/saker-mini is absent (package it with tools/train/package.py): test skipped")
    srv = Server(MINI, "--device", "cpu", "--parallel", "4", "--ctx", "16384", "--shutdown-grace", str(GRACE),
                 name="saker-mini", log_dir=tmp_path_factory.mktemp("shutdown-logs"))
    yield srv
    srv.stop()


def sse_lines(url, path, body, out, key):
    """Reads a whole SSE answer; out[key] = its non-empty lines, or the exception that ended it."""
    try:
        with requests.post(url + path, json=body, stream=True, timeout=30) as r:
            assert r.status_code == 200, r.text
            out[key] = [line for line in r.iter_lines() if line]
    except Exception as e:  # noqa: BLE001 - the test looks at it
        out[key] = e


def whole(url, path, body, out, key):
    try:
        r = requests.post(url + path, json=body, timeout=30)
        out[key] = (r.status_code, r.json())
    except Exception as e:  # noqa: BLE001
        out[key] = e


def wait_running(server, n, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = server.metrics()
        if m.get("saker_slots_busy", 0) >= n:
            return m
        time.sleep(0.05)
    raise AssertionError(f"{n} generations did not start: {server.metrics()}")


def test_sigterm_ends_every_request_with_an_error_and_exits_in_time(server):
    out = {}
    prompt = {"prompt": "def f(x):", **LONG}
    chat = {"messages": [{"role": "user", "content": "count"}], **LONG}
    # A running stream whose client never reads (its socket buffers fill, the server's writes wait).
    deaf = socket.create_connection(("127.0.0.1", server.port))
    deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    body = json.dumps({**prompt, "stream": True}).encode()
    deaf.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    threads = [
        threading.Thread(target=sse_lines, args=(server.url, "/v1/completions", {**prompt, "stream": True, "n": 2},
                                                 out, "completions stream")),
        threading.Thread(target=sse_lines, args=(server.url, "/v1/messages",
                                                 {"messages": chat["messages"], "max_tokens": 16000, "stream": True,
                                                  "temperature": 1, "ignore_eos": True}, out, "anthropic stream")),
    ]
    for t in threads:
        t.start()
    wait_running(server, 4)  # every slot busy: what follows waits in the queue
    queued = [
        threading.Thread(target=sse_lines, args=(server.url, "/v1/chat/completions", {**chat, "stream": True},
                                                 out, "chat stream (queued)")),
        threading.Thread(target=whole, args=(server.url, "/v1/chat/completions", chat, out, "chat (queued)")),
        threading.Thread(target=whole, args=(server.url, "/v1/messages",
                                             {"messages": chat["messages"], "max_tokens": 100}, out,
                                             "anthropic (queued)")),
    ]
    for t in queued:
        t.start()
    deadline = time.time() + 10
    while server.metrics().get("saker_queue_depth", 0) < 3 and time.time() < deadline:
        time.sleep(0.05)

    # A client that trickles a header.
    trickler = HeaderTrickler(server.port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    try:
        time.sleep(0.3)
        t0 = time.time()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=GRACE + 10)
        took = time.time() - t0
        for t in threads + queued:
            t.join(timeout=10)
    finally:
        trickler.close()
        deaf.close()
    print(f"exit {took:.2f}s after SIGTERM with a {GRACE} s grace period")
    assert took < GRACE + MARGIN, f"exit took {took:.2f}s with a {GRACE} s grace period"
    assert took > GRACE - 0.2, f"exit after {took:.2f}s: the running requests did not get their grace"

    for key in ("completions stream", "chat stream (queued)"):
        lines = out[key]
        assert isinstance(lines, list), (key, lines)
        assert b"data: [DONE]" not in lines, key
        last = json.loads(lines[-1][6:])
        assert last["error"]["code"] == "shutting_down" and last["error"]["type"] == "server_error", (key, last)
        finishes = [c["choices"][0]["finish_reason"] for c in map(lambda x: json.loads(x[6:]), lines[:-1])
                    if c.get("choices")]
        assert not any(finishes), (key, "a cut generation reported a finish reason")
    lines = out["anthropic stream"]
    assert isinstance(lines, list), lines
    events = [x[7:].decode() for x in lines if x.startswith(b"event: ")]
    assert events[0] == "message_start" and events[-1] == "error", events
    assert "message_stop" not in events and "message_delta" not in events, events

    status, err = out["chat (queued)"]
    assert status == 503 and err["error"]["code"] == "shutting_down", err
    status, err = out["anthropic (queued)"]
    assert status == 503 and err["type"] == "error" and "shutting down" in err["error"]["message"], err


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_leaves_cancels_every_generation_of_its_request(server, stream):
    """4 prompts x n=3: 12 generations on 4 slots (8 queued); the client leaving cancels all of them, the
    running within a step and the queued before they run."""
    cancelled = 'saker_generations_total{reason="cancelled"}'
    before = server.metrics().get(cancelled, 0)
    body = json.dumps({"prompt": ["def a():", "def b():", "def c():", "def d():"], "n": 3, "stream": stream,
                       **LONG}).encode()
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    m = wait_running(server, 4)
    assert m["saker_queue_depth"] == 8, m
    t0 = time.time()
    s.close()
    while time.time() - t0 < 5:
        m = server.metrics()
        if m.get(cancelled, 0) >= before + 12 and m["saker_slots_busy"] == 0 and m["saker_queue_depth"] == 0:
            break
        time.sleep(0.02)
    took = time.time() - t0
    assert m.get(cancelled, 0) == before + 12 and m["saker_slots_busy"] == 0 and m["saker_queue_depth"] == 0, m
    assert took < 1.0, f"the generations ran {took:.2f}s after their client left"
