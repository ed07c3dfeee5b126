"""Refusals that name their field: --max-generations (n x prompts per request), tool_choice in both dialects
(checked against the request's tools; the choices that would force a tool call are refused, not ignored), and
a sweep of wrong-typed values over every field the routes read, none of which may answer with library text,
`param: null` or a 500."""
import json

import pytest
import requests

from server_harness import Server, tiny_model_path

MSG = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
ANTHROPIC_TOOLS = [{"name": "get_weather", "input_schema": {"type": "object"}}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tiny_model_path(tmp_path_factory), "--ctx", "1024", "--parallel", "2", "--max-generations", "8")
    yield srv
    srv.stop()


def post(server, path, body):
    return requests.post(server.url + path, data=json.dumps(body), headers={"Content-Type": "application/json"},
                         timeout=60)


def refused(r, param, status=400):
    assert r.status_code == status, r.text
    body = r.json()
    if "type" in body and body["type"] == "error":  # Anthropic
        err = body["error"]
        assert err["type"] == "invalid_request_error" and err["message"], body
        return err
    err = body["error"]
    assert err["param"] == param, err
    return err


@pytest.mark.parametrize("body,param", [
    ({"prompt": "a", "n": 9}, "n"),
    ({"prompt": ["a", "b", "c"], "n": 3}, "prompt"),
    ({"prompt": [[1, 2], [3], [4], [5], [6], [7], [8], [9], [10]]}, "prompt"),
    ({"prompt": ["a"] * 17}, "prompt"),
])
def test_max_generations(server, body, param):
    err = refused(post(server, "/v1/completions", {"max_tokens": 1, **body}), param)
    assert "--max-generations" in err["message"] or "at most 16" in err["message"], err


def test_max_generations_allows_the_limit(server):
    r = post(server, "/v1/completions", {"prompt": ["a", "b"], "n": 4, "max_tokens": 1})
    assert r.status_code == 200 and len(r.json()["choices"]) == 8
    err = refused(post(server, "/v1/chat/completions", {"messages": MSG, "n": 9, "max_tokens": 1}), "n")
    assert "8" in err["message"]


@pytest.mark.parametrize("tool_choice,tools,param,code", [
    ("required", TOOLS, "tool_choice", "unsupported_parameter"),
    ("required", None, "tool_choice", None),
    ("sometimes", TOOLS, "tool_choice", None),
    (3, TOOLS, "tool_choice", None),
    ({"type": "function", "function": {"name": "get_weather"}}, TOOLS, "tool_choice", "unsupported_parameter"),
    ({"type": "function", "function": {"name": "launch"}}, TOOLS, "tool_choice.function.name", None),
    ({"type": "function", "function": {"name": "launch"}}, None, "tool_choice.function.name", None),
    ({"type": "function", "function": {"name": 5}}, TOOLS, "tool_choice.function.name", None),
    ({"type": "function"}, TOOLS, "tool_choice.function", None),
    ({"type": "tool", "function": {"name": "get_weather"}}, TOOLS, "tool_choice.type", None),
])
def test_openai_tool_choice_refusals(server, tool_choice, tools, param, code):
    body = {"messages": MSG, "max_tokens": 1, "tool_choice": tool_choice}
    if tools:
        body["tools"] = tools
    err = refused(post(server, "/v1/chat/completions", body), param)
    if code:
        assert err["code"] == code and "cannot" in err["message"], err


@pytest.mark.parametrize("tool_choice", ["auto", "none", None])
def test_openai_tool_choice_accepted(server, tool_choice):
    body = {"messages": MSG, "max_tokens": 1, "tools": TOOLS, "tool_choice": tool_choice}
    assert post(server, "/v1/chat/completions", body).status_code == 200
    prompt = post(server, "/apply-template", {"messages": MSG, "tools": TOOLS}).json()["prompt"]
    assert "get_weather" in prompt


def test_openai_tool_choice_none_hides_the_tools(server):
    with_tools = post(server, "/v1/chat/completions", {"messages": MSG, "max_tokens": 1, "tools": TOOLS}).json()
    hidden = post(server, "/v1/chat/completions",
                  {"messages": MSG, "max_tokens": 1, "tools": TOOLS, "tool_choice": "none"}).json()
    plain = post(server, "/v1/chat/completions", {"messages": MSG, "max_tokens": 1}).json()
    assert hidden["usage"]["prompt_tokens"] == plain["usage"]["prompt_tokens"] < with_tools["usage"]["prompt_tokens"]


@pytest.mark.parametrize("tool_choice,tools,fragment", [
    ({"type": "any"}, ANTHROPIC_TOOLS, "cannot"),
    ({"type": "any"}, None, "no 'tools'"),
    ({"type": "tool", "name": "get_weather"}, ANTHROPIC_TOOLS, "cannot"),
    ({"type": "tool", "name": "launch"}, ANTHROPIC_TOOLS, "tool_choice.name"),
    ({"type": "tool"}, ANTHROPIC_TOOLS, "tool_choice.name"),
    ({"type": "maybe"}, ANTHROPIC_TOOLS, "tool_choice.type"),
    ({"type": 1}, ANTHROPIC_TOOLS, "tool_choice.type"),
    ("auto", ANTHROPIC_TOOLS, "'tool_choice' must be an object"),
    ({"type": "auto", "disable_parallel_tool_use": "yes"}, ANTHROPIC_TOOLS, "disable_parallel_tool_use"),
])
def test_anthropic_tool_choice_refusals(server, tool_choice, tools, fragment):
    body = {"messages": MSG, "max_tokens": 1, "tool_choice": tool_choice}
    if tools:
        body["tools"] = tools
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        err = refused(post(server, path, body), None)
        assert fragment in err["message"], (path, err)


def test_anthropic_tool_choice_accepted(server):
    base = {"messages": MSG, "max_tokens": 1, "tools": ANTHROPIC_TOOLS}
    n = {}
    for choice in ({"type": "auto"}, {"type": "auto", "disable_parallel_tool_use": True}, {"type": "none"}, None):
        r = post(server, "/v1/messages", {**base, "tool_choice": choice})
        assert r.status_code == 200, r.text
        n[json.dumps(choice)] = r.json()["usage"]["input_tokens"]
    assert n['{"type": "none"}'] < n['{"type": "auto"}'] == n["null"]


# Every field the routes read, with values of the wrong type: each refusal names a field (the one sent or
# one inside it) and none leaks library text.
OPENAI_FIELDS = ["model", "messages", "tools", "tool_choice", "chat_template_kwargs", "temperature", "top_p", "top_k",
                 "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty", "seed", "logit_bias", "stop",
                 "max_tokens", "max_completion_tokens", "n", "ignore_eos", "stream", "stream_options", "logprobs",
                 "top_logprobs", "response_format"]
COMPLETION_FIELDS = ["prompt", "echo", "suffix", "logprobs", "n", "max_tokens", "stop", "seed", "stream"]
ANTHROPIC_FIELDS = ["model", "messages", "system", "tools", "tool_choice", "thinking", "max_tokens", "temperature",
                    "top_p", "top_k", "stop_sequences", "ignore_eos", "stream"]
WRONG = [7, 1.5, "text", True, [], [1], {}, {"a": 1}, [{"x": None}]]
LIBRARY_WORDS = ("type_error", "[json.exception", "type must be", "cannot use")


def sweep(server, path, base, fields, param_of):
    problems = []
    for field in fields:
        for value in WRONG:
            r = post(server, path, {**base, field: value})
            if r.status_code == 200:
                continue  # a value of another type that the field accepts
            text = r.text
            if r.status_code != 400 and not (field == "model" and r.status_code == 404):
                problems.append(f"{field}={value!r}: HTTP {r.status_code} {text}")
                continue
            if any(w in text for w in LIBRARY_WORDS):
                problems.append(f"{field}={value!r}: library text: {text}")
            param = param_of(r.json())
            if param is not None and not (param == field or param.startswith(field + ".") or
                                          param.startswith(field + "[")):
                problems.append(f"{field}={value!r}: names {param!r}: {text}")
    assert not problems, "\n".join(problems)


def test_wrong_types_name_the_field_openai(server):
    sweep(server, "/v1/chat/completions", {"messages": MSG, "max_tokens": 1}, OPENAI_FIELDS,
          lambda b: b["error"]["param"] or "<null>")
    sweep(server, "/v1/completions", {"prompt": "hi", "max_tokens": 1}, COMPLETION_FIELDS,
          lambda b: b["error"]["param"] or "<null>")


def test_wrong_types_name_the_field_anthropic(server):
    # Anthropic's error body has no param: the message must name the field.
    def named(body):
        msg = body["error"]["message"]
        return None if "'" in msg else "<unnamed>"
    sweep(server, "/v1/messages", {"messages": MSG, "max_tokens": 1}, ANTHROPIC_FIELDS, named)


@pytest.mark.parametrize("messages,param", [
    ([{"role": "user", "content": "x", "name": 5}], "messages[0].name"),
    ([{"role": "tool", "content": "x", "tool_call_id": 5}], "messages[0].tool_call_id"),
    ([{"role": "assistant", "content": None, "tool_calls": [{"id": 3, "type": "function",
                                                             "function": {"name": "f", "arguments": "{}"}}]}],
     "messages[0].tool_calls[0].id"),
    ([{"role": "user", "content": [{"type": "text", "text": 5}]}], "messages[0].content[0].text"),
    ([{"role": 5, "content": "x"}], "messages[0].role"),
])
def test_nested_wrong_types_name_the_field(server, messages, param):
    refused(post(server, "/v1/chat/completions", {"messages": messages, "max_tokens": 1}), param)
