"""Test helpers of the zoo: a hub-compatible HTTP server (127.0.0.1, in memory, never the network).

It answers only the calls huggingface_hub makes to create a repository, upload a folder
(preupload in "regular" mode, so no LFS/Xet, then an ndjson commit) and download files
(``HEAD``/``GET /{repo}/resolve/{revision}/{path}`` with ``X-Repo-Commit``, ``ETag`` and
``Content-Length``), plus ``model_info`` and the README metadata check (``validate-yaml``).
Requests are logged in ``server.calls``. And a quiet ``Trainer`` factory.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml


@dataclass
class Repo:
    files: dict[str, bytes] = field(default_factory=dict)
    sha: str = "0" * 40


class HubState:
    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.calls: list[tuple[str, str]] = []
        self.lock = threading.Lock()


_API = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/(?P<op>preupload|commit)/(?P<rev>[^/?]+)")
_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+?)(?:/revision/(?P<rev>[^/?]+))?/?$")
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")


def _handler(state: HubState, endpoint: list[str]):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _body(self) -> bytes:
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def _send(self, code: int, payload: bytes = b"", headers: dict | None = None,
                  head: bool = False) -> None:
            self.send_response(code)
            headers = {"Content-Type": "application/json", **(headers or {})}
            headers.setdefault("Content-Length", str(len(payload)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if not head:
                self.wfile.write(payload)

        def _json(self, code: int, obj) -> None:
            self._send(code, json.dumps(obj).encode())

        def _error(self, code: int, error_code: str, message: str, head: bool = False) -> None:
            self._send(code, json.dumps({"error": message}).encode(),
                       {"X-Error-Code": error_code, "X-Error-Message": message}, head=head)

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            path = self.path.split("?")[0]
            state.calls.append(("POST", path))
            body = self._body()
            if path == "/api/repos/create":
                req = json.loads(body or b"{}")
                repo_id = f"{req.get('organization') or 'user'}/{req['name']}"
                with state.lock:
                    state.repos.setdefault(repo_id, Repo())
                return self._json(200, {"url": f"{endpoint[0]}/{repo_id}", "name": repo_id})
            if path == "/api/validate-yaml":  # the README's metadata, checked before upload
                content = json.loads(body)["content"]
                try:
                    meta = yaml.safe_load(content.split("---")[1])
                    assert isinstance(meta, dict)
                except Exception as err:  # noqa: BLE001 - any parse failure is a 400
                    return self._json(400, {"errors": [{"message": str(err)}]})
                return self._json(200, {"errors": [], "warnings": []})
            m = _API.match(path)
            if not m or m["repo"] not in state.repos:
                return self._error(404, "RepoNotFound", f"no repository at {path}")
            repo = state.repos[m["repo"]]
            if m["op"] == "preupload":
                files = json.loads(body)["files"]
                return self._json(200, {"files": [
                    {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                    for f in files]})
            with state.lock:  # commit: ndjson header + one line per operation
                for line in body.splitlines():
                    item = json.loads(line)
                    if item["key"] == "file":
                        v = item["value"]
                        repo.files[v["path"]] = base64.b64decode(v["content"])
                    elif item["key"] == "deletedFile":
                        repo.files.pop(item["value"]["path"], None)
                    elif item["key"] != "header":
                        return self._error(400, "BadRequest", f"unsupported {item['key']}")
                digest = hashlib.sha1(repr(sorted(repo.files.items())).encode()).hexdigest()
                repo.sha = digest
            return self._json(200, {"commitUrl": f"{endpoint[0]}/{m['repo']}/commit/{repo.sha}",
                                    "commitOid": repo.sha, "pullRequestUrl": None})

        def _resolve(self, head: bool) -> None:
            path = self.path.split("?")[0]
            state.calls.append(("HEAD" if head else "GET", path))
            m = _RESOLVE.match(path)
            if m:
                repo = state.repos.get(m["repo"])
                if repo is None:
                    return self._error(404, "RepoNotFound", "no such repository", head)
                data = repo.files.get(m["path"])
                if data is None:
                    return self._error(404, "EntryNotFound", "no such file", head)
                etag = hashlib.sha1(data).hexdigest()
                return self._send(200, data, {
                    "Content-Type": "application/octet-stream", "X-Repo-Commit": repo.sha,
                    "ETag": f'"{etag}"', "Content-Length": str(len(data)),
                }, head=head)
            m = _INFO.match(path)
            if m and m["repo"] in state.repos:
                repo = state.repos[m["repo"]]
                return self._json(200, {
                    "id": m["repo"], "modelId": m["repo"], "sha": repo.sha, "private": False,
                    "siblings": [{"rfilename": f} for f in sorted(repo.files)],
                })
            return self._error(404, "RepoNotFound", f"nothing at {path}", head)

        def do_GET(self) -> None:  # noqa: N802
            self._resolve(head=False)

        def do_HEAD(self) -> None:  # noqa: N802
            self._resolve(head=True)

    return Handler


class HubServer:
    """``with HubServer() as hub: hub.endpoint`` — a hub on 127.0.0.1 (a free port)."""

    def __init__(self) -> None:
        self.state = HubState()
        self._endpoint: list[str] = [""]
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state, self._endpoint))
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._endpoint[0] = self.endpoint
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def quiet_trainer(root, **kw):
    """A Trainer without logger, checkpoints, progress bar or summary, writing under ``root``."""
    import lightning as L

    defaults = dict(max_epochs=4, logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False,
                    default_root_dir=root)
    defaults.update(kw)
    return L.Trainer(**defaults)
