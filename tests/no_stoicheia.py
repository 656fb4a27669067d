"""``python -I tests/no_stoicheia.py SCRIPT ARGS...``: run SCRIPT with every import of the
stoicheia package refused.

The test venv has stoicheia installed (editable), so a script that should need only an
export folder and ``transformers`` could import it by accident and pass; under this
runner such an import raises ``ImportError`` instead.
"""

import runpy
import sys


class _NoStoicheia:
    """A meta path finder that refuses ``stoicheia`` and its submodules."""

    def find_spec(self, name, path=None, target=None):
        if name == "stoicheia" or name.startswith("stoicheia."):
            raise ImportError(f"{name}: the export folder must not need the stoicheia package")
        return None


if __name__ == "__main__":
    sys.meta_path.insert(0, _NoStoicheia())
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")
    leaked = sorted(m for m in sys.modules if m.split(".")[0] == "stoicheia")
    if leaked:
        raise SystemExit(f"stoicheia modules were imported: {', '.join(leaked)}")
