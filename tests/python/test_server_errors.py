"""Bad requests get precise OpenAI / Anthropic error bodies and the server keeps serving: malformed JSON,
wrong types, unknown model, prompts over the context, empty messages, unknown routes, --api-key, and a
client that disconnects mid-stream."""
import json
import socket
import time

import openai
import pytest
import requests

from server_harness import Server, tiny_model_path

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tiny_model_path(tmp_path_factory), "--ctx", "4096", "--parallel", "1")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    srv = Server(tiny_model_path(tmp_path_factory), "--ctx", "64")
    yield srv
    srv.stop()


def post(server, path, body, **kw):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return requests.post(server.url + path, data=data, headers={"Content-Type": "application/json"}, timeout=60, **kw)


def openai_error(r, status, param=None, code=None):
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"} and err["message"]
    if param is not None:
        assert err["param"] == param, err
    if code is not None:
        assert err["code"] == code, err
    return err


def test_malformed_json(server):
    err = openai_error(post(server, "/v1/chat/completions", '{"model": "tiny", "messages": ['), 400)
    assert "invalid JSON" in err["message"]
    openai_error(post(server, "/v1/chat/completions", "[1, 2]"), 400)
    openai_error(post(server, "/v1/completions", b"\xff\xfe"), 400)
    deep = "[" * 10000 + "]" * 10000
    openai_error(post(server, "/v1/chat/completions", deep), 400)
    r = post(server, "/v1/messages", "{nope")
    assert r.status_code == 400 and r.json()["type"] == "error"
    assert r.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("field,value,param", [
    ("temperature", "hot", "temperature"),
    ("temperature", 5, "temperature"),
    ("max_tokens", "ten", "max_tokens"),
    ("max_tokens", -1, "max_tokens"),
    ("top_p", 0, "top_p"),
    ("n", 0, "n"),
    ("stop", 7, "stop"),
    ("stop", ["ok", 3], "stop[1]"),
    ("seed", 1.5, "seed"),
    ("logit_bias", {"abc": 1}, "logit_bias.abc"),
    ("logit_bias", {"5": 1000}, "logit_bias.5"),
    ("top_logprobs", 3, "top_logprobs"),
    ("stream_options", {"include_usage": True}, "stream_options"),
    ("messages", "hi", "messages"),
    ("messages", [], "messages"),
    ("messages", [{"role": "wizard", "content": "x"}], "messages[0].role"),
    ("messages", [{"role": "user"}], "messages[0].content"),
    ("messages", [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
     "messages[0].content[0].type"),
    ("tools", [{"type": "function"}], "tools[0]"),
    ("model", 3, "model"),
])
def test_wrong_fields(server, field, value, param):
    body = {"model": "tiny", "messages": MSG, "max_tokens": 2, field: value}
    openai_error(post(server, "/v1/chat/completions", body), 400, param=param)


def test_unknown_model(server):
    openai_error(post(server, "/v1/chat/completions", {"model": "gpt-9", "messages": MSG}), 404, "model",
                 "model_not_found")
    openai_error(requests.get(server.url + "/v1/models/gpt-9"), 404, code="model_not_found")


def test_prompt_over_context(small_server):
    server = small_server
    long = "word " * 200
    err = openai_error(post(server, "/v1/chat/completions", {"messages": [{"role": "user", "content": long}]}), 400,
                       "messages", "context_length_exceeded")
    assert "--ctx" in err["message"]
    openai_error(post(server, "/v1/completions", {"prompt": long}), 400, "prompt", "context_length_exceeded")
    r = post(server, "/v1/messages", {"model": "tiny", "max_tokens": 4, "messages": [{"role": "user", "content": long}]})
    assert r.status_code == 400 and "context" in r.json()["error"]["message"]
    # max_tokens larger than the room left is capped, not refused
    r = post(server, "/v1/completions", {"prompt": "hi", "max_tokens": 100000, "temperature": 0})
    assert r.status_code == 200 and r.json()["usage"]["total_tokens"] <= 64


def test_empty_inputs(server):
    openai_error(post(server, "/v1/completions", {"prompt": ""}), 400, "prompt")
    openai_error(post(server, "/v1/completions", {"prompt": []}), 400, "prompt")
    openai_error(post(server, "/v1/completions", {"prompt": [1, -3]}), 400, "prompt[1]")
    openai_error(post(server, "/v1/completions", {}), 400, "prompt")
    openai_error(post(server, "/detokenize", {"tokens": [10 ** 9]}), 400, "tokens[0]")
    openai_error(post(server, "/tokenize", {}), 400, "content")


def test_unknown_route(server):
    openai_error(requests.get(server.url + "/v1/nothing"), 404)
    openai_error(post(server, "/v1/nothing", {}), 404)


def test_client_disconnect_mid_stream_frees_the_slot(tmp_path_factory):
    # Its own server with room for a long generation (16,000 tokens: about ten seconds of the tiny model on an
    # idle core, far longer on a loaded one), so that it is still running when the disconnect is noticed; a
    # generation that ended first would leave nothing to cancel.
    server = Server(tiny_model_path(tmp_path_factory), "--ctx", "16384", "--parallel", "1")
    try:
        before = server.metrics()
        body = json.dumps({"model": "tiny", "prompt": "x", "max_tokens": 16000, "stream": True, "temperature": 1,
                           "logit_bias": {"300": 100}}).encode()
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        assert b"200 OK" in s.recv(4096)
        s.close()  # gone after the first chunk
        key = 'saker_generations_total{reason="cancelled"}'
        deadline = time.time() + 60
        while time.time() < deadline:
            m = server.metrics()
            if m.get(key, 0) > before.get(key, 0) and m['saker_slots_busy'] == 0:
                break
            time.sleep(0.05)
        assert m['saker_slots_busy'] == 0
        assert m.get(key, 0) == before.get(key, 0) + 1
        # and the single slot serves the next request
        r = requests.post(server.url + "/v1/completions", json={"model": "tiny", "prompt": "x", "max_tokens": 2})
        assert r.status_code == 200
    finally:
        server.stop()


def test_server_still_healthy(server):
    assert requests.get(server.url + "/health").status_code == 200


def test_api_key(tmp_path_factory):
    srv = Server(tiny_model_path(tmp_path_factory), "--ctx", "64", "--api-key", "sekrit")
    try:
        r = requests.post(srv.url + "/v1/chat/completions", json={"messages": MSG, "max_tokens": 1})
        openai_error(r, 401, code="invalid_api_key")
        r = requests.post(srv.url + "/v1/messages", json={"messages": MSG, "max_tokens": 1},
                          headers={"x-api-key": "wrong"})
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
        assert requests.get(srv.url + "/v1/models").status_code == 401
        assert requests.get(srv.url + "/health").status_code == 200  # probes need no key
        good = openai.OpenAI(base_url=srv.url + "/v1", api_key="sekrit", max_retries=0)
        assert good.chat.completions.create(model="tiny", messages=MSG, max_tokens=1).choices
        bad = openai.OpenAI(base_url=srv.url + "/v1", api_key="nope", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.chat.completions.create(model="tiny", messages=MSG, max_tokens=1)
        r = requests.post(srv.url + "/v1/messages/count_tokens", json={"model": "tiny", "messages": MSG},
                          headers={"x-api-key": "sekrit"})
        assert r.status_code == 200 and r.json()["input_tokens"] > 0
    finally:
        srv.stop()
