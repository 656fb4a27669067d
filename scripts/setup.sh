#!/usr/bin/env bash
# Create (or reuse) the virtual environment and install Stoicheia into it, editable.
# The environment (~6 GB: torch with CUDA libraries) is cached outside the checkout, keyed on
# a hash of pyproject.toml and the Python version, so a second run or a new clone takes seconds.
# .venv in the checkout is a symlink to it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
key=$({ cat pyproject.toml; "$PY" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)
cache=${STOICHEIA_VENV_CACHE:-$HOME/.cache/stoicheia}
venv="$cache/venv-$key"
if [ ! -f "$venv/.complete" ]; then
  echo "setup: creating $venv (first time: ~3 min, ~6 GB)"
  rm -rf "$venv"
  mkdir -p "$cache"
  "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip setuptools wheel
  "$venv/bin/python" -m pip install -q '.[dev]'
  touch "$venv/.complete"
fi
# The package itself is (re)installed editable from this checkout every time (cheap). The
# cached environment is shared by all checkouts, so its editable install points at the last
# one that ran this script: run commands from the checkout root (`python -m stoicheia`,
# `python -m pytest`, `composer recipes/train.py`), which always use that checkout's code.
"$venv/bin/python" -m pip install -q --no-deps --no-build-isolation -e .
ln -sfn "$venv" .venv
echo "setup: ready (.venv -> $venv)"
