"""`saker serve` with a Jinja chat template (--chat-template-file): the template renders the prompt, a
template that opens <think> makes the output reasoning (OpenAI reasoning_content, Anthropic thinking blocks),
chat_template_kwargs reach the template, and /health answers 503 while the model loads."""
import subprocess
import time

import anthropic
import openai
import pytest
import requests

from server_harness import Server, free_port, saker_bin, tiny_model_path

# A small template in the style of Qwen3's: Hermes tools, <think> opened by the generation prompt unless
# enable_thinking is false.
TEMPLATE = """\
{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}<tools>
{% for t in tools %}{{ t | tojson }}
{% endfor %}</tools><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for m in messages %}{% if m.role != 'system' %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endif %}{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and not enable_thinking %}<think>

</think>

{% else %}<think>
{% endif %}{% endif %}"""

FORCE = {"300": 100}  # a plain text token, so every output is non-empty


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model = tiny_model_path(tmp_path_factory)
    tpl = model.parent / "template.jinja"
    tpl.write_text(TEMPLATE)
    srv = Server(model, "--ctx", "512", "--chat-template-file", str(tpl), "--debug-load-delay-ms", "1500")
    yield srv
    srv.stop()


def test_health_503_while_loading(server):
    assert server.health_codes[0][0] == 503 and server.health_codes[-1][0] == 200
    code, body = server.health_codes[0]
    assert body["status"] == "loading" and body["error"]["code"] == "model_loading"


def test_routes_503_while_loading(tmp_path_factory):
    port = free_port()
    proc = subprocess.Popen([str(saker_bin()), "serve", "-m", str(tiny_model_path(tmp_path_factory)), "--port",
                             str(port), "--debug-load-delay-ms", "3000"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 10
        while True:
            try:
                r = requests.post(url + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
                break
            except requests.ConnectionError:
                assert time.time() < deadline
                time.sleep(0.02)
        assert r.status_code == 503 and r.json()["error"]["code"] == "model_loading"
        assert requests.get(url + "/health").status_code == 503
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def jinja(server):
    meta = requests.get(server.url + "/v1/models").json()["data"][0]["meta"]
    if meta["chat_template"] != "jinja":
        pytest.skip("this build has no Jinja interpreter (text/chat_template.cpp): ChatML only")
    return server


def test_template_renders(jinja):
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    p = requests.post(jinja.url + "/apply-template", json={"messages": msgs}).json()["prompt"]
    assert p == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<think>\n"
    p = requests.post(jinja.url + "/apply-template",
                      json={"messages": msgs, "chat_template_kwargs": {"enable_thinking": False}}).json()["prompt"]
    assert p.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    p = requests.post(jinja.url + "/apply-template", json={"messages": msgs, "tools": tools}).json()["prompt"]
    assert p.startswith("<|im_start|>system\nS\n\n<tools>\n{") and '"name": "f"' in p


def test_reasoning_openai(jinja):
    client = openai.OpenAI(base_url=jinja.url + "/v1", api_key="x", max_retries=0)
    msgs = [{"role": "user", "content": "think"}]
    r = client.chat.completions.create(model="tiny", messages=msgs, max_tokens=6, logit_bias=FORCE)
    msg = r.choices[0].message
    assert msg.reasoning_content and not msg.content  # the prompt opened <think>: all of it is reasoning
    r = client.chat.completions.create(model="tiny", messages=msgs, max_tokens=6, logit_bias=FORCE,
                                       extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    assert r.choices[0].message.content and getattr(r.choices[0].message, "reasoning_content", None) is None
    chunks = list(client.chat.completions.create(model="tiny", messages=msgs, max_tokens=6, logit_bias=FORCE,
                                                 stream=True))
    reasoning = "".join(getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices)
    assert reasoning == msg.reasoning_content


def test_thinking_anthropic(jinja):
    client = anthropic.Anthropic(base_url=jinja.url, api_key="x", max_retries=0)
    kw = dict(model="tiny", max_tokens=6, messages=[{"role": "user", "content": "think"}],
              extra_body={"temperature": 0})
    m = client.messages.create(**kw)
    assert m.content[0].type == "thinking" and m.content[0].thinking
    with client.messages.stream(**kw) as s:
        events = [e.type for e in s]
        final = s.get_final_message()
    assert final.content[0].type == "thinking" and final.content[0].thinking == m.content[0].thinking
    assert "content_block_start" in events and "message_stop" in events
