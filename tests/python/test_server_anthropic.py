"""`saker serve` driven by the official Anthropic SDK: messages (JSON and event stream), count_tokens,
stop sequences, and the event framing on the wire."""
import json

import anthropic
import pytest
import requests

from server_harness import Server, tiny_model_path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tiny_model_path(tmp_path_factory), "--ctx", "1024", "--parallel", "2", "--alias", "claude-test")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    return anthropic.Anthropic(base_url=server.url, api_key="unused", max_retries=0, timeout=120)


def test_messages(client):
    m = client.messages.create(model="tiny", max_tokens=12, system="Be brief.",
                               messages=[{"role": "user", "content": "Say hello."}])
    assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg_")
    assert m.content[0].type == "text" and isinstance(m.content[0].text, str)
    assert m.stop_reason in ("end_turn", "max_tokens")
    assert m.usage.input_tokens > 0 and m.usage.output_tokens <= 12


def test_alias_accepted(client):
    m = client.messages.create(model="claude-test", max_tokens=2, messages=[{"role": "user", "content": "hi"}])
    assert m.model == "tiny"


def test_messages_stream_matches_non_stream(client):
    kw = dict(model="tiny", max_tokens=16, extra_body={"temperature": 0},
              messages=[{"role": "user", "content": [{"type": "text", "text": "Count to three."}]}])
    with client.messages.stream(**kw) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert final.content[0].text == text
    assert final.usage.output_tokens <= 16 and final.stop_reason in ("end_turn", "max_tokens")
    m = client.messages.create(**kw)
    assert m.content[0].text == text and m.usage.output_tokens == final.usage.output_tokens


def test_event_stream_framing(server):
    body = {"model": "tiny", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with requests.post(server.url + "/v1/messages", json=body, stream=True) as r:
        assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/event-stream")
        raw = r.content.decode()
    names = []
    for block in raw.split("\n\n")[:-1]:
        lines = block.split("\n")
        assert lines[0].startswith("event: ") and lines[1].startswith("data: ")
        name = lines[0][7:]
        assert json.loads(lines[1][6:])["type"] == name
        names.append(name)
    assert names[0] == "message_start" and names[1] == "content_block_start"
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[2:-3]) <= {"content_block_delta"}


def test_count_tokens(server, client):
    msgs = [{"role": "user", "content": "Say hello."}]
    n = client.messages.count_tokens(model="tiny", system="Be brief.", messages=msgs).input_tokens
    m = client.messages.create(model="tiny", max_tokens=1, system="Be brief.", messages=msgs)
    assert n == m.usage.input_tokens
    prompt = requests.post(server.url + "/apply-template",
                           json={"messages": [{"role": "system", "content": "Be brief."}] + msgs}).json()["prompt"]
    assert n == requests.post(server.url + "/tokenize", json={"content": prompt, "parse_special": True}).json()["count"]


def test_stop_sequence(client):
    kw = dict(model="tiny", max_tokens=40, extra_body={"temperature": 0}, messages=[{"role": "user", "content": "Tell a story."}])
    full = client.messages.create(**kw).content[0].text
    assert len(full) > 12, full
    stop = full[6:10]
    m = client.messages.create(stop_sequences=[stop], **kw)
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == stop
    assert m.content[0].text == full[: full.index(stop)]


def test_tool_history_accepted(client):
    msgs = [{"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                               "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}]
    tools = [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}}]
    m = client.messages.create(model="tiny", max_tokens=4, messages=msgs, tools=tools)
    assert m.usage.input_tokens > 20


def test_anthropic_errors(client):
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="tiny", max_tokens=0, messages=[{"role": "user", "content": "x"}])
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in e.value.body["error"]["message"]
    with pytest.raises(anthropic.NotFoundError) as e:
        client.messages.create(model="nope", max_tokens=4, messages=[{"role": "user", "content": "x"}])
    assert e.value.body["error"]["type"] == "not_found_error"
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="tiny", max_tokens=4, messages=[])
    assert "at least one" in e.value.body["error"]["message"]
