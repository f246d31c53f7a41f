"""`kiln vocab --find / --neighbors` and the explorer's /explore/vocab give the same tokens."""
import json
import subprocess

from conftest import SMOLLM2, kiln_binary
from test_static import post


def kiln_vocab(*args):
    out = subprocess.run([str(kiln_binary()), "vocab", "-m", str(SMOLLM2), "--json", *args], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def test_find_and_neighbors_match_the_cli(server):
    cli = kiln_vocab("--find", "Paris", "--limit", "20")
    assert cli and all("paris" in t["piece"].lower() for t in cli)
    status, r = post(server, "/explore/vocab", {"model": SMOLLM2.stem, "find": "Paris", "limit": 20})
    assert status == 200 and [t["id"] for t in r["tokens"]] == [t["id"] for t in cli]
    exact = next(t for t in cli if t["piece"] in ("Paris", " Paris"))
    nb = kiln_vocab("--neighbors", str(exact["id"]), "-k", "10")
    assert len(nb) == 10 and all(-1 <= t["similarity"] <= 1 for t in nb)
    assert nb == sorted(nb, key=lambda t: (-t["similarity"], t["id"]))
    status, r = post(server, "/explore/vocab", {"model": SMOLLM2.stem, "neighbors": exact["id"], "k": 10})
    assert [t["id"] for t in r["tokens"]] == [t["id"] for t in nb]
    for a, b in zip(r["tokens"], nb):
        assert abs(a["similarity"] - b["similarity"]) < 1e-9


def test_cli_errors_name_the_problem():
    r = subprocess.run([str(kiln_binary()), "vocab", "-m", str(SMOLLM2), "--neighbors", "99999999"], capture_output=True, text=True)
    assert r.returncode == 1 and "outside the vocabulary" in r.stderr
    r = subprocess.run([str(kiln_binary()), "vocab", "-m", str(SMOLLM2), "--neighbors", "no-such-token-text"], capture_output=True, text=True)
    assert r.returncode == 1 and "no token has exactly this text" in r.stderr
