"""Lint that holds (issue 13 §7): ``ruff check`` is clean and ``ruff format`` has nothing to
change, at the line length of ``pyproject.toml`` (100). Run by the test command, so CI runs it.
Long strings and comments the formatter cannot wrap are left to ``E501``'s exclusion; fix a
failure with ``.venv/bin/ruff check --fix . && .venv/bin/ruff format .``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> str:
    beside = Path(sys.executable).with_name("ruff")
    found = str(beside) if beside.exists() else shutil.which("ruff")
    if found is None:
        pytest.fail(
            "ruff is not installed: it is a dev dependency "
            "(pip install -e '.[dev]', or bash scripts/setup.sh)"
        )
    return found


@pytest.mark.parametrize(
    "args", [["check", "."], ["format", "--check", "."]], ids=["check", "format"]
)
def test_ruff(args):
    res = subprocess.run([_ruff(), *args], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, (
        f"ruff {' '.join(args)} failed; fix with `ruff check --fix . && ruff format .`:\n"
        f"{res.stdout[-4000:]}{res.stderr[-2000:]}"
    )
