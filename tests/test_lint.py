"""Lint that holds (issue 13 §7): ``ruff check`` is clean and ``ruff format`` has nothing to
change, at the line length of ``pyproject.toml`` (100). Run by the test command, so CI runs it.
Long strings and comments the formatter cannot wrap are split by hand (implicit concatenation,
re-wrapped comments) for ``E501``; fix a failure with ``.venv/bin/ruff check --fix . &&
.venv/bin/ruff format .``.

And the house kept tidy as it grows (issue 23 §6): no module of ``stoicheia/`` over 500 lines,
every import in the direction of the data flow, no import circle, the recipe a few lines, the
README at most 2,500 words."""

from __future__ import annotations

import ast
import graphlib
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


# --- the house, kept tidy as it grows (issue 23 §6) --------------------------------------------

PACKAGE = ROOT / "stoicheia"
MAX_MODULE_LINES = 500

# Where each part of the package stands in the data flow sources -> text -> data -> model ->
# inference / train -> serve / commands. A module may import from a part of a lower rank or
# from its own part, never from a part of its own rank or above: no import runs back up.
LAYERS = {
    # no import of the package: atomic writes, the process's lifetime, checkpoint files
    "publish": 0,
    "lifetime": 0,
    "checkpoint_files": 0,
    "sources": 1,
    "text": 2,
    "noise": 3,
    "data": 4,
    "model": 5,
    "config": 6,
    "inference": 7,
    "train": 8,
    # the public API (``stoicheia.load_model``...), the command lines' shared arguments, the
    # launcher
    "__init__": 9,
    "cli_args": 9,
    "launch": 9,
    "serve": 10,
    "commands": 10,
    "cli": 11,
    "__main__": 12,
}


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__.py``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 2:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imported(name: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement of module ``name`` (file ``path``) reads: the
    module, or each ``module.name`` (a submodule or a name of the module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        here = name.split(".")
        base = here if path.name == "__init__.py" else here[:-1]
        base = base[: len(base) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    return [f"{module}.{a.name}" for a in node.names]


def _owner(dotted: str, modules: dict[str, Path]) -> str | None:
    """The module of the package that defines ``dotted`` (None outside the package)."""
    while dotted and dotted not in modules:
        dotted = dotted.rpartition(".")[0]
    if dotted == "stoicheia":
        return "stoicheia.__init__"
    return dotted or None


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return getattr(t, "id", None) == "TYPE_CHECKING" or getattr(t, "attr", None) == "TYPE_CHECKING"


def _imports_at_import_time(tree: ast.AST, in_functions: bool = False):
    """The import statements that run when the module is imported: those of its body and its
    classes, not those inside functions (unless ``in_functions``: every import that can run; a
    lazy import hides a circle from the import-time graph, not from the design) nor under
    ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(tree):
        if not in_functions and isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
        ):
            continue
        if isinstance(child, ast.If) and _is_type_checking(child):
            for sub in child.orelse:
                yield from _imports_at_import_time(
                    ast.Module(body=[sub], type_ignores=[]), in_functions
                )
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        yield from _imports_at_import_time(child, in_functions)


def _part(module: str) -> str:
    """The part of the package a module belongs to (``stoicheia.text.leiden``: ``text``)."""
    return module.split(".")[1]


def test_no_module_is_over_500_lines():
    """No module of ``stoicheia/`` over 500 lines: a module that grows past it is split by job
    (issue 23 §6). The failure names every offender with its line count."""
    over = []
    for path in sorted(PACKAGE.rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_MODULE_LINES:
            over.append((n, path.relative_to(ROOT).as_posix()))
    assert not over, f"{len(over)} modules over {MAX_MODULE_LINES} lines (split them by job): " + (
        ", ".join(f"{p} {n}" for n, p in sorted(over, reverse=True))
    )


def test_every_part_of_the_package_has_its_place_in_the_data_flow():
    parts = {_part(m) for m in _modules()}
    unplaced = sorted(parts - set(LAYERS))
    assert not unplaced, (
        f"stoicheia.{unplaced[0]} has no place in the data flow: add it to LAYERS in "
        f"tests/test_lint.py (all without one: {unplaced})"
    )


def test_no_import_runs_back_up_the_data_flow():
    """Every import of a module (at the top, in a function, or for type checking only) goes to
    its own part of the package or to one earlier in the data flow (``LAYERS``)."""
    modules = _modules()
    upward = []
    for name, path in modules.items():
        here = _part(name)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for dotted in _imported(name, path, node):
                target = _owner(dotted, modules)
                if target is None or _part(target) == here:
                    continue
                if LAYERS.get(_part(target), -1) >= LAYERS.get(here, -1):
                    rel = path.relative_to(ROOT).as_posix()
                    upward.append(f"{rel}:{node.lineno} imports {target}")
    assert not upward, "imports running back up the data flow: " + "; ".join(sorted(set(upward)))


def test_no_import_cycle():
    """The modules imported when a module is imported form no circle (a circle makes the
    import order matter and breaks ``python -m`` of either module). Found with the standard
    library's topological sort, which names one circle it meets."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in _imports_at_import_time(ast.parse(path.read_text(encoding="utf-8"))):
            for dotted in _imported(name, path, node):
                target = _owner(dotted, modules)
                if target is not None and target != name:
                    deps.add(target)
        graph[name] = deps
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as err:
        pytest.fail("modules that import each other in a circle: " + " -> ".join(err.args[1]))


@pytest.mark.parametrize("package", ["stoicheia.inference.benchmark"])
def test_no_import_circle_even_through_functions(package):
    """The modules of ``package`` import one another in no circle, counting the imports made
    inside functions: the benchmark's bootstrap, views, report and contamination did
    (bootstrap -> report -> views -> bootstrap), each hiding it behind a lazy import."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        if not name.startswith(package + "."):
            continue
        deps = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _imports_at_import_time(tree, in_functions=True):
            for dotted in _imported(name, path, node):
                target = _owner(dotted, modules)
                if target is not None and target != name and target.startswith(package + "."):
                    deps.add(target)
        graph[name] = deps
    assert len(graph) > 5, f"no modules found in {package}"
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as err:
        pytest.fail("modules that import each other in a circle: " + " -> ".join(err.args[1]))


def _calls(name: str, paths) -> list[str]:
    """``file:line`` of every call of a function called ``name`` in ``paths``."""
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                if getattr(f, "id", None) == name or getattr(f, "attr", None) == name:
                    out.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    return out


def test_the_duplicates_once_named_stay_gone():
    """What earlier notes found written two or three times, written once (issue 33 §6): the
    training mix's unigram bits of a run (``data.corpus_stats.run_unigram_bits``: report,
    evaluate, export and the training console all call it, none reads the config itself), a
    published system's figures in the benchmark's reports (``published_figures``), and the
    restore tests' stand-in network (``tests/restore_stub.py``)."""
    package = sorted(PACKAGE.rglob("*.py"))
    callers = _calls("mix_baseline_bits", package)
    assert all(c.startswith("stoicheia/data/corpus_stats.py:") for c in callers), callers
    report = (PACKAGE / "inference" / "benchmark" / "report.py").read_text(encoding="utf-8")
    assert report.count('for k in ("cer", "top1", "top20")') == 1
    assert len(_calls("published_figures", [PACKAGE / "inference/benchmark/report.py"])) == 2
    stub_line = "(t * 7) % A.NUM_LETTERS"
    stubs = [
        p.name
        for p in sorted((ROOT / "tests").glob("*.py"))
        if p.name != "test_lint.py" and stub_line in p.read_text(encoding="utf-8")
    ]
    assert stubs == ["restore_stub.py"], stubs


def test_the_recipe_is_a_few_lines_that_hand_the_run_to_one_function():
    """``recipes/train.py`` stays what a Composer recipe should be: under 30 lines, no logic of
    its own (no function, class, loop or ``try``), and its ``__main__`` block hands the
    command line to one function of ``stoicheia.train``."""
    path = ROOT / "recipes" / "train.py"
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    n = len(source.splitlines())
    assert n < 30, f"recipes/train.py has {n} lines: move the logic into stoicheia/train/"
    logic = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.While, ast.Try)
    found = [f"line {x.lineno}: {type(x).__name__}" for x in ast.walk(tree) if isinstance(x, logic)]
    assert not found, f"recipes/train.py holds logic of its own: {found}"
    from_train = {
        a.asname or a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stoicheia.train")
        for a in node.names
    }
    blocks = [x for x in tree.body if isinstance(x, ast.If) and "__main__" in ast.unparse(x.test)]
    assert len(blocks) == 1, f"recipes/train.py has {len(blocks)} __main__ blocks, not 1"
    calls = [
        x.func.id
        for x in ast.walk(blocks[0])
        if isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and x.func.id in from_train
    ]
    assert len(calls) == 1, (
        f"recipes/train.py's __main__ block calls {calls or 'no function'} of stoicheia.train: "
        "it hands the run to exactly one"
    )


def test_the_readme_stays_under_2500_words():
    """README.md at most 2,500 words (words as ``wc -w`` counts them: runs of non-space
    characters, its code blocks included); the details belong in docs/."""
    n = len((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert n <= 2500, f"README.md has {n} words (at most 2,500): move details into docs/"
