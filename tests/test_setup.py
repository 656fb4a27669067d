"""scripts/setup.sh: two runs at once share one environment safely, each checkout imports its
own code, and a second run is quiet. On a temporary cache with a pyproject.toml without
dependencies (the real environment is ~6 GB); pip needs its package index for pip/setuptools."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _checkout(dst: Path, mark: str) -> Path:
    dst.mkdir(parents=True)
    for name in ("stoicheia", "scripts"):
        shutil.copytree(REPO / name, dst / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "README.md", dst / "README.md")
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    text = re.sub(r"dependencies = \[.*?\n\]", "dependencies = []", text, count=1, flags=re.S)
    text = re.sub(r"dev = \[.*?\n\]", "dev = []", text, count=1, flags=re.S)
    (dst / "pyproject.toml").write_text(text, encoding="utf-8")
    with open(dst / "stoicheia" / "__init__.py", "a", encoding="utf-8") as fh:
        fh.write(f"\nCHECKOUT_MARK = {mark!r}\n")
    return dst


@pytest.mark.slow
def test_two_setups_at_once_and_each_checkout_imports_its_own_code(tmp_path):
    a, b = _checkout(tmp_path / "a", "A"), _checkout(tmp_path / "b", "B")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["STOICHEIA_VENV_CACHE"] = str(tmp_path / "cache")
    runs = [
        subprocess.Popen(
            ["bash", str(c / "scripts" / "setup.sh")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for c in (a, b)
    ]
    outs = [r.communicate(timeout=900)[0] for r in runs]
    assert [r.returncode for r in runs] == [0, 0], outs
    assert sum("setup: creating" in o for o in outs) == 1, outs  # built once; the other waited
    assert any("setup: waiting for another setup.sh" in o for o in outs), outs
    envs = [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    assert len(envs) == 1 and (envs[0] / ".complete").exists()
    assert not list(envs[0].glob("lib/python*/site-packages/*stoicheia*")), (
        "the shared environment holds no checkout"
    )
    for c, mark in ((a, "A"), (b, "B")):
        # from another folder: no help from the current directory
        got = subprocess.run(
            [
                str(c / ".venv" / "bin" / "python"),
                "-c",
                "import stoicheia; print(stoicheia.CHECKOUT_MARK, stoicheia.__file__)",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert got.stdout.split() == [mark, str(c / "stoicheia" / "__init__.py")], got.stderr
        assert (
            subprocess.run(
                [str(c / ".venv" / "bin" / "stoicheia"), "--help"],
                cwd=tmp_path,
                env=env,
                capture_output=True,
            ).returncode
            == 0
        )
    # a second run: nothing to build, one line, no setuptools warnings
    again = subprocess.run(
        ["bash", str(a / "scripts" / "setup.sh")], env=env, capture_output=True, text=True
    )
    assert again.returncode == 0 and again.stderr == ""
    assert again.stdout.splitlines() == [
        f"setup: ready (.venv: this checkout, on the packages of {envs[0]})"
    ]
