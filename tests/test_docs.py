"""The commands, keys and outputs shown in README.md and the docs pages stay true.

* Every command of a fenced ```bash block is checked as far as it can be without running
  it: a ``stoicheia`` subcommand or a script exists and every ``--option`` it is given is in
  its ``--help``; a training command's YAML and ``key=value`` overrides load
  (:func:`stoicheia.config.load_config`, plugins checked too); every repository path exists.
  A command of a kind this test does not know fails it, so none goes unchecked.
* Every YAML key named in the pages (`` `train.clip_norm` ``, ``callbacks.auto_anneal.stall_eps``)
  and in the plugins' docstrings exists; every key of the schema is in docs/configuration.md.
* docs/plugins.md's reference is what scripts/make_plugin_docs.py writes.
* Every output block (```text) follows a marker naming the script that regenerates it.
* The README's test command is the one .ci/run runs.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

from stoicheia.config import RunConfig, load_config
from stoicheia.train import registry

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable

#: The pages this test checks: README.md and every page of docs/ (a new page is checked from
#: the day it is added).
PAGES = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in REPO.glob("docs/*.md"))]
#: Programs that only appear as context (exports, cluster tools) and are not ours to check.
FOREIGN = {"export", "aws", "srun", "scancel", "sbatch", "cd", "cat", "head"}
REPO_DIRS = ("yamls/", "scripts/", "benchmarks/", "recipes/", "docs/", "tests/", "stoicheia/")


def fenced(page: str, lang: str) -> list[str]:
    """The bodies of the ```LANG blocks of ``page`` (``lang`` "": blocks without a language)."""
    blocks, current, opened = [], [], None
    for line in (REPO / page).read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("```"):
            if opened is None:
                opened, current = line[3:].strip(), []
                continue
            if opened == lang:
                blocks.append("".join(current))
            opened = None
        elif opened is not None:
            current.append(line)
    return blocks


def commands(page: str) -> list[str]:
    """The shell commands of the page's ```bash blocks: continuation lines joined, comments
    dropped, ``a && b`` split."""
    out = []
    for block in fenced(page, "bash"):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words:
                    out.append(words)
    return out


@cache
def help_options(argv: tuple[str, ...]) -> set[str]:
    """The ``--options`` (and ``-x`` flags) that ``argv --help`` lists."""
    run = subprocess.run([*argv, "--help"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"{' '.join(argv)} --help failed: {run.stderr[-500:]}"
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", run.stdout))


def check_options(argv: tuple[str, ...], args: list[str], where: str) -> None:
    known = help_options(argv)
    for a in args:
        if a.startswith("-") and not re.fullmatch(r"-?\d[\d.]*", a):
            opt = a.split("=", 1)[0]
            assert opt in known, (
                f"{where}: {' '.join(argv)} has no option {opt} ({' '.join(argv)} --help)"
            )


def check_paths(words: list[str], where: str) -> None:
    for w in words:
        for token in re.split(r"[=,]", w):
            if token.startswith(REPO_DIRS) and "{" not in token and "*" not in token:
                assert (REPO / token).exists(), f"{where}: {token} does not exist"


def check_training(args: list[str], where: str) -> None:
    """``recipes/train.py CONFIG key=value ...`` after the launcher's own options."""
    i = args.index("recipes/train.py")
    rest = args[i + 1 :]
    config, overrides = rest[0], [a for a in rest[1:] if "=" in a]
    cfg = load_config(REPO / config, overrides)
    registry.check_plugins(cfg)
    # the launcher's options
    launcher = args[:i]
    if launcher and launcher[0] != "composer":
        return
    for a in launcher[1:]:
        if a.startswith("-"):
            assert a.split("=")[0] in {
                "-n",
                "--nproc",
                "--world_size",
                "--node_rank",
                "--master_addr",
                "--master_port",
            }, f"{where}: launcher option {a}"


def check_request(args: list[str], where: str) -> None:
    """A ``curl`` request to ``stoicheia serve``: a route of the server, and a ``POST /restore``
    body that the server's request schema accepts (unknown fields are refused there)."""
    from stoicheia.serve.schemas import RestoreRequest

    url = next((a for a in args if "localhost" in a), None)
    assert url, f"{where}: curl to no localhost URL"
    route = "/" + url.split("/", 1)[1] if "/" in url else "/"
    routes = ("/", "/model", "/restore", "/restore-epidoc")
    assert route in routes, f"{where}: the server has no route {route}"
    body = args[args.index("-d") + 1] if "-d" in args else None
    if route == "/restore":
        assert body is not None, f"{where}: POST /restore needs a JSON body (-d)"
        RestoreRequest.model_validate_json(body)


def check_command(words: list[str], where: str) -> None:
    for w in words:
        # a placeholder (CHECKPOINT, [--out FILE]) cannot be checked: show a real command
        assert not (
            re.fullmatch(r"[A-Z][A-Z_]{2,}(\.\w+)?", w)
            or ((w.startswith("[") or w.endswith("]")) and w.isascii() and "=" not in w)
        ), f"{where}: '{w}' is a placeholder; write a command a user can run"
    check_paths(words, where)
    prog, args = words[0], words[1:]
    if prog in FOREIGN or re.fullmatch(r"\w+=.*", prog):
        return
    if prog == "bash" and args[:1] == ["-c"]:
        for part in args[1].split(";"):
            inner = shlex.split(part.replace("exec ", ""))
            if inner and inner[0] != "trap":
                check_command(inner, where)
        return
    if prog == "bash":
        script = args[0]
        assert (REPO / script).is_file(), f"{where}: {script} does not exist"
        if script == "scripts/slurm_chain.sh":
            check_options(("bash", script), [a for a in args[1:] if a.startswith("-")], where)
            config = next(a for a in args[1:] if a.endswith(".yaml"))
            overrides = [a for a in args[args.index(config) + 1 :] if "=" in a]
            registry.check_plugins(load_config(REPO / config, overrides))
        else:
            assert script in ("scripts/demo.sh", "scripts/setup.sh"), (
                f"{where}: no check for {script}"
            )
        return
    if prog == ".venv/bin/composer":
        check_training(["composer", *args], where)
        return
    if prog == ".venv/bin/python":
        if args[:2] == ["-m", "pytest"]:
            return
        if args[:2] == ["-m", "stoicheia"]:
            sub = args[2]
            check_options((PY, "-m", "stoicheia", sub), args[3:], where)
            return
        if args[:2] == ["-m", "stoicheia.launch"]:
            check_options(
                (PY, "-m", "stoicheia.launch"),
                [a for a in args[2 : args.index("recipes/train.py")]],
                where,
            )
            check_training(["stoicheia.launch", *args[2:]], where)
            return
        script = args[0]
        assert script.endswith(".py") and (REPO / script).is_file(), (
            f"{where}: {script} does not exist"
        )
        check_options((PY, script), args[1:], where)
        return
    if prog == "curl":
        check_request(args, where)
        return
    if prog == "python":
        # any Python with transformers and no stoicheia: tests/test_inference.py runs the script
        script = args[0] if args else ""
        assert script.endswith(".py") and (REPO / script).is_file(), (
            f"{where}: {script} does not exist"
        )
        return
    if prog == "python3":
        # the system Python of a bare GPU machine (torch, numpy, no stoicheia environment):
        # only benchmarks/gpu_check.py is run so (tests/test_gpu_check.py)
        script = args[0] if args else ""
        assert script == "benchmarks/gpu_check.py", f"{where}: {script} needs the environment"
        check_options((PY, script), args[1:], where)
        return
    if prog == ".venv/bin/tensorboard":
        return  # Composer's TensorboardLogger's viewer; its --logdir is the run folder
    pytest.fail(f"{where}: no check for the command {' '.join(words)}; teach tests/test_docs.py")


@pytest.mark.parametrize("page", PAGES)
def test_bash_commands_parse(page: str) -> None:
    cmds = commands(page)
    for words in cmds:
        check_command(words, f"{page}: {shlex.join(words)[:120]}")


def _schema() -> dict[str, set[str] | None]:
    """``section -> field names`` (None for a field without sub-keys)."""
    out: dict[str, set[str] | None] = {}
    for f in dataclasses.fields(RunConfig):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        out[f.name] = (
            {g.name for g in dataclasses.fields(default)}
            if dataclasses.is_dataclass(default)
            else None
        )
    return out


KEY = re.compile(r"(?<![\w./-])((?:data|noise|model|train|callbacks|algorithms)\.[A-Za-z_][\w.]*)")
NOT_KEYS = re.compile(r"\.(py|pt|pkl|json|jsonl|yaml|md|txt|safetensors|sh)$")


def key_problem(key: str) -> str | None:
    """Why ``key`` (``section.field[.sub]``) is not a key of the configuration, or None."""
    key = key.rstrip(".")
    if NOT_KEYS.search(key):
        return None
    parts = key.split(".")
    section = parts[0]
    if section in ("callbacks", "algorithms"):
        reg = registry.CALLBACKS if section == "callbacks" else registry.ALGORITHMS
        if len(parts) < 2:
            return None
        if parts[1] not in reg:
            return f"no plugin {section}.{parts[1]}"
        if len(parts) > 2:
            params = inspect.signature(registry.plugin_class(section, parts[1]).__init__).parameters
            if parts[2] not in params or parts[2] in registry.CONTEXT_FIELDS:
                return f"plugin {parts[1]} has no option {parts[2]}"
        return None
    fields = _schema()[section]
    if len(parts) > 1 and parts[1] not in fields:
        return f"{section} has no key {parts[1]}"
    return None


def inline_code(text: str) -> list[str]:
    return re.findall(r"``?([^`\n]+?)``?", text)


@pytest.mark.parametrize("source", PAGES)
def test_named_config_keys_exist(source: str) -> None:
    text = (REPO / source).read_text(encoding="utf-8")
    bad = []
    for span in inline_code(text):
        for key in KEY.findall(span):
            why = key_problem(key)
            if why:
                bad.append(f"{key}: {why}")
    assert not bad, f"{source} names keys that do not exist: {bad}"


def code_strings(path: Path) -> list[str]:
    """The string literals of a Python file (docstrings, messages), without the expressions
    of f-strings (``{model.step}`` is code, not a key)."""
    import io
    import tokenize

    out = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if tok.type == tokenize.STRING:
            text = tok.string
            if re.match(r"^[rbuRBU]*[fF]", text):
                text = re.sub(r"\{[^{}]*\}", " ", text)
            out.append(text)
        elif tok.type == getattr(tokenize, "FSTRING_MIDDLE", None):
            out.append(tok.string)
    return out


def test_keys_named_in_the_code_exist() -> None:
    """Docstrings and messages (the plugins' options above all) name only keys that exist:
    a key renamed in the schema must not live on in a hint."""
    sources = [*REPO.glob("stoicheia/**/*.py"), *REPO.glob("scripts/*.py")]
    sources += [*REPO.glob("benchmarks/*.py"), REPO / "recipes/train.py"]
    # benchmarks/startup.py times the messages for misspelt keys: its typos are the point
    sources = [p for p in sources if p.name != "startup.py"]
    bad = []
    for path in sources:
        for text in code_strings(path):
            # a parameter of the model's state dict (model.embed.weight) is no config key
            for key in KEY.findall(re.sub(r"\bmodel\.\w+\.(weight|bias)\b", " ", text)):
                why = key_problem(key)
                if why:
                    bad.append(f"{path.relative_to(REPO)}: {key}: {why}")
    assert not bad, f"keys that do not exist: {bad}"


def test_configuration_page_lists_every_key() -> None:
    text = (REPO / "docs/configuration.md").read_text(encoding="utf-8")
    words = set(re.findall(r"[A-Za-z_]+", " ".join(inline_code(text))))
    missing = [
        f"{s}.{k}" for s, fields in _schema().items() for k in (fields or {s}) if k not in words
    ]
    assert not missing, f"docs/configuration.md does not describe {missing}"


@pytest.mark.parametrize("page", PAGES)
def test_yaml_blocks_load(page: str, tmp_path: Path) -> None:
    for i, block in enumerate(fenced(page, "yaml")):
        data = yaml.safe_load(block)
        path = tmp_path / f"block{i}.yaml"
        path.write_text(block, encoding="utf-8")
        registry.check_plugins(load_config(path))
        assert isinstance(data, dict)


def _load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plugins_page_is_generated() -> None:
    make = _load_script("make_plugin_docs")
    page = (REPO / "docs/plugins.md").read_text(encoding="utf-8")
    assert make.render_page(page) == page, (
        "docs/plugins.md is stale: run .venv/bin/python scripts/make_plugin_docs.py"
    )


def test_plugin_docs_refuse_an_undocumented_option() -> None:
    make = _load_script("make_plugin_docs")

    class Undocumented:
        """Does something.

        Args:
            control: injected.
        """

        def __init__(self, control, window: int = 3) -> None:
            pass

    with pytest.raises(make.DocError, match="option 'window'"):
        make.plugin_section("callbacks", "undocumented", Undocumented, True)


@pytest.mark.parametrize("page", PAGES)
def test_outputs_name_their_generator(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    for m in re.finditer(r"^```text\n", text, re.M):
        before = text[: m.start()].rstrip("\n").splitlines()[-1]
        mark = re.fullmatch(r"<!-- (generated|measured) by (\S+?)[: ].*-->", before)
        assert mark, (
            f"{page}: the output block at offset {m.start()} has no marker naming its script"
        )
        assert (REPO / mark.group(2)).is_file(), f"{page}: {mark.group(2)} does not exist"
        if "docs_outputs.py: $ " in before:
            for part in before.split(": $ ", 1)[1].removesuffix(" -->").split("&&"):
                check_command(shlex.split(part), f"{page}: marker")


def test_demo_screen_is_cut_from_a_log(tmp_path: Path) -> None:
    outputs = _load_script("docs_outputs")
    log = tmp_path / "console.log"
    lines = [f"[train] step {s}  loss 4.0" for s in range(1, 200, 25)] + [
        "[run] step 199: run complete",
        "demo: restoring",
        "#1 ...",
        "  1. lacuna [...]",
        "     parallels (corpus passages with the same letters on both sides):",
        "       εῖν: 7 letters matched",
        "         Appian, appian.cw 5.11 [gold]: …",
        "  2. lacuna [5±3]",
        "(fused with a letter 5-gram)",
    ]
    log.write_text("gold: 3 files\nnoise line\n" + "\n".join(lines) + "\n", encoding="utf-8")
    screen = outputs.demo_screen(log).splitlines()
    assert screen[0] == "gold: 3 files" and screen[1] == "..."
    assert "[train] step 1  loss 4.0" in screen and "[train] step 176  loss 4.0" not in screen
    assert screen[-8:] == [
        "[run] step 199: run complete",
        "demo: restoring",
        "#1 ...",
        "  1. lacuna [...]",
        "     parallels (corpus passages with the same letters on both sides):",
        "...",
        "  2. lacuna [5±3]",
        "(fused with a letter 5-gram)",
    ]


def test_readme_test_command_is_what_ci_runs() -> None:
    readme = [
        " ".join(w) for w in commands("README.md") if w[:3] == [".venv/bin/python", "-m", "pytest"]
    ]
    ci = (REPO / ".ci/run").read_text(encoding="utf-8")
    assert readme, "README.md shows no test command"
    assert any(line.strip().startswith(readme[0]) for line in ci.splitlines()), (
        f".ci/run does not run {readme[0]!r}"
    )
    assert "bash scripts/setup.sh" in ci


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def headings(file: Path) -> list[str]:
    """The headings of Markdown ``file`` outside its fenced blocks (a ``# comment`` line of a
    bash block is no heading)."""
    out, fence = [], False
    for line in file.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and (m := re.match(r"#+ (.+)$", line)):
            out.append(m.group(1).strip())
    return out


def anchors(file: Path) -> set[str]:
    """GitHub's anchors of ``file``'s headings (a repeated heading's get ``-1``, ``-2``...)."""
    seen: dict[str, int] = {}
    out = set()
    for h in headings(file):
        s = slug(h)
        out.add(f"{s}-{seen[s]}" if s in seen else s)
        seen[s] = seen.get(s, 0) + 1
    return out


@pytest.mark.parametrize("page", PAGES)
def test_links_point_to_pages_and_headings(page: str) -> None:
    """Every Markdown link of the page to a file of the repository points to one that exists,
    and its ``#anchor`` (to another page or to a heading of the page itself) to a heading."""
    text = (REPO / page).read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"\w+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (REPO / page).parent / path if path else REPO / page
        assert file.exists(), f"{page}: the link {target} points to no file"
        rel = file.resolve().relative_to(REPO).as_posix()
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), (
                f"{page}: the link {target} points to no heading of {rel}"
            )


def test_the_anchor_check_can_fail(tmp_path: Path) -> None:
    """The anchors the link test compares against: fenced comments are no headings, repeated
    headings are numbered, punctuation and backticks are dropped as GitHub drops them."""
    page = tmp_path / "p.md"
    page.write_text(
        "# `restore`: the output\n## Notes\n## Notes\n```bash\n# not a heading\n```\n",
        encoding="utf-8",
    )
    assert anchors(page) == {"restore-the-output", "notes", "notes-1"}


#: a page named in prose (``the README's "Restoring a text" table``): the page, the heading
#: and what the sentence says is under it
_NAMED_SECTION = re.compile(
    r"(README|[\w-]+\.md)(?:'s|’s)\s+[\"“]([^\"”]+)[\"”]\s*(table|section|list|example)?"
)


@pytest.mark.parametrize("page", PAGES)
def test_sections_named_in_prose_exist(page: str) -> None:
    """A section another page names in words (``the README's "Restoring a text" table``) is a
    heading of that page, and holds the table or list the sentence promises: a link would be
    checked by the test above, a name in words is checked here."""
    text = re.sub(r"\s+", " ", (REPO / page).read_text(encoding="utf-8"))
    for name, heading, what in _NAMED_SECTION.findall(text):
        target = REPO / "README.md" if name == "README" else REPO / "docs" / name
        assert target.is_file(), f"{page}: names {name}, which is no page"
        body = target.read_text(encoding="utf-8")
        assert heading in headings(target), f'{page}: {name} has no section "{heading}"'
        section = re.split(r"^#+ .*$", body.split(heading, 1)[1], maxsplit=1, flags=re.M)[0]
        if what == "table":
            assert re.search(r"^\|[- :|]+\|$", section, re.M), (
                f'{page}: {name}\'s "{heading}" holds no table'
            )


#: documentation paths named anywhere in the code, scripts, tests and pages:
#: ``docs/restoration-page.md``, ``docs/data-formats.md#leiden-notation``
_DOC_PATH = re.compile(r"(?<![\w/.-])docs/([a-z0-9-]+\.md)(?:#([\w-]+))?")


def test_docs_paths_named_in_the_code_exist() -> None:
    """Every ``docs/<page>.md`` (and its ``#anchor``) that a docstring, a message, a script or a
    page names is a page of docs/ with that heading."""
    sources = [
        p
        for d in ("stoicheia", "scripts", "benchmarks", "tests", "recipes", "docs")
        for p in (REPO / d).rglob("*")
        if p.suffix in (".py", ".md", ".sh", ".yaml", ".js", ".html")
    ] + [REPO / "README.md"]
    seen = 0
    for src in sources:
        text = src.read_text(encoding="utf-8", errors="replace")
        for name, anchor in _DOC_PATH.findall(text):
            seen += 1
            where = src.relative_to(REPO).as_posix()
            assert (REPO / "docs" / name).is_file(), f"{where} names docs/{name}: no such page"
            if anchor:
                assert anchor in anchors(REPO / "docs" / name), (
                    f"{where} names docs/{name}#{anchor}: no such heading"
                )
    assert seen > 20, "the check found no path to check"


#: words that tell the project's history, not the product (the pages say what is)
_HISTORY = re.compile(
    r"used to (?:come|be|give|print|read|say)|former section|the rule then|not made here|"
    r"told another story|Before the pieces",
)


@pytest.mark.parametrize("page", PAGES)
def test_pages_describe_the_product(page: str) -> None:
    found = _HISTORY.findall((REPO / page).read_text(encoding="utf-8"))
    assert not found, f"{page} tells development history ({found}): say what the product does"


def test_restore_epidoc_page_says_refused_files_are_not_written() -> None:
    """restoring-epidoc.md does not promise an output folder holding the whole corpus: a
    refused file is not written (tests/test_epidoc_restore.py checks the behaviour)."""
    text = re.sub(r"\s+", " ", (REPO / "docs/restoring-epidoc.md").read_text(encoding="utf-8"))
    assert "holds the whole corpus" not in text
    assert "a refused file" in text and "is not written" in text


def test_pipeline_map_paths_exist() -> None:
    """The README's map of where each stage lives names files and folders that exist."""
    blocks = fenced("README.md", "")
    paths = [p for b in blocks for p in re.findall(r"(?:stoicheia|recipes|yamls)/[\w/.*]*", b)]
    assert len(paths) > 10, "the README lost its map of the pipeline"
    missing = [p for p in paths if not list(REPO.glob(p.rstrip("/")))]
    assert not missing, f"README.md's pipeline map names paths that do not exist: {missing}"


# --- the README's own commands, run on a tiny trained model ---------------------------------

DEMO_FOLDER = "checkpoints/stoicheia-demo"


@pytest.fixture(scope="module")
def tiny_demo_run(small_shards, tmp_path_factory) -> Path:
    """A run folder like the demo's (best.pt, evals, markers), from a 2-layer model trained
    for 4 batches on the small real shards."""
    from tiny import train_tiny

    folder = tmp_path_factory.mktemp("docs_runs")
    steps = ("train.nominal_steps=4", "train.max_steps=4", "train.save_interval=2")
    run = train_tiny(small_shards, folder, "demo", *steps)
    assert (run / "best.pt").is_file()
    return run


def test_stoicheia_commands_run(tiny_demo_run: Path, small_shards: Path, tmp_path: Path) -> None:
    """Each `stoicheia` command of the pages runs (exit 0) on a demo-like run folder, with
    `checkpoints/stoicheia-demo` standing for that folder and `data/shards` for small real
    shards; the README's Python example runs too. Not run here: `convert` of the whole corpus
    (tests/test_corpus_roundtrip.py), `serve` (a server: tests/test_serve.py), `benchmark` and
    `restore --epidoc` of the corpus (minutes to hours: tests/test_benchmark.py and
    tests/test_epidoc_restore.py run them on a few texts and files), `add-corpus` (it adds a
    tier to the shards the other commands share: tests/test_add_corpus.py), `export --ship` and
    `parallels --build` (they rewrite the shipped model and convert the corpus:
    tests/test_shipped_model.py runs them on a tiny run and a small corpus) and commands on the
    reader's own files (`my_texts/`)."""
    import os

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    seen: set[tuple[str, ...]] = set()
    for page in PAGES:
        for words in commands(page):
            if words[:3] != [".venv/bin/python", "-m", "stoicheia"] or tuple(words) in seen:
                continue
            seen.add(tuple(words))
            skipped = (
                words[3] in ("serve", "convert", "benchmark", "add-corpus")
                or "--epidoc" in words
                or "--ship" in words  # rewrites the package's model: tests/test_shipped_model.py
                or "--build" in words  # converts the corpus: tests/test_shipped_model.py
            )
            if skipped or any("my_texts" in w for w in words):
                continue
            args = [
                w.replace(DEMO_FOLDER, str(tiny_demo_run)).replace("data/shards", str(small_shards))
                for w in words[1:]
            ]
            run = subprocess.run(
                [PY, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
            )
            assert run.returncode == 0, f"{page}: {shlex.join(words)}: {run.stderr[-800:]}"
    ran = {w[3] for w in seen}
    assert {"restore", "status", "report", "evaluate", "export"} <= ran, ran
    for block in fenced("README.md", "python"):
        code = block.replace(DEMO_FOLDER, str(tiny_demo_run))
        exec(compile(code, "README.md python block", "exec"), {})
