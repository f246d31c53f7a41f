"""Reasoning separated into reasoning_content, on a template with thinking (Qwen3's,
ChatML turns that match SmolLM2's vocabulary). SmolLM2-135M does not open a
thought by itself, so the request prefills `<think>` (assistant prefill); with
enable_thinking false the template closes the thought itself."""
import pytest

from conftest import ROOT, KilnServer

QWEN3_TEMPLATE = ROOT / "tests" / "data" / "shared" / "templates" / "Qwen-Qwen3-0.6B.jinja"
QUESTION = {"role": "user", "content": "What is 2+2?"}
THINK = {"role": "assistant", "content": "<think>\nThe user asks"}


@pytest.fixture(scope="module")
def thinking_client():
    openai = pytest.importorskip("openai")
    s = KilnServer("--chat-template-file", str(QWEN3_TEMPLATE), "--parallel", "2")
    yield openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    s.stop()


def test_reasoning_content(thinking_client):
    c = thinking_client
    r = c.chat.completions.create(model="", messages=[QUESTION, THINK], max_tokens=60, temperature=0)
    msg = r.choices[0].message
    reasoning = msg.model_extra["reasoning_content"]
    assert reasoning and "<think>" not in reasoning and "</think>" not in reasoning
    assert "</think>" not in (msg.content or "")
    text, thought = "", ""
    for chunk in c.chat.completions.create(model="", messages=[QUESTION, THINK], max_tokens=60, temperature=0,
                                           stream=True):
        for ch in chunk.choices:
            text += ch.delta.content or ""
            thought += (ch.delta.model_extra or {}).get("reasoning_content") or ""
    assert thought == reasoning
    assert text == (msg.content or "")


def test_thinking_off(thinking_client):
    r = thinking_client.chat.completions.create(model="", messages=[QUESTION], max_tokens=20, temperature=0,
                                                extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    assert r.choices[0].message.content
    assert not (r.choices[0].message.model_extra or {}).get("reasoning_content")
