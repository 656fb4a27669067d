"""The model and tokenizer code an export folder carries, so that it runs with ``torch``,
``numpy`` and ``transformers`` and never ``stoicheia``.

The Hugging Face modules of ``stoicheia/inference/hf/`` are copied as they are; the package
modules they use (``stoicheia_encoder.py``, ``stoicheia_encode.py``, ...: :func:`code_files`)
are copies of this package's source files with their ``stoicheia.*`` imports made relative
(:func:`_relative_source`), so the exported model runs the very code that was trained.
:func:`write_code` writes them and checks that ``transformers`` will copy every module an entry
module needs (:func:`_check_carried`).
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["HF_DIR", "HF_FILES", "code_files", "write_code"]

_PKG = Path(__file__).resolve().parents[2]
#: the Hugging Face modules an export carries as they are (see ``stoicheia/inference/hf``)
HF_DIR = Path(__file__).resolve().parents[1] / "hf"
HF_FILES = ("configuration_stoicheia.py", "modeling_stoicheia.py", "tokenization_stoicheia.py")
#: the modules ``transformers`` loads by name (``auto_map``); each must import every
#: ``stoicheia_*`` module it needs itself (see :func:`_check_carried`)
_ENTRY_FILES = ("modeling_stoicheia.py", "tokenization_stoicheia.py")
#: the package folders whose modules an export may carry (torch, numpy and the standard
#: library only: nothing of training, data loading or Composer)
_CARRIED_PACKAGES = ("model", "text")

_ABSOLUTE = re.compile(r"^(\s*)from stoicheia\.(?:model|text)\.(\w+) import", re.MULTILINE)
_PACKAGE = re.compile(
    r"^(\s*)from stoicheia\.(?:model|text) import (\w+)(?: as (\w+))?[ \t]*$", re.MULTILINE
)
_ANY_STOICHEIA = re.compile(r"^\s*(from|import) stoicheia\b", re.MULTILINE)
#: the relative imports of an exported module: ``from .stoicheia_x import`` (what
#: ``transformers`` follows; its ``get_relative_imports`` uses this pattern) and ``from .
#: import stoicheia_x`` (which it does not follow)
_FOLLOWED = re.compile(r"^\s*from\s+\.(\S+)\s+import", re.MULTILINE)
_RELATIVE = re.compile(r"^\s*from\s+\.(\w*)\s+import\s+\(?\s*(\w+)", re.MULTILINE)


def _package_module(exported: str) -> Path:
    """The package source of the exported module ``stoicheia_<name>`` (``<name>.py`` of
    :data:`_CARRIED_PACKAGES`). Raises ``RuntimeError`` for none or several."""
    name = exported.removeprefix("stoicheia_")
    found = [_PKG / pkg / f"{name}.py" for pkg in _CARRIED_PACKAGES]
    found = [f for f in found if f.exists()]
    if len(found) != 1:
        where = " and ".join(str(f) for f in found) or "none"
        raise RuntimeError(
            f"the export names its module {exported}.py after one module {name}.py of "
            f"stoicheia/{{{','.join(_CARRIED_PACKAGES)}}}, found {where}"
        )
    return found[0]


def _relative_imports(text: str) -> set[str]:
    """The sibling modules ``text`` imports (``from .x import`` and ``from . import x``)."""
    return {mod or name for mod, name in _RELATIVE.findall(text)}


def _relative_source(path: Path) -> str:
    """``path``'s source with its ``stoicheia.model``/``stoicheia.text`` imports made
    relative (``from stoicheia.text.planes import`` -> ``from .stoicheia_planes import``,
    ``from stoicheia.text import alphabet as A`` -> ``from . import stoicheia_alphabet as
    A``). Raises ``RuntimeError`` for any other import of ``stoicheia``."""
    text = _ABSOLUTE.sub(r"\1from .stoicheia_\2 import", path.read_text(encoding="utf-8"))
    text = _PACKAGE.sub(
        lambda m: f"{m.group(1)}from . import stoicheia_{m.group(2)} as {m.group(3) or m.group(2)}",
        text,
    )
    if _ANY_STOICHEIA.search(text):
        raise RuntimeError(
            f"{path} imports a stoicheia module outside stoicheia."
            f"{{{','.join(_CARRIED_PACKAGES)}}} (or in a form the export cannot rewrite): the "
            "exported model code must run with torch, numpy and transformers only"
        )
    return text


def code_files() -> dict[str, Path]:
    """The package modules an export carries: ``{"stoicheia_<name>.py": source path}``,
    every ``stoicheia_*`` module the files of :data:`HF_FILES` import, and theirs in turn."""
    sources = [(HF_DIR / f).read_text(encoding="utf-8") for f in HF_FILES]
    used = set().union(*(_relative_imports(text) for text in sources))
    todo = sorted(m for m in used if m.startswith("stoicheia_"))
    found: dict[str, Path] = {}
    while todo:
        mod = todo.pop()
        if f"{mod}.py" in found:
            continue
        src = _package_module(mod)
        found[f"{mod}.py"] = src
        todo += sorted(_relative_imports(_relative_source(src)))
    return dict(sorted(found.items()))


def _check_carried(out: Path) -> None:
    """Raise ``RuntimeError`` unless each entry module of ``out`` imports, in the form
    ``transformers`` follows, every sibling module it needs directly or through others:
    ``transformers`` copies a local folder's entry module and only the files it imports
    itself into its module cache, so a module missing there fails to import in a notebook."""
    for entry in _ENTRY_FILES:
        direct = set(_FOLLOWED.findall((out / entry).read_text(encoding="utf-8")))
        need: set[str] = set()
        todo = sorted(_relative_imports((out / entry).read_text(encoding="utf-8")))
        while todo:
            mod = todo.pop()
            if mod not in need:
                need.add(mod)
                todo += sorted(_relative_imports((out / f"{mod}.py").read_text(encoding="utf-8")))
        missing = sorted(need - direct)
        if missing:
            raise RuntimeError(
                f"stoicheia/inference/hf/{entry} needs {', '.join(missing)} (through the modules "
                "it imports) but does not import it as `from .MODULE import NAME`, so transformers "
                f"would not copy it; add `from .{missing[0]} import ...  # noqa: F401`"
            )


def write_code(out: Path) -> list[str]:
    """Write the model and tokenizer code into ``out``; returns the file names.

    The files of :data:`HF_FILES` are copied byte for byte; the package modules they use
    (:func:`code_files`) are written with their imports made relative, so the folder imports
    no ``stoicheia``. Raises ``RuntimeError`` when the code cannot be carried that way.
    """
    import shutil

    names = []
    for name in HF_FILES:
        shutil.copyfile(HF_DIR / name, out / name)
        names.append(name)
    for name, src in code_files().items():
        (out / name).write_text(_relative_source(src), encoding="utf-8")
        names.append(name)
    _check_carried(out)
    return names
