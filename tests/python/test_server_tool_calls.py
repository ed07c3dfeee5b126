"""Tool calls end to end: request `tools` through the OpenAI SDK, the model writes a Hermes <tool_call>, and the
client receives OpenAI `tool_calls`, streamed and not, with no raw markup. (Anthropic's API has no logit_bias,
so the forcing below cannot reach its route; its tool_use mapping is covered by the output parser's tests.)

No trained model that writes tool calls can be downloaded here, so the test makes the output certain: a
golden Qwen3 folder gets a tokenizer whose added tokens are exactly "<tool_call>", the JSON body of one call
and "</tool_call>", and the request biases those three tokens (100 / 70 / 40) while a repetition penalty of 10
pushes each one down once written. Greedy decoding then writes the three in order whatever the random
weights say (their logits stay within +-13), and the server's parser has a real stream to parse.
"""
import json
import shutil

import openai
import pytest

from conftest import ROOT
from server_harness import Server

CALL = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}'
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                   "required": ["city"]}}}]
# Hermes-style template; the tool-call syntax is named in a comment so it never appears in the prompt (where the
# repetition penalty would see it).
TEMPLATE = ("{#- tool calls: <tool_call>{json}</tool_call> -#}"
            "{%- if tools %}<|im_start|>system\nTools: {% for t in tools %}{{ t.function.name }} {% endfor %}"
            "<|im_end|>\n{%- endif %}"
            "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}"
            "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")


@pytest.fixture(scope="module")
def tool_server(tmp_path_factory):
    from tokenizers import Tokenizer, AddedToken, decoders, models, pre_tokenizers, trainers

    folder = tmp_path_factory.mktemp("toolmodel") / "qwen3-tools"
    shutil.copytree(ROOT / "tests" / "data" / "golden" / "qwen3-tied", folder)
    (folder / "reference.safetensors").unlink()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], show_progress=False)
    tok.train_from_iterator(["What is the weather in Paris? Tools and answers."] * 50, trainer=trainer)
    tok.add_tokens([AddedToken("<tool_call>", special=False), AddedToken(CALL, special=False),
                    AddedToken("</tool_call>", special=False)])
    assert tok.get_vocab_size() <= 512
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"eos_token": "<|im_end|>", "bos_token": None, "chat_template": TEMPLATE}))
    ids = [tok.token_to_id(t) for t in ("<tool_call>", CALL, "</tool_call>")]
    server = Server(folder, name="tools")
    yield server, ids
    server.stop()


def forcing(ids):
    return {"logit_bias": {str(ids[0]): 100, str(ids[1]): 70, str(ids[2]): 40}, "max_tokens": 3, "temperature": 0}


def test_openai_tool_call(tool_server):
    server, ids = tool_server
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="none")
    f = forcing(ids)
    r = client.chat.completions.create(model="tools", messages=[{"role": "user", "content": "Weather in Paris?"}],
                                       tools=TOOLS, logit_bias=f["logit_bias"], max_tokens=3, temperature=0,
                                       extra_body={"repetition_penalty": 10})
    msg = r.choices[0].message
    assert msg.tool_calls and len(msg.tool_calls) == 1, msg
    call = msg.tool_calls[0]
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris", "unit": "celsius"}
    assert not msg.content
    assert r.choices[0].finish_reason == "tool_calls"


def test_openai_tool_call_streamed(tool_server):
    server, ids = tool_server
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="none")
    f = forcing(ids)
    stream = client.chat.completions.create(model="tools", messages=[{"role": "user", "content": "Paris?"}],
                                            tools=TOOLS, logit_bias=f["logit_bias"], max_tokens=3, temperature=0,
                                            stream=True, extra_body={"repetition_penalty": 10})
    name, args, content, finish = "", "", "", None
    for chunk in stream:
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            name += tc.function.name or "" if tc.function else ""
            args += tc.function.arguments or "" if tc.function else ""
        finish = chunk.choices[0].finish_reason or finish
    assert "<tool_call>" not in content and "get_weather" not in content
    assert name == "get_weather"
    assert json.loads(args) == {"city": "Paris", "unit": "celsius"}
    assert finish == "tool_calls"
