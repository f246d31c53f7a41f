"""A 12-turn conversation on Gemma 3 270M (sliding-window attention; its file has
no chat template, so the built-in one is used), each turn appending a ~150-token
message: after turn 1 only the new text is prefilled."""
import pytest

from conftest import MODELS, KilnServer, require

GEMMA = MODELS / "gemma-3-270m-q4_k_m.gguf"

PARAGRAPH = ("The river runs past the old mill, where the miller keeps a ledger of every sack of grain that "
             "passes through his doors. In spring the water rises, and the wheel turns faster than the stones can "
             "grind; in autumn it slows, and the village children race paper boats along the sluice. ")


def test_twelve_turns_prefill_only_the_new_text():
    require(GEMMA.exists(), f"model not installed: {GEMMA} (run ./setup.sh)")
    openai = pytest.importorskip("openai")
    s = KilnServer("--parallel", "1", model=GEMMA, ctx=8192)
    try:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=300)
        messages, figures = [], []
        for turn in range(12):
            messages.append({"role": "user", "content": f"Note {turn + 1}. " + PARAGRAPH * 2 + "Summarise it in a line."})
            r = c.chat.completions.create(model="", messages=messages, max_tokens=12, temperature=0)
            messages.append({"role": "assistant", "content": r.choices[0].message.content})
            u = r.usage
            figures.append((u.prompt_tokens, u.prompt_tokens_details.cached_tokens))
        print("\n(prompt tokens, cached tokens) per turn:", figures)
        assert figures[0][1] == 0
        for (prev_prompt, _), (prompt, cached) in zip(figures, figures[1:]):
            new_text = prompt - prev_prompt
            assert new_text > 140
            # Only the new message (and the reply as the template writes it back) is evaluated.
            assert prompt - cached <= new_text + 20, figures
        assert figures[-1][0] > 1800
    finally:
        s.stop()
