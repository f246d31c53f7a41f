"""The embedded assets over HTTP: content types, gzip only when accepted, ETags and
304s, a favicon, and no API key needed for them; the explorer's model routes
refuse anything that is not a listed model's name."""
import gzip
import json
import urllib.error
import urllib.request

import pytest

from conftest import SMOLLM2, KilnServer


def fetch(url, headers=None, data=None):
    req = urllib.request.Request(url, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


ASSETS = {
    "/": "text/html; charset=utf-8",
    "/explore": "text/html; charset=utf-8",
    "/web/chat.js": "text/javascript; charset=utf-8",
    "/web/style.css": "text/css; charset=utf-8",
    "/favicon.ico": "image/svg+xml",
    "/favicon.svg": "image/svg+xml",
    "/vendor/marked.min.js": "text/javascript; charset=utf-8",
    "/vendor/katex/katex.min.css": "text/css; charset=utf-8",
    "/vendor/katex/fonts/KaTeX_Main-Regular.woff2": "font/woff2",
}


@pytest.mark.parametrize("path", list(ASSETS))
def test_asset_encodings_and_etag(server, path):
    status, h, plain = fetch(server.url + path)
    assert status == 200
    assert h["Content-Type"] == ASSETS[path]
    assert "Content-Encoding" not in h  # no Accept-Encoding: the plain bytes
    assert h["Vary"] == "Accept-Encoding"
    etag = h["ETag"]
    status, hz, body = fetch(server.url + path, {"Accept-Encoding": "gzip, deflate, br"})
    assert status == 200 and hz["Content-Encoding"] == "gzip"
    assert gzip.decompress(body) == plain
    assert hz["ETag"] != etag  # two representations, two ETags
    # Refused gzip (q=0) and an unknown coding give the plain bytes, never a 415.
    for ae in ("gzip;q=0", "identity", "zstd", "*;q=0"):
        status, h2, body2 = fetch(server.url + path, {"Accept-Encoding": ae})
        assert status == 200 and "Content-Encoding" not in h2 and body2 == plain, ae
    status, h3, body3 = fetch(server.url + path, {"If-None-Match": etag})
    assert status == 304 and body3 == b""
    status, _, _ = fetch(server.url + path, {"If-None-Match": hz["ETag"], "Accept-Encoding": "gzip"})
    assert status == 304
    status, _, _ = fetch(server.url + path, {"If-None-Match": '"something-else"'})
    assert status == 200


def test_assets_need_no_key_but_the_api_does():
    s = KilnServer("--api-key", "sekrit", "--parallel", "1")
    try:
        for path in ("/", "/explore", "/web/explore.js", "/favicon.ico"):
            assert fetch(s.url + path)[0] == 200, path
        assert fetch(s.url + "/v1/models")[0] == 401
        assert fetch(s.url + "/explore/models")[0] == 401
        assert fetch(s.url + "/explore/models", {"Authorization": "Bearer sekrit"})[0] == 200
    finally:
        s.stop()


def post(server, path, body):
    """POST JSON to a KilnServer or a Page (its server)."""
    base = server.url if hasattr(server, "url") else server.base
    status, _, data = fetch(base + path, {"Content-Type": "application/json"}, json.dumps(body).encode())
    return status, json.loads(data)


def test_explorer_opens_only_listed_models(server):
    status, r = post(server, "/explore/open", {"model": SMOLLM2.stem})
    assert status == 200 and len(r["tensors"]) == 272
    status, r = post(server, "/explore/open", {"model": SMOLLM2.name})  # the file name works too
    assert status == 200
    tricks = ["../" + SMOLLM2.name, "/etc/passwd", "..", ".", "../../../../etc/passwd", str(SMOLLM2),
              SMOLLM2.name + "/../" + SMOLLM2.name, "..\\" + SMOLLM2.name, "%2e%2e%2f" + SMOLLM2.name,
              "passwd", SMOLLM2.stem + "\u0000", ""]
    for name in tricks:
        for route, extra in (("/explore/open", {}), ("/explore/tensor", {"tensor": "output_norm.weight"}),
                             ("/explore/array", {"key": "tokenizer.ggml.tokens"}), ("/explore/vocab", {"find": "a"})):
            status, r = post(server, route, {"model": name, **extra})
            assert status in (400, 404), (route, name, status)
            assert "error" in r
    status, r = post(server, "/explore/open", {"model": 5})
    assert status == 400


def test_metadata_array_pages(server):
    status, r = post(server, "/explore/array", {"model": SMOLLM2.stem, "key": "tokenizer.ggml.tokens", "offset": 1000, "count": 5})
    assert status == 200 and r["count"] == 49152 and len(r["values"]) == 5
    status, tok = post(server, "/explore/vocab", {"model": SMOLLM2.stem, "id": 1000})
    assert tok["tokens"][0]["text"] == r["values"][0]
    status, r = post(server, "/explore/array", {"model": SMOLLM2.stem, "key": "general.name"})
    assert status == 400
    status, r = post(server, "/explore/array", {"model": SMOLLM2.stem, "key": "no.such.key"})
    assert status == 404


def test_models_folder_is_listed_and_nothing_beside_it(tmp_path):
    """A --models folder's .gguf files can be opened by name; a file next to the
    folder, or reached through it with '..', cannot."""
    from conftest import GEMMA
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "linked.gguf").symlink_to(GEMMA)
    (tmp_path / "outside.gguf").symlink_to(GEMMA)
    s = KilnServer("--models", str(folder), "--parallel", "1")
    try:
        status, r = post(s, "/explore/open", {"model": "linked"})
        assert status == 200 and r["file"] == "linked.gguf" and len(r["tensors"]) == 236
        for name in ("outside", "outside.gguf", "../outside.gguf", "models/../outside", str(tmp_path / "outside.gguf")):
            status, r = post(s, "/explore/open", {"model": name})
            assert status in (400, 404), name
        status, _, body = fetch(s.url + "/explore/models")
        names = [m["name"] for m in json.loads(body)["models"]]
        assert "linked" in names and "outside" not in names
    finally:
        s.stop()
