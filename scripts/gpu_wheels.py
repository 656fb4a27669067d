"""Download the wheels of Composer's stack for a GPU machine that has torch and numpy but no
network: every package of ``benchmarks/gpu_wheels.txt``, without its dependencies (the list
names every one the machine lacks), for that machine's Python and platform.

    .venv/bin/python scripts/gpu_wheels.py wheels                # Python 3.12, x86-64 Linux
    .venv/bin/python scripts/gpu_wheels.py wheels --python-version 3.11

Run it on a machine with network (any OS: pip picks the wheels for the target's tags). A
package that publishes no wheel (antlr4-python3-runtime 4.9.3, the version omegaconf 2.3
needs) is built into one from its source here, which works only for pure-Python packages (the
wheel's tag must be ``none-any``; anything else stops with an error). Prints each wheel's size
and the total. On the GPU machine, ``python3 benchmarks/gpu_check.py OUT --wheels wheels``
installs them (pip, offline, ``--no-deps``); docs/cluster.md says more.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIST = REPO / "benchmarks" / "gpu_wheels.txt"
#: manylinux tags pip should accept for x86-64 (pip matches each exactly).
PLATFORMS = ["manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64"] + [
    f"manylinux_2_{n}_x86_64" for n in range(5, 40)
]


def requirements(path: Path = LIST) -> list[str]:
    """The ``name==version`` lines of ``path`` (comments after ``#`` dropped)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        req = line.split("#", 1)[0].strip()
        if req:
            out.append(req)
    return out


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "-q"]
    return subprocess.run(cmd, capture_output=True, text=True)


def fetch(req: str, folder: Path, python_version: str, platforms: list[str]) -> Path:
    """One wheel of ``req`` in ``folder``: downloaded for CPython ``python_version`` on
    ``platforms``, else built here from its source when it is pure Python. Raises
    ``SystemExit`` naming the package when neither works."""
    before = set(folder.glob("*.whl"))
    tags = [a for p in platforms for a in ("--platform", p)]
    got = _pip(
        "download", "--no-deps", "--only-binary=:all:", "--implementation", "cp",
        "--python-version", python_version, *tags, "-d", str(folder), req,
    )  # fmt: skip
    if got.returncode != 0:
        got = _pip("wheel", "--no-deps", "--no-binary=:all:", "-w", str(folder), req)
        new = set(folder.glob("*.whl")) - before
        if got.returncode != 0 or not new:
            raise SystemExit(f"{req}: no wheel could be downloaded or built:\n{got.stderr[-800:]}")
        built = new.pop()
        if not built.name.endswith("-none-any.whl"):
            built.unlink()
            raise SystemExit(
                f"{req}: no wheel for Python {python_version}, and it is not pure Python"
            )
        return built
    new = set(folder.glob("*.whl")) - before
    name = req.split("==")[0].lower().replace("-", "_").replace(".", "_")
    if new:
        return new.pop()
    # already there from an earlier run
    return next(p for p in folder.glob("*.whl") if p.name.lower().startswith(name))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("out", type=Path, help="folder for the wheels")
    p.add_argument("--python-version", default="3.12", help="the GPU machine's Python (3.12)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    total = 0
    for req in requirements():
        wheel = fetch(req, args.out, args.python_version, PLATFORMS)
        size = wheel.stat().st_size
        total += size
        print(f"{size / 2**20:7.2f} MiB  {wheel.name}")
    print(f"{total / 2**20:7.2f} MiB  in all ({args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
