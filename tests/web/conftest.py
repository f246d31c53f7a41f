"""Browser tests of the web UI: a real `kiln serve` (tests/server/conftest.py's
KilnServer) and Debian's chromium, headless, through chromium-driver + Selenium.

Every test's page is watched: a console error or a failed request (an HTTP
status >= 400 or a network failure) fails the test, and each test saves a
screenshot in $KILN_WEB_SCREENSHOTS (default build/web-screenshots).
"""
import importlib.util
import json
import os
import pathlib
import time

import pytest

HERE = pathlib.Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("server_conftest", HERE.parent / "server" / "conftest.py")
server_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(server_conftest)
KilnServer = server_conftest.KilnServer
ROOT = server_conftest.ROOT
MODELS = server_conftest.MODELS
SMOLLM2 = server_conftest.SMOLLM2
GEMMA = MODELS / "gemma-3-270m-q4_k_m.gguf"
TEMPLATES = ROOT / "tests" / "data" / "shared" / "templates"
require = server_conftest.require
kiln_binary = server_conftest.kiln_binary
SHOTS = pathlib.Path(os.environ.get("KILN_WEB_SCREENSHOTS", ROOT / "build" / "web-screenshots"))

os.environ["SE_AVOID_STATS"] = "true"  # Selenium's manager must not try the network


@pytest.fixture(scope="session")
def server():
    """SmolLM2 (default) and Gemma 3 on one server."""
    require(GEMMA.exists(), f"model not installed: {GEMMA} (run ./setup.sh)")
    s = KilnServer("-m", str(GEMMA), "--parallel", "2", ctx=2048)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def driver():
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900",
              "--no-first-run", "--disable-extensions", "--disable-background-networking", "--disable-sync",
              "--disable-component-update", "--disable-default-apps", "--metrics-recording-only"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    d.set_script_timeout(60)
    yield d
    d.quit()


class Page:
    """The browser, for one test: problems seen on the page are collected."""

    def __init__(self, driver, base):
        self.d = driver
        self.base = base
        self.allow_aborted = False  # a stopped stream cancels its request on purpose
        self.allowed_failures = []  # URL parts whose error statuses a test provokes on purpose
        self.drain()

    def drain(self):
        self.d.get_log("browser")
        self.d.get_log("performance")

    def open(self, path):
        self.d.get(self.base + path)
        self.wait(lambda: self.js("return document.readyState") == "complete")

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def record(self, name, expr):
        """Records the first truthy value of the JS expression `expr` as the page
        changes (a MutationObserver runs after every DOM update), so a state that
        lasts less than wait()'s poll interval (a short reply streamed in a few
        milliseconds) is still seen; read it with seen(name)."""
        self.js("""window.__seen = window.__seen || {}; const name = arguments[0], expr = arguments[1];
                   const check = new Function('try { return (' + expr + '); } catch (e) { return null; }');
                   new MutationObserver(() => { if (!window.__seen[name]) { const v = check(); if (v) window.__seen[name] = v; } })
                     .observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});""",
                name, expr)

    def seen(self, name, timeout=60, what="condition"):
        return self.wait(lambda: self.js("return (window.__seen || {})[arguments[0]]", name), timeout, what)

    def wait(self, cond, timeout=60, what="condition"):
        end = time.time() + timeout
        last = None
        while time.time() < end:
            try:
                v = cond()
                if v:
                    return v
            except Exception as e:  # the page may be between states
                last = e
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last})" if last else ""))

    def problems(self):
        out = []
        def allowed(text):
            return any(a in text for a in self.allowed_failures)
        for e in self.d.get_log("browser"):
            if e["level"] == "SEVERE" and not (allowed(e["message"]) and "Failed to load resource" in e["message"]):
                out.append("console: " + e["message"])
        for e in self.d.get_log("performance"):
            m = json.loads(e["message"])["message"]
            p = m.get("params", {})
            if m["method"] == "Network.responseReceived" and p["response"]["status"] >= 400 and not allowed(p["response"]["url"]):
                out.append(f"request failed: {p['response']['status']} {p['response']['url']}")
            if m["method"] == "Network.loadingFailed" and not (self.allow_aborted and p.get("canceled")):
                out.append(f"request failed: {p.get('errorText')} ({p.get('type')})")
        return out

    def screenshot(self, name):
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.d.save_screenshot(str(SHOTS / f"{name}.png"))


@pytest.fixture
def make_page(request, driver):
    """make_page(server) -> a Page on that server; checked and photographed at the end."""
    pages = []

    def make(srv):
        driver.set_window_size(1280, 900)
        p = Page(driver, srv.url)
        pages.append(p)
        return p

    yield make
    for p in pages:
        p.screenshot(request.node.name)
        problems = p.problems()
        assert not problems, "the page had problems:\n" + "\n".join(problems)


@pytest.fixture
def page(make_page, server):
    return make_page(server)
