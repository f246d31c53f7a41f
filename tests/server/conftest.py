"""Fixtures for the server tests: a real `kiln serve` on a free loopback port.

The kiln binary comes from $KILN_BINARY (ctest sets it), the models from
$KILN_MODELS (default ~/.cache/kiln/models, where setup.sh links them). Without
the model the tests skip with the reason, unless KILN_TESTS_REQUIRE_DATA=1.
"""
import os
import pathlib
import re
import subprocess
import threading
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = pathlib.Path(os.environ.get("KILN_MODELS", pathlib.Path.home() / ".cache" / "kiln" / "models"))
SMOLLM2 = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
QWEN_TEMPLATE = ROOT / "tests" / "data" / "shared" / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"


def kiln_binary():
    b = os.environ.get("KILN_BINARY")
    if b:
        return pathlib.Path(b)
    return ROOT / "build" / "kiln"


def require(condition, reason):
    if condition:
        return
    if os.environ.get("KILN_TESTS_REQUIRE_DATA") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


class KilnServer:
    """One `kiln serve` process; stopped (SIGTERM, then SIGKILL) by stop()."""

    def __init__(self, *args, model=SMOLLM2, ctx=2048, env=None):
        """model: a path (checked to exist), or None to pass only args' -m; env: more environment variables."""
        require(kiln_binary().exists(), f"no kiln binary at {kiln_binary()} (build it, or set KILN_BINARY)")
        if model is not None:
            require(model.exists(), f"model not installed: {model} (run ./setup.sh)")
        cmd = [str(kiln_binary()), "serve", *(["-m", str(model)] if model is not None else []), "--host", "127.0.0.1",
               "--port", "0", "-t", "2", "-c", str(ctx), *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **(env or {})))
        self.log = []
        self.port = None
        port_found = threading.Event()

        def read_stderr():
            for line in self.proc.stderr:
                self.log.append(line.rstrip("\n"))
                m = re.search(r"listening on http://[^:]+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    port_found.set()

        self.reader = threading.Thread(target=read_stderr, daemon=True)
        self.reader.start()
        for _ in range(300):
            if port_found.wait(0.1) or self.proc.poll() is not None:
                break
        if not port_found.is_set():
            self.stop()
            raise RuntimeError("kiln serve did not start:\n" + "\n".join(self.log))
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except Exception:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("kiln serve exited:\n" + "\n".join(self.log))
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("kiln serve did not become healthy:\n" + "\n".join(self.log))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="session")
def server():
    s = KilnServer("--parallel", "4")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def client(server):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="session")
def model_id(client):
    return client.models.list().data[0].id


@pytest.fixture(scope="session")
def tool_client():
    """A server with the Qwen 2.5 template (tagged JSON tool calls in ChatML turns,
    which match SmolLM2's vocabulary): neither real model has a tool template."""
    openai = pytest.importorskip("openai")
    s = KilnServer("--chat-template-file", str(QWEN_TEMPLATE), "--parallel", "2")
    yield openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    s.stop()
