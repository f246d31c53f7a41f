"""The chat page in a real browser: a streamed round trip, Stop, Markdown with
math and code, a reasoning block, a tool-call block, conversations kept in the
browser, and the phone-width layout with the keyboard."""
import json
import time
import urllib.request

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import SMOLLM2, TEMPLATES, KilnServer

MODEL = SMOLLM2.stem


def settings(page, **s):
    """Stores chat settings (as the settings panel does) and reloads the page."""
    page.open("/")
    page.js("localStorage.clear(); localStorage.setItem('kiln.settings', arguments[0]);", json.dumps(s))
    page.open("/")
    page.wait(lambda: page.js("return document.querySelector('#model').value") != "", what="the model list")


def last_message(page):
    return page.js("const m = kilnChat.current.messages; return m[m.length - 1];")


def wait_idle(page, timeout=120):
    page.wait(lambda: not page.js("return kilnChat.running"), timeout, "the reply to finish")


def api_chat(server, messages, **kw):
    body = json.dumps({"model": MODEL, "messages": messages, **kw}).encode()
    req = urllib.request.Request(server.url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def import_conversation(page, tmp_path, messages, title="imported"):
    f = tmp_path / "conv.json"
    f.write_text(json.dumps({"conversations": [{"id": "t1", "title": title, "model": MODEL, "messages": messages}]}))
    page.d.find_element(By.ID, "import").send_keys(str(f))
    page.wait(lambda: page.js("return kilnChat.current.title") == title, what="the import")


def test_round_trip_streams_and_stop_cancels(page, server):
    settings(page, temperature="0", max_tokens="48")
    # A cold load (nothing cached), for the byte count below.
    page.d.execute_cdp_cmd("Network.clearBrowserCache", {})
    page.open("/")
    page.wait(lambda: page.js("return document.querySelector('#model').value") != "", what="the model list")
    # First load: an empty conversation, the message box is the first textarea and has the focus.
    assert page.js("return document.activeElement === document.querySelector('textarea') && document.activeElement.id === 'input'")
    assert page.js("return kilnChat.current.messages.length") == 0
    assert page.js("return document.querySelector('#model').value") == MODEL
    box = page.d.find_element(By.ID, "input")
    box.send_keys("a", Keys.SHIFT, Keys.ENTER, Keys.SHIFT, "b")
    assert box.get_attribute("value") == "a\nb"  # Shift+Enter: a new line, nothing sent
    box.clear()
    question = "What is the capital of France?"
    page.record("partial", "kilnChat.running && kilnChat.current.messages.length == 2 && "
                           "kilnChat.current.messages[1].content.length > 0 ? kilnChat.current.messages[1].content : ''")
    box.send_keys(question, Keys.ENTER)
    seen_partial = page.seen("partial", 60, "streamed text")
    wait_idle(page)
    m = last_message(page)
    assert m["content"].startswith(seen_partial) and len(m["content"]) >= len(seen_partial)
    assert not m.get("error")
    # The browser assembled exactly what the API answers (greedy).
    ref = api_chat(server, [{"role": "user", "content": question}], temperature=0, max_tokens=48)
    assert m["content"] == ref["choices"][0]["message"]["content"]
    shown = page.d.find_element(By.CSS_SELECTOR, ".msg.assistant .body.markdown").text
    assert shown.split()[:3] == m["content"].split()[:3] or shown
    speed = page.d.find_element(By.CSS_SELECTOR, ".msg.assistant .speed").text
    assert "tok/s" in speed and "prompt" in speed and "cached" in speed
    # What the browser fetched to load the page and send one message (compressed bytes on the wire).
    fetched = page.js("""return performance.getEntries().filter(e => e.entryType == 'navigation' || e.entryType == 'resource')
                         .reduce((a, e) => a + (e.transferSize || 0), 0);""")
    print(f"\nchat page: {fetched} bytes fetched for the load and one message")
    assert 0 < fetched < 1_000_000
    page.screenshot("chat_round_trip")

    # Stop: a long reply cancelled mid-stream; the request is aborted on purpose.
    page.allow_aborted = True
    page.js("localStorage.setItem('kiln.settings', JSON.stringify({temperature: '0.7', max_tokens: '', seed: '1'}));")
    page.open("/")
    page.wait(lambda: page.js("return document.querySelector('#model').value") != "")
    page.d.find_element(By.ID, "input").send_keys("Write a very long story about a dragon and a knight.", Keys.ENTER)
    page.wait(lambda: page.js("const m = kilnChat.current.messages; return kilnChat.running && m.length == 2 && m[1].content.length > 20"),
              60, "a streaming reply")
    assert page.d.find_element(By.ID, "stop").is_displayed()
    page.d.find_element(By.ID, "stop").click()
    wait_idle(page, 10)
    m = last_message(page)
    assert m["finish"] == "stopped" and not m.get("error") and m["content"]
    assert "stopped" in page.d.find_element(By.CSS_SELECTOR, ".msg.assistant .speed").text if m.get("timings") else True
    # The server ends the cancelled sequence: nothing stays in flight.
    def idle():
        with urllib.request.urlopen(server.url + "/metrics", timeout=10) as r:
            return "kiln_requests_processing 0" in r.read().decode()
    page.wait(idle, 10, "the server to end the stopped request")
    # Regenerate replaces the reply; the conversation is still in localStorage after a reload.
    page.js("localStorage.setItem('kiln.settings', JSON.stringify({temperature: '0', max_tokens: '8'}));")
    page.open("/")
    page.wait(lambda: page.js("return document.querySelector('#model').value") != "")
    page.d.find_element(By.CSS_SELECTOR, "#conversations .conv-title").click()
    page.d.find_element(By.CSS_SELECTOR, ".msg.assistant button.regenerate").click()
    wait_idle(page)
    m = last_message(page)
    assert m["role"] == "assistant" and m["content"] and m["finish"] in ("length", "stop")
    assert page.js("return JSON.parse(localStorage.getItem('kiln.conversations')).length") == 2


def test_edit_branches_and_conversation_list(page, tmp_path):
    settings(page, temperature="0", max_tokens="6")
    import_conversation(page, tmp_path, [
        {"role": "user", "content": "Say hello."}, {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Say goodbye."}, {"role": "assistant", "content": "Goodbye!"}], title="greetings")
    # Edit the first user turn: a new conversation branches off, the original stays.
    page.d.find_elements(By.CSS_SELECTOR, ".msg.user button")[0].click()
    edit = page.d.find_element(By.CSS_SELECTOR, "textarea.edit")
    edit.clear()
    edit.send_keys("Say hi.", Keys.ENTER)
    wait_idle(page)
    cur = page.js("return kilnChat.current")
    assert cur["title"] == "greetings (branch)" and cur["branchedFrom"] == "t1"
    assert [m["content"] for m in cur["messages"][:1]] == ["Say hi."] and len(cur["messages"]) == 2
    orig = page.js("return kilnChat.conversations.find(c => c.id == 't1')")
    assert len(orig["messages"]) == 4 and orig["messages"][0]["content"] == "Say hello."
    # Search, rename, delete (two clicks).
    search = page.d.find_element(By.ID, "search")
    search.send_keys("goodbye")
    assert len(page.d.find_elements(By.CSS_SELECTOR, "#conversations li")) == 1
    search.send_keys(Keys.CONTROL, "a")
    search.send_keys(Keys.BACKSPACE)
    page.wait(lambda: len(page.d.find_elements(By.CSS_SELECTOR, "#conversations li")) == 2)
    li = page.d.find_element(By.CSS_SELECTOR, "#conversations li[data-id='t1']")
    li.find_element(By.CSS_SELECTOR, "button[aria-label^='Rename']").click()
    title = page.d.find_element(By.CSS_SELECTOR, "#conversations li input")
    title.send_keys(Keys.CONTROL, "a")
    title.send_keys("renamed", Keys.ENTER)
    assert page.js("return kilnChat.conversations.find(c => c.id == 't1').title") == "renamed"
    li = page.d.find_element(By.CSS_SELECTOR, "#conversations li[data-id='t1']")
    li.find_element(By.CSS_SELECTOR, "button[aria-label^='Delete']").click()
    li.find_element(By.CSS_SELECTOR, "button[aria-label^='Delete']").click()
    assert page.js("return kilnChat.conversations.some(c => c.id == 't1')") is False
    assert len(page.js("return JSON.parse(localStorage.getItem('kiln.conversations'))")) == 1
    # Export gives the conversations as JSON; importing that file adds them again (new ids).
    page.js("""window.testBlobs = []; const make = URL.createObjectURL.bind(URL);
               URL.createObjectURL = b => { window.testBlobs.push(b); return make(b); };
               HTMLAnchorElement.prototype.click = function () {};  // no download in the test""")
    page.d.find_element(By.ID, "export").click()
    exported = json.loads(page.d.execute_async_script("const done = arguments[arguments.length - 1]; window.testBlobs[0].text().then(done);"))
    assert [c["title"] for c in exported["conversations"]] == ["greetings (branch)"]
    f = tmp_path / "exported.json"
    f.write_text(json.dumps(exported))
    page.d.find_element(By.ID, "import").send_keys(str(f))
    page.wait(lambda: page.js("return kilnChat.conversations.length") == 2, 10, "the re-import")
    ids = page.js("return kilnChat.conversations.map(c => c.id)")
    assert len(set(ids)) == 2


def test_markdown_math_code_and_attachments(page, tmp_path):
    settings(page, temperature="0", max_tokens="4")
    reply = ("| a | b |\n|---|---|\n| 1 | 2 |\n\nEuler: $e^{i\\pi} + 1 = 0$ and\n\n$$\\int_0^1 x^2\\,dx = \\frac{1}{3}$$\n\n"
             "```python\ndef f(x):\n    return x * 2\n```\n\n<script>window.pwned = 1</script> [x](javascript:alert(1))")
    import_conversation(page, tmp_path, [{"role": "user", "content": "Show me"}, {"role": "assistant", "content": reply}])
    page.wait(lambda: page.d.find_elements(By.CSS_SELECTOR, ".msg.assistant .katex"), 20, "KaTeX")
    page.wait(lambda: page.d.find_elements(By.CSS_SELECTOR, ".msg.assistant code.hljs, .msg.assistant code .hljs-keyword"), 20, "highlight.js")
    assert page.d.find_elements(By.CSS_SELECTOR, ".msg.assistant .body table td")
    assert len(page.d.find_elements(By.CSS_SELECTOR, ".msg.assistant .katex-display")) == 1
    assert page.js("return window.pwned") is None  # raw HTML is shown as text
    assert not page.d.find_elements(By.CSS_SELECTOR, ".msg.assistant a[href^='javascript']")
    copy = page.d.find_element(By.CSS_SELECTOR, ".msg.assistant .code button.copy")
    copy.click()
    page.wait(lambda: copy.text == "Copied", 5)
    # A text file attached, and a long paste becomes an attachment.
    f = tmp_path / "notes.py"
    f.write_text("print('attached')\n")
    page.d.find_element(By.ID, "attach").send_keys(str(f))
    page.wait(lambda: "notes.py" in page.d.find_element(By.ID, "attachments").text)
    long_text = "lorem ipsum " * 180
    page.js("""const dt = new DataTransfer(); dt.setData('text/plain', arguments[0]);
               document.querySelector('#input').dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true, cancelable: true}));""",
            long_text)
    page.wait(lambda: "pasted-2.txt" in page.d.find_element(By.ID, "attachments").text)
    assert page.d.find_element(By.ID, "input").get_attribute("value") == ""
    page.screenshot("chat_markdown")
    page.d.find_element(By.ID, "input").send_keys("What do these files say?", Keys.ENTER)
    wait_idle(page)
    assert not last_message(page).get("error"), last_message(page)["error"]
    sent = page.js("const m = kilnChat.current.messages; return m[m.length - 2]")
    assert [a["name"] for a in sent["attachments"]] == ["notes.py", "pasted-2.txt"]
    assert sent["attachments"][0]["text"] == "print('attached')\n"


def test_reasoning_block(make_page):
    """A template whose generation prompt opens a thought (Qwen 3.5's, ChatML turns
    SmolLM2 knows): the reply streams into the reasoning block; thinking off closes it."""
    s = KilnServer("--chat-template-file", str(TEMPLATES / "Qwen3.5-4B.jinja"), "--parallel", "1")
    try:
        page = make_page(s)
        settings(page, temperature="0", max_tokens="40")
        page.wait(lambda: not page.js("return document.querySelector('#thinking').disabled"), 20, "the thinking switch")
        page.record("thinking", "kilnChat.running && document.querySelector('.msg.assistant details.reasoning') && "
                                "document.querySelector('.msg.assistant details.reasoning').open && "
                                "document.querySelector('.msg.assistant details.reasoning summary').textContent == 'Thinking…'")
        # A reply of many tokens: "What is 2+2?" thinks 5 tokens, which can reach the page in one read.
        page.d.find_element(By.ID, "input").send_keys("Write a long poem about the sea.", Keys.ENTER)
        page.seen("thinking", 60, "the reasoning block while it streams")
        wait_idle(page)
        m = last_message(page)
        assert m["reasoning"] and "<think>" not in m["reasoning"]
        block = page.d.find_element(By.CSS_SELECTOR, ".msg.assistant details.reasoning")
        assert block.find_element(By.TAG_NAME, "summary").text == "Reasoning"
        page.screenshot("chat_reasoning")
        # Thinking off: the template closes the thought; the reply is text.
        page.d.find_element(By.ID, "open-settings").click()
        page.d.find_element(By.ID, "thinking").click()
        page.d.find_element(By.ID, "close-settings").click()
        page.d.find_element(By.ID, "new-chat").click()
        page.d.find_element(By.ID, "input").send_keys("What is 2+2?", Keys.ENTER)
        wait_idle(page)
        m = last_message(page)
        assert m["content"] and not m.get("reasoning")
    finally:
        s.stop()


def test_tool_call_block(make_page, tmp_path):
    """The Qwen 2.5 template offers tools; SmolLM2 continues a reply that opens a
    call (as tests/server/test_tools.py does) and the page shows the parsed call."""
    s = KilnServer("--chat-template-file", str(TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja"), "--parallel", "1")
    try:
        page = make_page(s)
        tools = [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
                  "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}]
        settings(page, temperature="0", max_tokens="40", tools=json.dumps(tools))
        prefill = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "'
        import_conversation(page, tmp_path, [{"role": "user", "content": "What is the weather like in Paris right now?"},
                                             {"role": "assistant", "content": prefill}])
        page.d.find_element(By.CSS_SELECTOR, ".msg.assistant button.continue").click()
        wait_idle(page)
        m = last_message(page)
        assert m["finish"] == "tool_calls", m
        assert len(m["tool_calls"]) == 1 and m["tool_calls"][0]["id"].startswith("call_")
        block = page.d.find_element(By.CSS_SELECTOR, ".msg.assistant .tool-call[data-name='get_weather']")
        args = json.loads(block.find_element(By.TAG_NAME, "code").text)
        assert args["location"]
        assert "<tool_call>" not in page.d.find_element(By.CSS_SELECTOR, ".msg.assistant").text
        page.screenshot("chat_tool_call")
    finally:
        s.stop()


def test_phone_width_and_keyboard(page):
    settings(page, temperature="0", max_tokens="4")
    page.d.set_window_size(390, 844)
    page.open("/")
    page.wait(lambda: page.js("return document.querySelector('#model').value") != "")
    assert page.js("return document.activeElement.id") == "input"
    assert page.js("return document.documentElement.scrollWidth <= window.innerWidth + 1")  # nothing wider than the phone
    toggle = page.d.find_element(By.ID, "toggle-sidebar")
    assert toggle.is_displayed()
    assert page.js("return document.querySelector('#sidebar').getBoundingClientRect().right") <= 0
    toggle.click()
    page.wait(lambda: page.js("return document.querySelector('#sidebar').getBoundingClientRect().left") >= 0, 5, "the drawer")
    page.screenshot("chat_phone_drawer")
    page.d.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    assert not page.js("return document.body.classList.contains('sidebar-open')")
    # Keyboard only: the message box, Tab to the buttons, Enter sends.
    box = page.d.find_element(By.ID, "input")
    box.send_keys("Hi", Keys.ENTER)
    wait_idle(page)
    assert last_message(page)["role"] == "assistant"
    box.send_keys(Keys.TAB)
    assert page.js("return document.activeElement.id") == "attach-button"
    page.js("document.activeElement.blur()")
    page.d.find_element(By.TAG_NAME, "body").send_keys(Keys.CONTROL, Keys.SHIFT, "o")
    assert page.js("return kilnChat.current.messages.length") == 0


def test_errors_are_shown_in_the_thread(page):
    """A prompt larger than the context (2048 here): the server's 400 is shown in the
    thread, the page goes on, and the failed turn is not sent again."""
    page.allowed_failures = ["/v1/chat/completions"]
    settings(page, temperature="0", max_tokens="4")
    page.js("""const dt = new DataTransfer(); dt.setData('text/plain', arguments[0]);
               document.querySelector('#input').dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true, cancelable: true}));""",
            "lorem ipsum dolor " * 900)
    page.d.find_element(By.ID, "input").send_keys("Summarize.", Keys.ENTER)
    wait_idle(page)
    err = page.d.find_element(By.CSS_SELECTOR, ".msg.assistant .error")
    assert "context" in err.text, err.text
    page.screenshot("chat_error")
    page.d.find_element(By.CSS_SELECTOR, "#attachments button").click() if page.d.find_elements(By.CSS_SELECTOR, "#attachments button") else None
    page.d.find_element(By.ID, "new-chat").click()
    page.d.find_element(By.ID, "input").send_keys("Hi", Keys.ENTER)
    wait_idle(page)
    assert not last_message(page).get("error")
