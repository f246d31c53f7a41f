"""Editing an earlier turn of a long conversation on Gemma 3 270M (sliding-window
layers, window 512) at -c 8192: the window has long moved past the edit, so only
a checkpoint of its rings lets the prefix before the edit be reused. The prompt's
messages leave checkpoints at their starts, so the edited request re-evaluates
from at most one message before the edit, and its usage says what was reused and
why not more (OpenAI, then Anthropic and Ollama on later edits). (That the restored rings give what a cold prefill gives, bit for
bit, tests/engine/test_window_checkpoints.cpp checks.)"""
import json
import urllib.request

from conftest import MODELS, KilnServer, require

GEMMA = MODELS / "gemma-3-270m-q4_k_m.gguf"

PARAGRAPH = ("The river runs past the old mill, where the miller keeps a ledger of every sack of grain that "
             "passes through his doors. In spring the water rises, and the wheel turns faster than the stones can "
             "grind; in autumn it slows, and the village children race paper boats along the sluice. ")


def chat(url, messages):
    body = json.dumps({"messages": messages, "max_tokens": 8, "temperature": 0}).encode()
    req = urllib.request.Request(url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def post(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def test_editing_the_third_of_twelve_long_turns_reprefills_from_near_the_edit():
    require(GEMMA.exists(), f"model not installed: {GEMMA} (run ./setup.sh)")
    s = KilnServer("--parallel", "1", model=GEMMA, ctx=8192)
    try:
        messages, prompts = [], []
        for turn in range(12):
            messages.append({"role": "user", "content": f"Note {turn + 1}. " + PARAGRAPH * 6 + "Summarise it in a line."})
            r = chat(s.url, messages)
            messages.append({"role": "assistant", "content": r["choices"][0]["message"]["content"]})
            prompts.append(r["usage"]["prompt_tokens"])
        assert prompts[-1] > 3500, prompts
        # Edit the 3rd user turn (messages[4]) and ask again.
        edited = [dict(m) for m in messages[:-1]]
        edited[4]["content"] = "Note 3, rewritten. " + edited[4]["content"]
        r = chat(s.url, edited)
        u = r["usage"]
        cached = u["prompt_tokens_details"]["cached_tokens"]
        print(f"\nprompt tokens per turn: {prompts}\nedited: prompt {u['prompt_tokens']}, cached {cached}, "
              f"details {u['prompt_tokens_details']}, prefill {r['timings']['prompt_ms']:.0f} ms")
        # The edit lies in the 3rd turn's request (whose prompt ends at prompts[2]);
        # the 2nd turn's prompt ends where the reply before the edited message
        # starts: the re-prefill starts no earlier than that message.
        assert cached >= prompts[1], (cached, prompts)
        assert cached < prompts[2]
        short = u["prompt_tokens_details"]["cache_shortfall"]
        assert short["reason"] == "checkpoint too early", short
        assert 0 < short["tokens"] < 64, short  # only the edited message's own start is re-evaluated

        # The Anthropic and Ollama APIs report the shortfall too, each in its own
        # usage: edit the 4th user turn (messages[6]), then the 5th (messages[8]);
        # each request diverges inside a message whose start the one before
        # checkpointed.
        edited[6]["content"] = "Note 4, rewritten. " + edited[6]["content"]
        a = post(s.url, "/v1/messages", {"messages": edited, "max_tokens": 8, "temperature": 0})
        au = a["usage"]
        print(f"anthropic: {au}")
        assert au["cache_read_input_tokens"] > cached, (au, cached)
        assert au["cache_shortfall"]["reason"] == "checkpoint too early", au
        assert 0 < au["cache_shortfall"]["tokens"] < 64, au
        edited[8]["content"] = "Note 5, rewritten. " + edited[8]["content"]
        o = post(s.url, "/api/chat", {"messages": edited, "stream": False, "options": {"temperature": 0, "num_predict": 8}})
        print(f"ollama: prompt_eval_count {o['prompt_eval_count']}, cache_shortfall {o.get('cache_shortfall')}")
        assert o["prompt_eval_count"] < au["input_tokens"], (o["prompt_eval_count"], au)  # it diverges a turn later
        assert o["cache_shortfall"]["reason"] == "checkpoint too early", o
        assert 0 < o["cache_shortfall"]["tokens"] < 64, o
    finally:
        s.stop()
