"""kiln pull against a fake hub on loopback (conftest.py): the hub cache layout,
resume after a dropped connection, hash and size checks, file choice, errors."""
import hashlib
import json
import os
import pathlib
import subprocess

import pytest

from conftest import COMMIT, kiln_binary

SMOLLM2 = pathlib.Path.home() / ".cache/kiln/models/SmolLM2-135M-Instruct.Q4_1.gguf"


def blob(n, seed):
    out, block = bytearray(), hashlib.sha256(str(seed).encode()).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(b"GGUF" + out[: n - 4])


def pull(hub, tmp_path, *args, check=True, token=None):
    env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(tmp_path / "hub"), KILN_MODELS=str(tmp_path / "kiln"),
               HOME=str(tmp_path))
    env.pop("HF_TOKEN", None)
    if token is not None:
        env["HF_TOKEN"] = token
    r = subprocess.run([kiln_binary(), "pull", *args], env=env, capture_output=True, text=True, timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r, env


def test_pull_into_the_hub_cache_then_run(hub, tmp_path):
    if not SMOLLM2.exists():
        pytest.skip("SmolLM2 is not installed (run ./setup.sh)")
    data = SMOLLM2.read_bytes()
    hub.repos["test/SmolLM2-GGUF"] = {"SmolLM2-135M-Instruct.Q4_1.gguf": data}
    r, env = pull(hub, tmp_path, "hf:test/SmolLM2-GGUF:Q4_1")
    assert r.stdout.strip() == "hf:test/SmolLM2-GGUF/SmolLM2-135M-Instruct.Q4_1.gguf"
    repo = tmp_path / "hub" / "models--test--SmolLM2-GGUF"
    sha = hashlib.sha256(data).hexdigest()
    assert (repo / "blobs" / sha).stat().st_size == len(data)
    link = repo / "snapshots" / COMMIT / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert link.is_symlink() and os.readlink(link) == f"../../blobs/{sha}"
    assert (repo / "refs" / "main").read_text() == COMMIT
    assert not list((repo / "blobs").glob("*.incomplete"))
    # The catalog finds it offline, under the short name too, and it runs.
    run = subprocess.run([kiln_binary(), "run", "-m", "hf:test/SmolLM2-GGUF", "-p", "The capital of France is", "-n", "3",
                          "--temp", "0"], env=dict(env, HF_ENDPOINT="http://127.0.0.1:1"), capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip()
    # Pulled again: nothing is fetched.
    before = len([p for p, _ in hub.requests if "/resolve/" in p])
    r, _ = pull(hub, tmp_path, "hf:test/SmolLM2-GGUF:Q4_1")
    assert "already downloaded" in r.stderr
    assert len([p for p, _ in hub.requests if "/resolve/" in p]) == before


def test_a_dropped_download_resumes_with_a_range(hub, tmp_path):
    data = blob(3 << 20, 1)
    hub.repos["o/r"] = {"m-Q8_0.gguf": data}
    hub.drop_after = 1 << 20
    r, _ = pull(hub, tmp_path, "hf:o/r", check=False)
    assert r.returncode == 1
    assert "the download stopped after" in r.stderr and "kiln pull again resumes it" in r.stderr, r.stderr
    sha = hashlib.sha256(data).hexdigest()
    part = tmp_path / "hub" / "models--o--r" / "blobs" / (sha + ".incomplete")
    assert part.exists() and 0 < part.stat().st_size < len(data)
    have = part.stat().st_size
    assert not (tmp_path / "hub" / "models--o--r" / "snapshots" / COMMIT / "m-Q8_0.gguf").exists()
    r, _ = pull(hub, tmp_path, "hf:o/r")
    assert hub.requests[-1][1] == f"bytes={have}-"
    assert (tmp_path / "hub" / "models--o--r" / "snapshots" / COMMIT / "m-Q8_0.gguf").read_bytes() == data
    assert not part.exists()


def test_a_wrong_hash_is_refused_and_the_file_removed(hub, tmp_path):
    hub.repos["o/r"] = {"m-Q8_0.gguf": blob(100000, 2)}
    hub.wrong_hash.add("m-Q8_0.gguf")
    r, _ = pull(hub, tmp_path, "hf:o/r", check=False)
    assert r.returncode == 1
    assert "SHA-256 " + hashlib.sha256(hub.repos["o/r"]["m-Q8_0.gguf"]).hexdigest() + ", expected " + "0" * 64 in r.stderr
    assert not list((tmp_path / "hub" / "models--o--r" / "blobs").iterdir())
    assert not (tmp_path / "hub" / "models--o--r" / "snapshots").exists()


def test_which_file_a_name_picks(hub, tmp_path):
    hub.repos["o/multi"] = {"m-Q4_K_M.gguf": blob(1000, 3), "m-Q8_0.gguf": blob(1000, 4), "mmproj-m-f16.gguf": blob(1000, 5),
                            "big/big-Q4_K_M-00001-of-00002.gguf": blob(1000, 6),
                            "big/big-Q4_K_M-00002-of-00002.gguf": blob(1000, 7)}
    r, _ = pull(hub, tmp_path, "hf:o/multi:q8_0")
    assert r.stdout.strip() == "hf:o/multi/m-Q8_0.gguf"
    r, _ = pull(hub, tmp_path, "hf:o/multi/big/big-Q4_K_M-00001-of-00002.gguf")
    snap = tmp_path / "hub" / "models--o--multi" / "snapshots" / COMMIT / "big"
    assert sorted(p.name for p in snap.iterdir()) == ["big-Q4_K_M-00001-of-00002.gguf", "big-Q4_K_M-00002-of-00002.gguf"]
    # Without a quantization two Q4_K_M models match (a file and a split set): named by the error.
    r, _ = pull(hub, tmp_path, "hf:o/multi", check=False)
    assert r.returncode == 1 and "several GGUF files match" in r.stderr, r.stderr
    r, _ = pull(hub, tmp_path, "hf:o/multi:Q5_K", check=False)
    assert r.returncode == 1
    assert "no GGUF file of quantization Q5_K in the repository (it has " in r.stderr, r.stderr


def test_errors_name_what_went_wrong(hub, tmp_path):
    r, _ = pull(hub, tmp_path, "hf:nobody/nothing", check=False)
    assert r.returncode == 1 and "not found on " + hub.url + " (404)" in r.stderr, r.stderr
    env = dict(os.environ, HF_ENDPOINT="http://127.0.0.1:1", HF_HUB_CACHE=str(tmp_path / "hub"))
    r = subprocess.run([kiln_binary(), "pull", "hf:o/r"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "cannot reach http://127.0.0.1:1" in r.stderr and "offline?" in r.stderr, r.stderr
    for bad in ["hf:o", "hf:o/../x", "ftp://x/y.gguf", "model.bin"]:
        r, _ = pull(hub, tmp_path, bad, check=False)
        assert r.returncode == 1 and r.stderr.startswith("kiln pull: "), (bad, r.stderr)


def test_a_url_download_into_the_kiln_folder(hub, tmp_path):
    data = blob(50000, 8)
    hub.repos["o/r"] = {"tiny.gguf": data}
    url = f"{hub.url}/o/r/resolve/{COMMIT}/tiny.gguf"
    r, _ = pull(hub, tmp_path, url, "--sha256", "f" * 64, check=False)
    assert r.returncode == 1 and "expected " + "f" * 64 in r.stderr, r.stderr
    assert not (tmp_path / "kiln" / "tiny.gguf").exists() and not (tmp_path / "kiln" / "tiny.gguf.part").exists()
    r, _ = pull(hub, tmp_path, url, "--sha256", hashlib.sha256(data).hexdigest())
    assert r.stdout.strip() == "tiny"
    assert (tmp_path / "kiln" / "tiny.gguf").read_bytes() == data


def test_a_gated_repository_needs_hf_token(hub, tmp_path):
    data = blob(20000, 9)
    hub.repos["o/gated"] = {"m-Q8_0.gguf": data}
    hub.gated["o/gated"] = "hf_right"
    r, _ = pull(hub, tmp_path, "hf:o/gated", check=False)
    assert r.returncode == 1 and "401" in r.stderr and "needs HF_TOKEN" in r.stderr, r.stderr
    r, _ = pull(hub, tmp_path, "hf:o/gated", check=False, token="hf_wrong")
    assert r.returncode == 1 and "HF_TOKEN was refused" in r.stderr, r.stderr
    r, _ = pull(hub, tmp_path, "hf:o/gated", token="hf_right")
    assert (tmp_path / "hub" / "models--o--gated" / "snapshots" / COMMIT / "m-Q8_0.gguf").read_bytes() == data
    # The token went with both the revision request and the file request.
    sent = [a for p, a in hub.authorizations[-2:]]
    assert sent == ["Bearer hf_right", "Bearer hf_right"], hub.authorizations
