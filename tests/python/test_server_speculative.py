"""`saker serve --drafter`: speculative decoding behind the OpenAI and Anthropic APIs, on saker-mini with its
DFlash drafter. Every answer must be exactly what the same server without a drafter returns (text, logprobs,
finish reason), streaming or not, and /metrics must count the verify steps."""
import anthropic
import openai
import pytest

from conftest import ROOT
from server_harness import Server

MINI = ROOT / "models" / "saker-mini"
GGUF = MINI / "saker-mini-q8_0.gguf"
PROMPTS = ["def fibonacci(n):", "import os\n\n\ndef list_python_files(root):", "class Stack:\n    def __init__(self):"]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    if not GGUF.exists() or not (MINI / "drafter" / "model.safetensors").exists():
        pytest.skip("models/saker-mini is absent (package it with tools/train/package.py): test skipped")
    logs = tmp_path_factory.mktemp("server-logs")
    plain = Server(GGUF, "--device", "cpu", name="saker-mini", log_dir=logs)
    spec = Server(GGUF, "--drafter", str(MINI / "drafter"), "--draft-tree", "16", "--parallel", "2", "--always-speculate",
                  name="saker-mini", log_dir=logs)
    yield plain, spec
    plain.stop()
    spec.stop()


def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=120)


@pytest.mark.parametrize("kwargs", [
    dict(temperature=0),
    dict(temperature=0.8, top_p=0.95, seed=7),
    dict(temperature=0, stop=["return"]),
    dict(temperature=0.9, seed=3, logprobs=2),
])
def test_completions_are_the_same_with_a_drafter(servers, kwargs):
    plain, spec = servers
    for prompt in PROMPTS:
        a = client(plain).completions.create(model="saker-mini", prompt=prompt, max_tokens=48, **kwargs)
        b = client(spec).completions.create(model="saker-mini", prompt=prompt, max_tokens=48, **kwargs)
        assert b.choices[0].text == a.choices[0].text, prompt
        assert b.choices[0].finish_reason == a.choices[0].finish_reason
        assert b.usage.completion_tokens == a.usage.completion_tokens
        if "logprobs" in kwargs:
            assert b.choices[0].logprobs.token_logprobs == a.choices[0].logprobs.token_logprobs
            assert b.choices[0].logprobs.top_logprobs == a.choices[0].logprobs.top_logprobs


def test_streamed_chat_is_the_same_with_a_drafter(servers):
    plain, spec = servers
    messages = [{"role": "user", "content": "def add(a, b):"}]

    def streamed(server):
        chunks = client(server).chat.completions.create(model="saker-mini", messages=messages, max_tokens=40,
                                                        temperature=0, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    assert streamed(spec) == streamed(plain)


def test_anthropic_messages_are_the_same_with_a_drafter(servers):
    plain, spec = servers

    def ask(server):
        c = anthropic.Anthropic(base_url=server.url, api_key="none", max_retries=0, timeout=120)
        m = c.messages.create(model="saker-mini", max_tokens=40, extra_body={"temperature": 0},
                              messages=[{"role": "user", "content": "class Queue:"}])
        return m.content[0].text, m.stop_reason

    assert ask(spec) == ask(plain)


def test_usage_reports_the_requests_speculation(servers):
    """Each response's usage says what its drafts did: OpenAI's accepted / rejected prediction tokens and
    saker's `speculative` figures (streamed usage too; Anthropic under usage.speculative); a server without a
    proposer reports none of it."""
    plain, spec = servers
    r = client(spec).completions.create(model="saker-mini", prompt="def fibonacci(n):", max_tokens=48, temperature=0)
    u = r.usage.model_dump()
    sp = u["speculative"]
    assert sp["verify_steps"] > 0 and sp["accepted_tokens"] > 0, u
    assert sp["accepted_tokens"] + sp["verify_steps"] <= u["completion_tokens"], u  # committed by verify steps
    d = u["completion_tokens_details"]
    assert d["accepted_prediction_tokens"] == sp["accepted_tokens"], u
    assert d["rejected_prediction_tokens"] == sp["drafted_tokens"] - sp["accepted_tokens"], u
    assert abs(sp["mean_accepted_length"] - (sp["accepted_tokens"] + sp["verify_steps"]) / sp["verify_steps"]) < 1e-9

    chunks = list(client(spec).chat.completions.create(
        model="saker-mini", messages=[{"role": "user", "content": "def add(a, b):"}], max_tokens=32, temperature=0,
        stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].usage.model_dump()["speculative"]["verify_steps"] > 0

    c = anthropic.Anthropic(base_url=spec.url, api_key="none", max_retries=0, timeout=120)
    m = c.messages.create(model="saker-mini", max_tokens=32, extra_body={"temperature": 0},
                          messages=[{"role": "user", "content": "class Queue:"}])
    assert m.usage.model_dump()["speculative"]["verify_steps"] > 0, m.usage

    u = client(plain).completions.create(model="saker-mini", prompt="def f(x):", max_tokens=8).usage.model_dump()
    assert "speculative" not in u and not u.get("completion_tokens_details"), u


def test_metrics_count_verify_steps(servers):
    _, spec = servers
    client(spec).completions.create(model="saker-mini", prompt="def fibonacci(n):", max_tokens=64, temperature=0)
    m = spec.metrics()
    steps = m["saker_draft_verify_steps_total"]
    committed = m["saker_draft_committed_tokens_total"]
    assert steps > 0 and committed / steps > 1.0, (steps, committed)
    assert m["saker_speculation_undrafted_steps_total"] == 0, m  # --always-speculate: no step stood down
    # What speculation cost and brought, measured: the decode-only steps with drafts and their time, and the
    # engine's recent acceptance (what a new request expects).
    assert m['saker_speculation_decode_steps_total{drafts="yes"}'] > 0, m
    assert m['saker_speculation_decode_step_seconds_total{drafts="yes"}'] > 0, m
    assert 0 <= m["saker_speculation_accepted_drafts"] <= 15, m


@pytest.mark.parametrize("proposer", [["--spec", "ngram"], ["--draft-model", str(GGUF), "--draft-max", "4"]])
def test_proposers_without_a_drafter_serve_the_same_answers(servers, tmp_path_factory, proposer):
    """`saker serve --spec ngram` and `--draft-model FILE`: drafts verified in the batched step, the same
    answers as without, and the verify steps counted in /metrics."""
    plain, _ = servers
    ngram = Server(GGUF, *proposer, "--parallel", "2", "--always-speculate", name="saker-mini",
                   log_dir=tmp_path_factory.mktemp("server-logs"))
    try:
        for kwargs in (dict(temperature=0), dict(temperature=0.8, seed=5)):
            for prompt in PROMPTS:
                a = client(plain).completions.create(model="saker-mini", prompt=prompt, max_tokens=64, **kwargs)
                b = client(ngram).completions.create(model="saker-mini", prompt=prompt, max_tokens=64, **kwargs)
                assert b.choices[0].text == a.choices[0].text, (prompt, kwargs)
                assert b.choices[0].finish_reason == a.choices[0].finish_reason
        m = ngram.metrics()
        assert m["saker_draft_verify_steps_total"] > 0, m
        assert m["saker_draft_committed_tokens_total"] > m["saker_draft_verify_steps_total"], m
    finally:
        ngram.stop()


def test_drafter_errors_stop_the_server_at_load(tmp_path):
    if not GGUF.exists():
        pytest.skip("models/saker-mini is absent: test skipped")
    (tmp_path / "config.json").write_text('{"architectures": ["Qwen3ForCausalLM"]}')
    with pytest.raises(AssertionError, match="not a DFlash drafter"):
        Server(GGUF, "--drafter", str(tmp_path), name="saker-mini", log_dir=tmp_path)
