"""Every python/bash block of README.md and docs/*.md runs in the suite (issue 28, item 2).

Each block is preceded by an HTML comment (invisible in the rendered docs) that says how:

* ``<!-- runnable -->``: the block runs as written.
* a multi-line ``<!-- runnable`` comment with directives, one a line, closed by ``-->``:

  - ``sub: OLD => NEW``: replace the literal ``OLD`` by ``NEW`` before running (small
    settings: fewer epochs, fewer seeds). ``OLD`` must occur, so a stale directive fails.
  - ``prelude: CODE``: a line run before the block (names a fragment assumes, e.g. ``model``).
  - ``# ...``: a comment, e.g. why a line is replaced.
  - ``continue``: run the previous block of the same file (with its directives) first: for a
    fragment that goes on from it.
* ``<!-- not-runnable: REASON -->``: the block cannot run offline or in a test (it installs
  from the network, spans several machines, or is a benchmark of hours that writes the
  committed results). Keep these few; the reason is required.

An unmarked python/bash block fails the suite, so a new example is either run or excused.

Blocks run in a fresh temporary folder holding links to the repository's ``zoo/`` and
``examples/``, with ``$DPGNN_DATA`` (the shared datasets; ``../shared/datasets`` in a block is
replaced by it) and the session's ``$DPGNN_CACHE``. Python blocks run in this process (a fresh
namespace), which keeps the suite's time down. Bash blocks run in ``bash -euo pipefail``; the
``dpgnn`` they call is a thin client that hands its arguments, folder and environment to this
process, which runs :func:`lightning_dpgnn.cli.main` (no fresh interpreter importing Lightning
per command). ``python`` is the interpreter running the tests; ``$DPGNN_DOCS_REPO`` is the
repository (for a block that builds the docs). A bash line's ``# writes PATH``
comment is checked too: the block must leave that file behind.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import textwrap
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNNABLE = "<!-- runnable"
NOT_RUNNABLE = re.compile(r"^<!-- not-runnable: (?P<reason>\S.*?) -->$")
FENCE = re.compile(r"^```(python|bash)\b")
LINKED = ("zoo", "examples")


@dataclass
class Block:
    file: str
    line: int
    lang: str
    code: str
    subs: list[tuple[str, str]] = field(default_factory=list)
    prelude: list[str] = field(default_factory=list)
    previous: Block | None = None
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"

    def source(self, data: str) -> str:
        code = self.code
        for old, new in self.subs:
            if old not in code:
                raise AssertionError(f"{self.id}: `sub: {old} => ...` does not occur in the block")
            code = code.replace(old, new)
        code = "\n".join([*self.prelude, code])
        code = code.replace("../../shared/datasets", data).replace("../shared/datasets", data)
        if self.previous is not None:
            code = self.previous.source(data) + "\n" + code
        return code


def _marker(lines: list[str], fence: int, path: Path) -> tuple[list[str] | None, str | None]:
    """The directives of the comment right above line ``fence`` (``None``: no marker), or the
    reason of a ``not-runnable`` one."""
    i = fence - 1
    if i < 0:
        return None, None
    last = lines[i].strip()
    skip = NOT_RUNNABLE.match(last)
    if skip:
        return [], skip["reason"]
    if last == "<!-- runnable -->":
        return [], None
    if last != "-->":
        return None, None
    start = i - 1
    while start >= 0 and not lines[start].strip().startswith("<!--"):
        start -= 1
    if start < 0 or lines[start].strip() != RUNNABLE:
        return None, None
    return [ln.strip() for ln in lines[start + 1 : i] if ln.strip()], None


def doc_blocks() -> list[Block]:
    """Every python/bash block of README.md and docs/*.md, with its marker."""
    blocks: list[Block] = []
    unmarked: list[str] = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        lines = path.read_text().splitlines()
        previous: Block | None = None
        for i, line in enumerate(lines):
            m = FENCE.match(line.strip())
            if not m:
                continue
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            name = path.relative_to(REPO).as_posix()
            body = textwrap.dedent("\n".join(lines[i + 1 : end]))  # a block in a list item
            block = Block(name, i + 2, m[1], body + "\n")
            directives, block.skip = _marker(lines, i, path)
            if directives is None:
                unmarked.append(f"{name}:{i + 1}")
                continue
            for d in directives:
                if d.startswith("#"):  # a comment: why the directives are there
                    continue
                if d.startswith("sub:"):
                    old, sep, new = d[4:].partition("=>")
                    if not sep:
                        raise ValueError(f"{name}:{i + 1}: `sub: OLD => NEW`, got {d!r}")
                    block.subs.append((old.strip(), new.strip()))
                elif d.startswith("prelude:"):
                    block.prelude.append(d[8:].strip())
                elif d == "continue":
                    if previous is None:
                        raise ValueError(f"{name}:{i + 1}: `continue` needs a block before it")
                    block.previous = previous
                else:
                    raise ValueError(f"{name}:{i + 1}: unknown directive {d!r}")
            blocks.append(block)
            if block.skip is None:
                previous = block
    if unmarked:
        raise ValueError(
            "blocks without <!-- runnable --> or <!-- not-runnable: reason -->: "
            + ", ".join(unmarked)
        )
    return blocks


BLOCKS = doc_blocks()
RUN = [b for b in BLOCKS if b.skip is None]


def test_every_block_is_run_or_excused_and_few_are_excused():
    assert {b.file for b in RUN} >= {"README.md", "docs/index.md", "docs/lpgnn.md"}
    skipped = [b for b in BLOCKS if b.skip]
    assert len(skipped) <= 12, [b.id for b in skipped]


def _folder(tmp_path: Path) -> Path:
    tmp_path.mkdir()
    for name in LINKED:
        (tmp_path / name).symlink_to(REPO / name)
    return tmp_path


@contextlib.contextmanager
def _in(folder: Path, env: dict[str, str]):
    old_cwd, old_env, old_argv = os.getcwd(), dict(os.environ), list(sys.argv)
    os.chdir(folder)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)
        sys.argv = old_argv


def _run_python(code: str, folder: Path, env: dict[str, str], name: str) -> None:
    import torch

    threads = torch.get_num_threads()
    with _in(folder, env):
        try:
            exec(compile(code, name, "exec"), {"__name__": "__main__"})
        finally:
            torch.set_num_threads(threads)


def _serve_dpgnn(request: dict) -> tuple[int, str]:
    """Run one ``dpgnn`` command of a bash block in this process; its exit status and output."""
    from lightning_dpgnn.cli import main

    out = io.StringIO()
    rc = 0
    with _in(Path(request["cwd"]), request["env"]):
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            sys.argv = ["dpgnn", *request["argv"]]
            try:
                main(request["argv"])
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if isinstance(e.code, str):
                    print(e.code, file=sys.stderr)
            except BaseException:  # noqa: BLE001 - reported to the block as a failed command
                traceback.print_exc()
                rc = 1
    return rc, out.getvalue()


CLIENT = '''#!{python}
import json, os, sys, time, uuid
spool = os.environ["DPGNN_DOCS_SPOOL"]
key = uuid.uuid4().hex
req = {{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}
tmp = os.path.join(spool, key + ".tmp")
with open(tmp, "w") as f:
    json.dump(req, f)
os.replace(tmp, os.path.join(spool, key + ".req"))
resp = os.path.join(spool, key + ".resp")
while not os.path.exists(resp):
    time.sleep(0.01)
with open(resp) as f:
    rc, out = json.load(f)
sys.stdout.write(out)
sys.exit(rc)
'''


def _run_bash(code: str, folder: Path, env: dict[str, str], tmp_path: Path) -> tuple[int, str]:
    spool = tmp_path.parent / f"{tmp_path.name}-spool"
    bin_dir = tmp_path.parent / f"{tmp_path.name}-bin"
    spool.mkdir()
    bin_dir.mkdir()
    client = bin_dir / "dpgnn"
    client.write_text(CLIENT.format(python=sys.executable))
    client.chmod(0o755)
    env = {**env, "DPGNN_DOCS_SPOOL": str(spool),
           "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent),
                                    env.get("PATH", "")])}
    proc = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", code], cwd=folder, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    deadline = time.monotonic() + 300
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("block ran past 300 s")
        for req in sorted(spool.glob("*.req")):
            request = json.loads(req.read_text())
            req.unlink()
            rc, out = _serve_dpgnn(request)
            tmp = req.with_suffix(".tmp")
            tmp.write_text(json.dumps([rc, out]))
            tmp.replace(req.with_suffix(".resp"))
        time.sleep(0.01)
    return proc.returncode, proc.stdout.read()


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_doc_block_runs(block: Block, tmp_path):
    env = dict(os.environ)
    env.pop("DPGNN_DEBUG", None)
    env.setdefault("HF_HUB_OFFLINE", "1")  # tests never touch the network
    env["DPGNN_DOCS_REPO"] = str(REPO)
    folder = _folder(tmp_path / "cwd")
    code = block.source(env["DPGNN_DATA"])
    if block.lang == "python":
        _run_python(code, folder, env, block.id)
    else:
        rc, out = _run_bash(code, folder, env, tmp_path / "cwd")
        assert rc == 0, f"{block.id} failed (exit {rc}):\n{out[-6000:]}"
    for written in re.findall(r"# writes (\S+)$", code, flags=re.MULTILINE):
        assert (folder / written).exists(), f"{block.id}: says it writes {written}"
