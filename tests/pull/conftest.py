"""A fake Hugging Face hub on loopback for kiln pull: the revision API
(/api/models/OWNER/REPO/revision/REV?blobs=true) and the file route
(/OWNER/REPO/resolve/COMMIT/FILE, with HTTP ranges), serving files from a
folder. Modes make it drop a connection mid-file, list a wrong hash, or answer
401 for a gated repository unless the request carries its bearer token."""
import hashlib
import http.server
import json
import os
import pathlib
import threading

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def kiln_binary():
    return os.environ.get("KILN_BINARY", str(ROOT / "build" / "kiln"))


class Hub:
    def __init__(self, repos):
        self.repos = repos  # "owner/repo" -> {relname: bytes}
        self.drop_after = None  # bytes after which the next file response is cut (once)
        self.wrong_hash = set()  # relnames listed with a wrong sha256
        self.requests = []  # (path, Range header)
        self.gated = {}  # "owner/repo" -> the token both routes require (401 without it)
        self.authorizations = []  # (path, Authorization header)
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                hub.requests.append((self.path, self.headers.get("Range")))
                hub.authorizations.append((self.path, self.headers.get("Authorization")))
                parts = self.path.split("?")[0].strip("/").split("/")
                repo = "/".join(parts[2:4]) if parts[:2] == ["api", "models"] else "/".join(parts[:2])
                if repo in hub.gated and self.headers.get("Authorization") != "Bearer " + hub.gated[repo]:
                    return self.send(401, b'{"error": "Access to this repository is restricted"}')
                if parts[:2] == ["api", "models"] and len(parts) == 6 and parts[4] == "revision":
                    return self.revision("/".join(parts[2:4]))
                if len(parts) >= 5 and parts[2] == "resolve" and parts[3] == COMMIT:
                    return self.file("/".join(parts[:2]), "/".join(parts[4:]))
                self.send(404, b'{"error": "not found"}')

            def send(self, status, body, headers=()):
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def revision(self, repo):
                files = hub.repos.get(repo)
                if files is None:
                    return self.send(404, b'{"error": "Repository not found"}')
                siblings = []
                for rel, data in files.items():
                    sha = hashlib.sha256(data).hexdigest()
                    if rel in hub.wrong_hash:
                        sha = "0" * 64
                    siblings.append({"rfilename": rel, "size": len(data), "lfs": {"sha256": sha, "size": len(data)}})
                siblings.append({"rfilename": "README.md", "size": 5})
                self.send(200, json.dumps({"id": repo, "sha": COMMIT, "siblings": siblings}).encode())

            def file(self, repo, rel):
                data = hub.repos.get(repo, {}).get(rel)
                if data is None:
                    return self.send(404, b"Entry not found")
                start = 0
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes="):
                    start = int(rng[6:].split("-")[0])
                if start >= len(data) and data:
                    return self.send(416, b"")
                body = data[start:]
                status = 206 if rng else 200
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                if rng:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.end_headers()
                if hub.drop_after is not None:
                    cut, hub.drop_after = hub.drop_after, None
                    self.wfile.write(body[:cut])
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hub():
    h = Hub({})
    yield h
    h.stop()
