"""The supported Python versions are stated once: ``requires-python``'s lower bound is ruff's
``target-version`` (ruff then flags syntax and standard-library use the oldest supported
version lacks) and the version the install page names first."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick  # the check of an install (pytest -m quick)

ROOT = Path(__file__).resolve().parents[1]


def test_requires_python_ruff_target_and_install_page_agree():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    lowest = re.match(r">=\s*3\.(\d+)", config["project"]["requires-python"])
    assert lowest, "requires-python starts with a lower bound >=3.N"
    minor = int(lowest.group(1))
    assert config["tool"]["ruff"]["target-version"] == f"py3{minor}"
    assert f"Python 3.{minor}–" in (ROOT / "docs" / "install.md").read_text()
