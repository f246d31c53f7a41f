"""The explorer in a real browser: local files parsed in the page (both real
models, and a sparse file over 4 GB), the model card against `kiln inspect
--json`, exact weight previews against `kiln dequant`, the live view against
greedy `kiln run`, the vocabulary and the resident-model cache."""
import json
import os
import subprocess
import urllib.request

import numpy as np
import pytest
from selenium.webdriver.common.by import By

from conftest import GEMMA, SMOLLM2, kiln_binary
from test_static import post

CARD_KEYS = ["architecture", "name", "file_type", "n_layer", "n_embd", "n_head", "n_head_kv", "head_dim_k", "head_dim_v",
             "n_ff", "n_ctx_train", "sliding_window", "n_expert", "n_expert_used", "file_size", "n_tensors", "n_params", "type_mix"]


def kiln(*args):
    return subprocess.run([str(kiln_binary()), *map(str, args)], check=True, capture_output=True, text=True).stdout


def inspect_json(path):
    return json.loads(kiln("inspect", "--json", path))


def check_card(card, ref):
    for k in CARD_KEYS:
        assert card[k] == ref[k], (k, card[k], ref[k])
    assert card["tokenizer"]["n_vocab"] == ref["tokenizer"]["n_vocab"]
    assert card["tokenizer"]["model"] == ref["tokenizer"]["model"]
    assert card["rope"]["freq_base"] == ref["rope"]["freq_base"]
    assert abs(card["bits_per_weight"] - ref["bits_per_weight"]) < 1e-9


def open_explorer(page):
    page.open("/explore")
    # The file picker is in the page from the start.
    assert page.d.find_element(By.CSS_SELECTOR, "input[type=file]#file")
    page.wait(lambda: page.js("return (kilnExplorer.serverModels || []).length") >= 1, 20, "the server's models")


def open_local(page, path, drop=False):
    page.js("kilnExplorer.card = null;")
    if not drop:
        page.d.find_element(By.ID, "file").send_keys(str(path))
    else:
        # A real drop: a File from a (test-only) input, in a DataTransfer, dropped on the drop zone.
        page.js("""const i = document.createElement('input'); i.type = 'file'; i.id = 'test-drop'; i.hidden = true;
                   document.body.append(i);""")
        page.d.find_element(By.ID, "test-drop").send_keys(str(path))
        page.js("""const dt = new DataTransfer(); dt.items.add(document.getElementById('test-drop').files[0]);
                   document.getElementById('dropzone').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
                   document.getElementById('test-drop').remove();""")
    return page.wait(lambda: page.js("return kilnExplorer.card"), 30, "the model card")


def test_drop_real_models_card_equals_inspect(page):
    open_explorer(page)
    for path, drop in ((SMOLLM2, False), (GEMMA, True)):
        card = open_local(page, path, drop)
        check_card(card, inspect_json(path))
        # The map draws every tensor; the table lists them all and filters.
        assert len(page.d.find_elements(By.CSS_SELECTOR, "#map .map-cell")) == card["n_tensors"]
        assert len(page.d.find_elements(By.CSS_SELECTOR, "#tensors tbody tr")) == card["n_tensors"]
        print(f"\n{path.name}: opened in {page.js('return kilnExplorer.lastOpenMs'):.1f} ms "
              f"from a {page.js('return kilnExplorer.front.prefix_bytes')}-byte prefix")
        page.screenshot("explorer_" + path.stem)
        page.js("document.getElementById('map-section').scrollIntoView()")
        page.screenshot("explorer_map_" + path.stem)
    f = page.d.find_element(By.ID, "tensor-filter")
    f.send_keys("attn_q.weight")
    assert len(page.d.find_elements(By.CSS_SELECTOR, "#tensors tbody tr")) == inspect_json(GEMMA)["n_layer"]
    f.clear()
    f.send_keys("q6_k")
    assert len(page.d.find_elements(By.CSS_SELECTOR, "#tensors tbody tr")) == 9
    # Sorting by bytes, largest first after two clicks.
    page.d.find_element(By.CSS_SELECTOR, "#tensors th[data-key=bytes]").click()
    page.d.find_element(By.CSS_SELECTOR, "#tensors th[data-key=bytes]").click()
    # Long arrays page from the file: the vocabulary's element 32 on equals the server's.
    row = page.d.find_element(By.CSS_SELECTOR, "#metadata tr[data-key='tokenizer.ggml.tokens']")
    row.find_element(By.TAG_NAME, "button").click()
    page.wait(lambda: len(row.find_elements(By.CSS_SELECTOR, ".tok")) == 132, 10, "the next page of tokens")
    tok32 = row.find_elements(By.CSS_SELECTOR, ".tok")[32]
    assert tok32.get_attribute("title") == "[32]"
    status, r = post(page, "/explore/array", {"model": GEMMA.stem, "key": "tokenizer.ggml.tokens", "offset": 32, "count": 1})
    shown = r["values"][0].replace("\n", "↵").replace("\t", "⇥").replace(" ", "␣")
    assert page.js("return arguments[0].textContent", tok32) == shown


def test_sparse_file_over_4gb_opens_in_under_a_second(page, tmp_path):
    """A sparse 5 GiB file with SmolLM2's real front (its tensor data is zeros)."""
    front = post(page, "/explore/open", {"model": SMOLLM2.stem})[1]["data_offset"]
    big = tmp_path / "sparse-5GiB.gguf"
    with open(SMOLLM2, "rb") as src, open(big, "wb") as dst:
        dst.write(src.read(front))
        dst.truncate(5 << 30)
    assert os.stat(big).st_blocks * 512 < 64 << 20  # really sparse
    open_explorer(page)
    card = open_local(page, big)
    ms = page.js("return kilnExplorer.lastOpenMs")
    print(f"\nsparse {big.stat().st_size} bytes: front parsed in {ms:.1f} ms")
    assert card["file_size"] == 5 << 30 and card["n_tensors"] == 272
    assert ms < 1000
    page.screenshot("explorer_sparse_5GiB")


def dequant_rows(path, tensor, rows):
    out = kiln("dequant", path, tensor, "--rows", rows).splitlines()
    vals = []
    for line in out[1:]:
        vals += [np.float32(float(x)) for x in line.split(":", 1)[1].split()]
    return np.array(vals, dtype=np.float32)


def test_weight_preview_equals_kiln_dequant(page, tmp_path):
    open_explorer(page)
    cases = [(GEMMA, "Q4_K"), (GEMMA, "Q6_K"), (GEMMA, "F32"), (GEMMA, "Q5_0"), (GEMMA, "Q8_0"), (SMOLLM2, "Q4_1")]
    for path, type_name in cases:
        if page.js("return kilnExplorer.front && kilnExplorer.front.model") != path.stem:
            page.d.find_element(By.CSS_SELECTOR, f"#server-models button[data-model='{path.stem}']").click()
            page.wait(lambda: page.js("return kilnExplorer.front && kilnExplorer.front.model") == path.stem, 30, "the server model")
        tensors = page.js("return kilnExplorer.front.tensors")
        # The smallest tensor of the type keeps the test quick; its first row(s).
        t = min((t for t in tensors if t["type"] == type_name), key=lambda t: t["bytes"])
        page.js("kilnExplorer.preview = null;")
        page.d.find_element(By.CSS_SELECTOR, f"#tensors tr[data-name='{t['name']}']").click()
        p = page.wait(lambda: page.js("return kilnExplorer.preview"), 60, "the preview of " + t["name"])
        assert p["tensor"] == t["name"] and p["type"] == type_name
        n = len(p["values"])
        assert n == min(256, t["elements"])
        rows = -(-n // t["shape"][0])
        ref = dequant_rows(path, t["name"], rows)[:n]
        got = np.array(p["values"], dtype=np.float64)
        assert np.array_equal(got.astype(np.float32).astype(np.float64), got), "values must be float32 exactly"
        assert np.array_equal(got.astype(np.float32), ref), (t["name"], type_name)
        # The page prints them as kiln dequant does (%.9g).
        printed = [x for line in kiln("dequant", path, t["name"], "--rows", rows).splitlines()[1:] for x in line.split(":", 1)[1].split()][:n]
        shown = page.js("return [...document.querySelectorAll('#preview .values span')].map(s => s.textContent)")
        assert shown == printed, (t["name"], [(a, b) for a, b in zip(shown, printed) if a != b][:5])
        # Statistics over the whole tensor, against kiln dequant's .npy.
        npy = tmp_path / "t.npy"
        subprocess.run([str(kiln_binary()), "dequant", str(path), t["name"], "--npy", str(npy)], check=True, capture_output=True)
        a = np.load(npy).astype(np.float64).ravel()
        assert p["stats"]["min"] == a.min() and p["stats"]["max"] == a.max()
        assert abs(p["stats"]["mean"] - a.mean()) <= 1e-9 * max(1.0, abs(a).max())
        assert abs(p["stats"]["std"] - a.std()) <= 1e-6 * max(1e-12, a.std())
        assert sum(p["histogram"]["counts"]) == a.size
        heat = np.array(p["slice"]["values"], dtype=np.float32)
        full = a.astype(np.float32).reshape(-1, t["shape"][0])
        assert np.array_equal(heat, full[:heat.shape[0], :heat.shape[1]])
        if type_name == "Q4_K":
            page.js("document.getElementById('preview-section').scrollIntoView()")
            page.screenshot("explorer_preview_q4_k")
    # A dropped file's preview says where values come from instead.
    open_local(page, SMOLLM2)
    page.d.find_element(By.CSS_SELECTOR, "#tensors tbody tr").click()
    assert "on the server" in page.d.find_element(By.ID, "preview").text


def test_live_view_top1_equals_greedy_run_and_vocab(page, server):
    prompt = "The capital of France is"
    open_explorer(page)
    page.d.find_element(By.CSS_SELECTOR, f"#server-models button[data-model='{SMOLLM2.stem}']").click()
    page.wait(lambda: page.js("return kilnExplorer.front && kilnExplorer.front.model") == SMOLLM2.stem, 30)
    p = page.d.find_element(By.ID, "live-prompt")
    p.clear()
    p.send_keys(prompt)
    page.d.find_element(By.ID, "live-start").click()
    page.wait(lambda: page.js("return kilnExplorer.live && kilnExplorer.live.steps.length") == 1, 60, "the first step")
    page.d.find_element(By.ID, "live-step10").click()
    page.wait(lambda: page.js("return kilnExplorer.live.steps.length") == 11 and not page.d.find_element(By.ID, "live-start").get_attribute("disabled"),
              120, "ten steps")
    live = page.js("return kilnExplorer.live")
    steps = live["steps"]
    gen = [t for t in live["tokens"] if t["gen"]]
    assert len(gen) == 10
    for i, t in enumerate(gen):
        assert t["id"] == steps[i]["candidates"][0]["id"]  # each step took the top-1
    n_prompt = len(steps[0]["prompt_tokens"])
    for i, s in enumerate(steps):
        assert s["n_past"] == n_prompt + i
        probs = [c["prob"] for c in s["candidates"]]
        assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-9
        assert len(s["layers"]) == 30 and all(l["norm"] > 0 and l["min"] <= l["mean"] <= l["max"] for l in s["layers"])
        assert len(s["attention"]) == 30 and all(len(h) == 9 for h in s["attention"])
        for heads in s["attention"]:
            for h in heads:
                assert 0 <= h["entropy"] <= np.log2(s["n_past"]) + 1e-9
                assert all(0 <= q["pos"] < s["n_past"] for q in h["top"])
                assert sum(q["weight"] for q in h["top"]) <= 1 + 1e-9
    # The same text as greedy `kiln run` (which prints the completion and a newline).
    ids = [t["id"] for t in gen]
    body = json.dumps({"tokens": ids}).encode()
    with urllib.request.urlopen(urllib.request.Request(server.url + "/detokenize", data=body,
                                                       headers={"Content-Type": "application/json"}), timeout=30) as r:
        text = json.loads(r.read())["content"]
    ref = kiln("run", "-m", SMOLLM2, "-p", prompt, "-n", 10, "--temp", 0, "-t", 2)
    assert text == ref[:-1], (text, ref)
    # Hovering a head names the positions it attends to.
    cells = page.d.find_elements(By.CSS_SELECTOR, "#live-attention div:not(.muted)")
    assert len(cells) == 30 * 9
    from selenium.webdriver import ActionChains
    ActionChains(page.d).move_to_element(cells[5]).perform()
    assert "entropy" in page.d.find_element(By.ID, "live-attn-tip").text
    page.screenshot("explorer_live_view")
    # The vocabulary: search, then a token's neighbours.
    q = page.d.find_element(By.ID, "vocab-query")
    q.send_keys("Paris\n")
    page.wait(lambda: page.js("return kilnExplorer.vocab && kilnExplorer.vocab.tokens.length") > 0, 20, "the vocabulary search")
    page.d.find_element(By.CSS_SELECTOR, "#vocab-results button").click()
    page.wait(lambda: page.js("return kilnExplorer.neighbors && kilnExplorer.neighbors.tokens.length") == 20, 30, "neighbours")


def test_cache_view_unloads(page):
    post(page, "/models/load", {"model": GEMMA.stem})
    open_explorer(page)
    row = page.wait(lambda: page.d.find_element(By.CSS_SELECTOR, f"#cache-table tr[data-model='{GEMMA.stem}']"), 20, "the cache row")
    assert "MiB" in row.text
    row.find_element(By.TAG_NAME, "button").click()
    page.wait(lambda: not page.d.find_elements(By.CSS_SELECTOR, f"#cache-table tr[data-model='{GEMMA.stem}']"), 20, "the unload")
    with urllib.request.urlopen(page.base + "/models/cache", timeout=10) as r:
        assert GEMMA.stem not in json.loads(r.read())["models"]


def test_parser_refuses_damaged_files_cleanly(page, tmp_path):
    """Damaged fronts (random byte changes, truncations, impossible counts) give a
    GGUFError naming the problem or parse; never another exception, never a hang."""
    open_explorer(page)
    page.js("""const i = document.createElement('input'); i.type = 'file'; i.id = 'test-src'; i.hidden = true; document.body.append(i);""")
    page.d.find_element(By.ID, "test-src").send_keys(str(SMOLLM2))
    result = page.d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        (async () => {
          const g = await import('/web/gguf.js');
          const file = document.getElementById('test-src').files[0];
          const front = (await g.parseFile(file)).data_offset;
          const head = new Uint8Array(await file.slice(0, front).arrayBuffer());
          let seed = 12345;
          const rnd = n => { seed = (seed * 1103515245 + 12345) >>> 0; return (seed >>> 8) % n; };
          const cases = [];
          const patch = (at, bytes) => { const c = head.slice(); c.set(bytes, at); return c; };
          cases.push(["magic", patch(0, [1, 2, 3, 4])]);
          cases.push(["version", patch(4, [1, 0, 0, 0])]);
          cases.push(["tensor_count", patch(8, [255, 255, 255, 255, 255, 255, 15, 0])]);
          cases.push(["kv_count", patch(16, [255, 255, 255, 255, 0, 0, 0, 0])]);
          for (let i = 0; i < 60; i++) {
            const at = i % 2 ? rnd(8192) : front - 1 - rnd(Math.min(front, 20000));
            cases.push([`byte ${at}`, patch(at, [rnd(256)])]);
          }
          for (let i = 0; i < 30; i++) cases.push([`truncated`, head.slice(0, rnd(front))]);
          const out = { ok: 0, refused: 0, other: [], messages: [] };
          for (const [what, bytes] of cases) {
            const blob = what === "truncated" ? new Blob([bytes]) : new Blob([bytes, file.slice(front)]);
            try { await g.parseFile(blob); out.ok++; }
            catch (e) {
              if (e instanceof g.GGUFError) { out.refused++; if (out.messages.length < 8) out.messages.push(what + ": " + e.message); }
              else out.other.push(what + ": " + e.name + ": " + e.message);
            }
          }
          done(out);
        })().catch(e => done({ other: ["harness: " + e.message] }));
    """)
    print("\n" + "\n".join(result.get("messages", [])))
    assert not result["other"], result["other"]
    assert result["refused"] >= 34  # the four named cases and every truncation at least
    # On the page, a damaged file is a message in the status line, not a broken page.
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 16)
    page.d.find_element(By.ID, "file").send_keys(str(bad))
    page.wait(lambda: "bad.gguf: tensor_count" in page.d.find_element(By.ID, "open-status").text, 10, "the error message")
