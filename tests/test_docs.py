"""Every code block of README.md and docs/*.md marked runnable runs as written.

Convention: an HTML comment ``<!-- runnable -->`` on the line right before a ```` ```python ````
or ```` ```bash ```` fence (invisible in the rendered docs). The block runs in a fresh temporary
folder with ``$DPGNN_DATA`` (the shared datasets) and a temporary ``$DPGNN_CACHE``; bash blocks
find ``dpgnn`` and ``python`` of the interpreter running the tests. Mark only blocks that run in
seconds (the embedded csbm graph, few epochs). A bash line's ``# writes PATH`` comment is
checked too: the block must leave that file behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MARKER = "<!-- runnable -->"


def runnable_blocks() -> list[tuple[str, int, str, str]]:
    """``(file, line, language, code)`` of every marked block."""
    blocks = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip() != MARKER:
                continue
            fence = lines[i + 1].strip() if i + 1 < len(lines) else ""
            lang = fence[3:].split()[0] if fence.startswith("```") and len(fence) > 3 else ""
            if lang not in ("python", "bash"):
                raise ValueError(f"{path.name}:{i + 1}: {MARKER} must precede a python/bash fence")
            end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == "```")
            blocks.append((path.name, i + 3, lang, "\n".join(lines[i + 2 : end]) + "\n"))
    return blocks


BLOCKS = runnable_blocks()


def test_the_readme_and_the_docs_have_runnable_blocks():
    files = {f for f, *_ in BLOCKS}
    assert "README.md" in files and len(files) >= 2


@pytest.mark.parametrize("name,line,lang,code", BLOCKS, ids=[f"{f}:{n}" for f, n, *_ in BLOCKS])
def test_runnable_block(name, line, lang, code, tmp_path):
    env = dict(os.environ)
    env["DPGNN_CACHE"] = str(tmp_path / "cache")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("DPGNN_DEBUG", None)
    shell = ["bash", "-euo", "pipefail", "-c", code]
    cmd = [sys.executable, "-c", code] if lang == "python" else shell
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"{name}:{line} failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    for written in re.findall(r"# writes (\S+)$", code, flags=re.MULTILINE):
        assert (tmp_path / written).is_file(), f"{name}:{line}: says it writes {written}"
