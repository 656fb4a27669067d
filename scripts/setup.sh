#!/usr/bin/env bash
# Create (or reuse) the environment: the dependencies in one shared environment, and a small
# environment of this checkout's own on top of it (.venv). See docs/setup.md.
#
# * The dependencies (~6 GB: torch with CUDA libraries) are installed once into an environment
#   cached outside the checkout ($STOICHEIA_VENV_CACHE, default ~/.cache/stoicheia), keyed on a
#   hash of pyproject.toml and the Python version, so a second run or a new clone takes
#   seconds. It never holds Stoicheia itself, so no checkout's code can leak into another's.
#   It is built under a lock (flock), so two runs at once (two checkouts, CI beside a user)
#   never delete what the other is installing: the second waits and then reuses it.
# * .venv in the checkout is a venv of its own (a few kB) that sees the shared packages
#   (a .pth file) and has this checkout installed editable: .venv/bin/python, composer,
#   pytest and stoicheia from one checkout always import that checkout's code, from any folder.
#   It is remade only when pyproject.toml or the shared environment changes.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
PY=${PYTHON:-python3}
LAYOUT=2  # 1: .venv was a link to the shared environment, which held the package editable
key=$({ echo "layout $LAYOUT"; cat pyproject.toml; "$PY" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)
cache=${STOICHEIA_VENV_CACHE:-$HOME/.cache/stoicheia}
venv="$cache/venv-$key"
mkdir -p "$cache"

# Hold the lock file open on descriptor $1 until this script ends (flock, or mkdir where there
# is no flock: macOS).
lock() {
  local fd=$1 file=$2
  if command -v flock >/dev/null 2>&1; then
    eval "exec $fd>\"\$file\""
    if ! flock -n "$fd"; then
      echo "setup: waiting for another setup.sh ($file)"
      flock "$fd"
    fi
  else
    until mkdir "$file.d" 2>/dev/null; do sleep 1; done
    trap 'rmdir "'"$file"'.d" 2>/dev/null || true' EXIT
  fi
}

lock 9 "$venv.lock"
if [ ! -f "$venv/.complete" ]; then
  echo "setup: creating $venv (first time: ~3 min, ~6 GB)"
  rm -rf "$venv"  # a build that was killed; no other setup.sh is building it (we hold the lock)
  "$PY" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip setuptools wheel
  # the dependencies of pyproject.toml (and its dev extra), not the package itself
  "$venv/bin/python" - > "$venv/requirements.txt" <<'EOF'
try:
    import tomllib
except ImportError:  # Python 3.10
    from pip._vendor import tomli as tomllib
with open("pyproject.toml", "rb") as fh:
    project = tomllib.load(fh)["project"]
print("\n".join(project["dependencies"] + project.get("optional-dependencies", {}).get("dev", [])))
EOF
  "$venv/bin/python" -m pip install -q -r "$venv/requirements.txt"
  touch "$venv/.complete"
fi

# This checkout's .venv, under a lock of its own (two setup.sh in one checkout).
lock 8 "$cache/checkout-$(printf %s "$root" | sha256sum | cut -c1-16).lock"
stamp="$venv $(sha256sum pyproject.toml | cut -c1-64)"
if [ -L .venv ]; then
  rm .venv  # the old layout: a link to the shared environment (the link only, not its target)
fi
if [ -e .venv ] && [ ! -f .venv/.stoicheia-stamp ]; then
  echo "setup: error: $root/.venv is a folder setup.sh did not make; move it away and run scripts/setup.sh again" >&2
  exit 2
fi
if [ ! -f .venv/.stoicheia-stamp ] || [ "$(cat .venv/.stoicheia-stamp)" != "$stamp" ]; then
  rm -rf .venv
  "$venv/bin/python" -m venv --without-pip .venv
  site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  shared=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # processed after this venv's own .pth files (names sort after them), so this checkout's
  # editable install is found before anything of the shared environment
  echo "import site; site.addsitedir('$shared')" > "$site/zz_stoicheia_shared_env.pth"
  # the console scripts of the shared environment (composer, pytest, ruff...), started with this
  # venv's python so that they (and the processes composer launches) see this checkout
  for f in "$venv"/bin/*; do
    name=$(basename "$f")
    [ -f "$f" ] || continue
    case $name in python*|activate*|Activate.ps1|pip|pip3*) continue ;; esac
    [ -e ".venv/bin/$name" ] && continue
    if head -c 200 "$f" | head -n 3 | grep -q "$venv/bin/python"; then
      sed "1,3s#$venv/bin/python[0-9.]*#$root/.venv/bin/python#" "$f" > ".venv/bin/$name"
      chmod +x ".venv/bin/$name"
    elif [ -f "$f" ] && [ -x "$f" ]; then
      ln -s "$f" ".venv/bin/$name"  # a binary (ruff)
    fi
  done
  # this checkout, editable (setuptools' messages go to a log, not to every user)
  if ! .venv/bin/python -m pip install -q --no-deps --no-build-isolation --no-warn-script-location -e . > .venv/install.log 2>&1; then
    cat .venv/install.log >&2
    exit 1
  fi
  echo "$stamp" > .venv/.stoicheia-stamp
fi
echo "setup: ready (.venv: this checkout, on the packages of $venv)"
