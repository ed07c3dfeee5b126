"""`saker serve` driven by the official OpenAI SDK and plain HTTP: chat (stream and not), completions,
models, sampling parameters, logprobs, stop strings, tokenize / detokenize / apply-template."""
import json

import openai
import pytest
import requests

from server_harness import Server, tiny_model_path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tiny_model_path(tmp_path_factory), "--ctx", "256", "--parallel", "2")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]


def test_health_and_models(server, client):
    assert requests.get(server.url + "/health").json() == {"status": "ok"}
    for code, body in server.health_codes[:-1]:  # polls made while the model loaded, if any
        assert code == 503 and body["status"] == "loading" and body["error"]["code"] == "model_loading"
    models = client.models.list()
    assert [m.id for m in models.data] == ["tiny"]
    assert client.models.retrieve("tiny").id == "tiny"


def test_chat_non_stream(client):
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=12, seed=3)
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    choice = r.choices[0]
    assert choice.message.role == "assistant" and isinstance(choice.message.content, str)
    assert choice.finish_reason in ("stop", "length")
    assert r.usage.completion_tokens <= 12 and r.usage.prompt_tokens > 0
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_chat_prompt_tokens_match_tokenize_of_template(server, client):
    applied = requests.post(server.url + "/apply-template", json={"messages": MESSAGES}).json()
    prompt = applied["prompt"]
    assert prompt == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nSay hello.<|im_end|>\n"
                      "<|im_start|>assistant\n")
    # The template's markup is read as control tokens (the content holds none): /tokenize with parse_special.
    n = requests.post(server.url + "/tokenize", json={"content": prompt, "parse_special": True}).json()["count"]
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=1)
    assert r.usage.prompt_tokens == n == applied["n_tokens"]


def test_chat_stream_with_usage(client):
    stream = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=10, seed=5, temperature=0,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes in (["length"], ["stop"])
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].usage.completion_tokens <= 10
    # the same request without streaming gives the same text (greedy)
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=10, temperature=0)
    assert r.choices[0].message.content == text
    assert r.usage.completion_tokens == chunks[-1].usage.completion_tokens


def test_stream_raw_framing(server):
    body = {"model": "tiny", "messages": MESSAGES, "max_tokens": 4, "stream": True}
    with requests.post(server.url + "/v1/chat/completions", json=body, stream=True) as r:
        assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/event-stream")
        raw = r.content.decode()
    events = raw.split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]"
    for e in events[:-2]:
        assert e.startswith("data: ")
        assert json.loads(e[6:])["object"] == "chat.completion.chunk"


def test_seed_reproduces(client):
    kw = dict(model="tiny", messages=MESSAGES, max_tokens=16, temperature=1.0, top_p=0.9, seed=42)
    a = client.chat.completions.create(**kw).choices[0].message.content
    b = client.chat.completions.create(**kw).choices[0].message.content
    assert a == b


def greedy_text(client, n=40):
    r = client.completions.create(model="tiny", prompt="Once upon a time", max_tokens=n, temperature=0)
    return r.choices[0].text


def test_stop_string_never_leaks(client):
    full = greedy_text(client)
    assert len(full) > 12, full
    stop = full[6:10]
    expect = full[: full.index(stop)]
    r = client.completions.create(model="tiny", prompt="Once upon a time", max_tokens=40, temperature=0, stop=[stop])
    assert r.choices[0].text == expect and r.choices[0].finish_reason == "stop"
    pieces = [c.choices[0].text for c in client.completions.create(
        model="tiny", prompt="Once upon a time", max_tokens=40, temperature=0, stop=stop, stream=True) if c.choices]
    assert "".join(pieces) == expect
    assert all(stop not in p for p in pieces)


def test_max_tokens_and_length(client):
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, max_completion_tokens=3, temperature=0,
                                       logit_bias={"300": 100})
    assert r.usage.completion_tokens == 3 and r.choices[0].finish_reason == "length"


def test_logit_bias_and_logprobs(server, client):
    piece = requests.post(server.url + "/detokenize", json={"tokens": [300]}).json()["content"]
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=5, logit_bias={"300": 100},
                                       logprobs=True, top_logprobs=3)
    assert r.choices[0].message.content == piece * 5
    lp = r.choices[0].logprobs.content
    assert len(lp) == 5
    for t in lp:
        assert t.token == piece and t.logprob <= 0 and len(t.top_logprobs) == 3
        assert t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob >= t.top_logprobs[2].logprob


def test_penalties_and_truncation_accepted(client):
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=8, presence_penalty=1.0,
                                       frequency_penalty=0.5, top_p=0.5, extra_body={"top_k": 5, "min_p": 0.1,
                                                                                      "repetition_penalty": 1.2})
    assert r.usage.completion_tokens <= 8


def test_n_choices(client):
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=4, n=3, seed=1)
    assert sorted(c.index for c in r.choices) == [0, 1, 2]
    stream = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=4, n=2, stream=True)
    finished = {c.choices[0].index for c in stream if c.choices and c.choices[0].finish_reason}
    assert finished == {0, 1}


def test_completions(client):
    r = client.completions.create(model="tiny", prompt="def f():", max_tokens=6, temperature=0, logprobs=2)
    assert r.object == "text_completion" and r.usage.completion_tokens <= 6
    assert len(r.choices[0].logprobs.tokens) == r.usage.completion_tokens
    assert all(len(t) == 2 for t in r.choices[0].logprobs.top_logprobs)
    ids = client.completions.create(model="tiny", prompt=[1, 2, 3, 4], max_tokens=3, temperature=0)
    assert ids.usage.prompt_tokens == 4
    multi = client.completions.create(model="tiny", prompt=["a", "b"], max_tokens=2, n=2)
    assert sorted(c.index for c in multi.choices) == [0, 1, 2, 3]
    chunks = list(client.completions.create(model="tiny", prompt="x", max_tokens=5, stream=True,
                                            stream_options={"include_usage": True}))
    assert chunks[-1].usage.completion_tokens <= 5


def test_response_format_rejected_clearly(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="tiny", messages=MESSAGES, response_format={"type": "json_object"})
    err = e.value.body
    assert err["param"] == "response_format" and "not supported" in err["message"]
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=1, response_format={"type": "text"})
    assert r.choices


def test_tokenize_detokenize_roundtrip(server):
    r = requests.post(server.url + "/tokenize", json={"content": "Hello world <|im_end|>", "with_pieces": True}).json()
    ids = [t["id"] for t in r["tokens"]]
    assert r["count"] == len(ids) and "".join(t["piece"] for t in r["tokens"]) == "Hello world <|im_end|>"
    back = requests.post(server.url + "/detokenize", json={"tokens": ids}).json()
    assert back["content"] == "Hello world <|im_end|>"


def test_apply_template_with_tools_and_history(server):
    msgs = [{"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    r = requests.post(server.url + "/apply-template", json={"messages": msgs, "tools": tools}).json()
    p = r["prompt"]
    assert "<tools>" in p and "get_weather" in p
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris"}}\n</tool_call>' in p
    assert "<tool_response>\nsunny\n</tool_response>" in p and p.endswith("<|im_start|>assistant\n")
