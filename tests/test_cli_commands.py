"""The ``stoicheia`` command's layout: each subcommand is a module of ``stoicheia.commands`` that
registers its own arguments, ``stoicheia.cli`` only dispatches, and the library never imports
either. The usage lines below are those of the single-module ``cli.py`` the commands were split
from (2026-12-02), with CHECKPOINT optional for restore and serve (the shipped model,
2026-12-05); a change to a command's arguments updates its line here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from stoicheia.cli import build_parser, main

REPO = Path(__file__).resolve().parents[1]

USAGE = {
    "": (
        "usage: stoicheia [-h] "
        "{convert,add-corpus,index,status,evaluate,benchmark,restore,parallels,report,export,"
        "serve} ..."
    ),
    "add-corpus": (
        "usage: stoicheia add-corpus [-h] --name NAME [--run RUN] [--shards SHARDS] "
        "[--workers WORKERS] DIR"
    ),
    "convert": (
        "usage: stoicheia convert [-h] --out OUT [--val-fraction VAL_FRACTION] "
        "[--val-work WORK] [--inscription-dev-digit DIGIT] "
        "[--max-record-letters MAX_RECORD_LETTERS] [--min-greek MIN_GREEK] [--skip-bad] "
        "[--workers WORKERS] [--overwrite] [--supplied-lost {text,lacuna}] "
        "[--expansions {expanded,abbreviated}] [--choice {regularised,original}] "
        "[--no-parallels-index] TIER=PATH [TIER=PATH ...]"
    ),
    "index": "usage: stoicheia index [-h] [--out OUT] SHARDS_DIR",
    "parallels": (
        "usage: stoicheia parallels [-h] [--build] [--corpus DIR] [--workers WORKERS] "
        "[--index INDEX] [--top TOP] [--min-letters MIN_LETTERS] [--json] [TEXT]"
    ),
    "status": "usage: stoicheia status [-h] RUN_FOLDER",
    "evaluate": (
        "usage: stoicheia evaluate [-h] [--config CONFIG] [--device DEVICE] "
        "[--precision {auto,fp32,bf16}] --shards DIR_OR_FILE [DIR_OR_FILE ...] "
        "[--split {val,train,inscription_dev}] [--tiers TIERS [TIERS ...]] "
        "[--max-records MAX_RECORDS] [--train-shards TRAIN_SHARDS] [--ngram-order NGRAM_ORDER] "
        "[--ngram-letters NGRAM_LETTERS] [--seq-len SEQ_LEN] [--rows ROWS] [--t T] "
        "[--seed SEED] [--word-rate WORD_RATE] [--max-works MAX_WORKS] [--out OUT] CHECKPOINT"
    ),
    "benchmark": (
        "usage: stoicheia benchmark [-h] [--config CONFIG] [--device DEVICE] "
        "[--precision {auto,fp32,bf16}] [--shards SHARDS] --out OUT "
        "[--protocols {hidden,supplements,unknown,edge} [{hidden,supplements,unknown,edge} ...]] "
        "[--spans-per-text SPANS_PER_TEXT] [--seed SEED] [--max-texts MAX_TEXTS] "
        "[--sample SAMPLE] [--epidoc-root EPIDOC_ROOT] [--unknown-width UNKNOWN_WIDTH] "
        "[--ngram-order NGRAM_ORDER] [--ngram-letters NGRAM_LETTERS] "
        "[--fusion-weights FUSION_WEIGHTS] [--twin-threshold TWIN_THRESHOLD] "
        "[--parallels INDEX] [--fused3-weights NGRAM/PARALLELS] "
        "[--readings-grid AXIS=W,W;...] [--save-fusion] "
        "[--bootstrap BOOTSTRAP] CHECKPOINT"
    ),
    "export": (
        "usage: stoicheia export [-h] [--config CONFIG] [--device DEVICE] [--overwrite] "
        "[--shards SHARDS] [--ship] [--weights-dtype {float32,float16,bfloat16}] "
        "[--benchmark DIR] CHECKPOINT [OUT_DIR]"
    ),
    "report": "usage: stoicheia report [-h] [--out OUT] RUN_FOLDER",
    "restore": (
        "usage: stoicheia restore [-h] [--config CONFIG] [--device DEVICE] "
        "[--precision {auto,fp32,bf16}] [--epidoc PATH [PATH ...]] [--batch FILE] [--jsonl] "
        "[--out OUT] [--top-k TOP_K] "
        "[--beam BEAM] [--ngram PATH] [--ngram-weight NGRAM_WEIGHT] [--parallels INDEX] "
        "[--parallels-weight PARALLELS_WEIGHT] [--decoder {fused,parallels,ngram,model}] "
        "[--min-probability MIN_PROBABILITY] [--respace] [--accents] [--repredict-supplements] "
        "[--unknown-width UNKNOWN_WIDTH] [--about-margin ABOUT_MARGIN] [--window WINDOW] "
        "[--alternatives ALTERNATIVES] [--score-supplements] [--json] [CHECKPOINT] [TEXT]"
    ),
    "serve": (
        "usage: stoicheia serve [-h] [--config CONFIG] [--device DEVICE] "
        "[--precision {auto,fp32,bf16}] [--host HOST] [--port PORT] [--parallels INDEX] "
        "[CHECKPOINT]"
    ),
}


@pytest.mark.parametrize("command", list(USAGE), ids=lambda c: c or "stoicheia")
def test_every_command_takes_the_arguments_it_took(command, capsys):
    """``--help`` answers (exit 0) and its usage line names the same arguments, metavars,
    choices and required options as before the split (whitespace aside: it wraps with the
    terminal's width)."""
    assert main([command, "--help"] if command else ["--help"]) == 0
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert " ".join(usage.split()) == USAGE[command]


@pytest.mark.parametrize(
    "argv, module",
    [
        (["convert", "--out", "o", "gold=x"], "stoicheia.commands.convert"),
        (["status", "run"], "stoicheia.commands.status"),
        (["evaluate", "c.pt", "--shards", "s"], "stoicheia.commands.evaluate"),
        (["benchmark", "c.pt", "--out", "o"], "stoicheia.commands.benchmark"),
        (["restore", "c.pt", "--top-k", "3", "καὶ [...] ἔφη"], "stoicheia.commands.restore"),
        (["report", "run"], "stoicheia.commands.report"),
        (["index", "shards"], "stoicheia.commands.index"),
        (["parallels", "καὶ τοῦ"], "stoicheia.commands.parallels"),
        (["export", "c.pt", "o"], "stoicheia.commands.export"),
        (["serve", "c.pt"], "stoicheia.serve.command"),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else None,
)
def test_each_command_runs_its_own_module(argv, module):
    """The parsed arguments name the command and its module's job; restore reads its TEXT after
    an option (intermixed parsing), and export loads the model on the CPU unless told."""
    args = build_parser().parse_args(argv)
    assert args.command == argv[0] and args.func.__module__ == module
    if argv[0] == "restore":
        assert args.text == "καὶ [...] ἔφη" and args.top_k == 3
    if hasattr(args, "device"):
        assert args.device == ("cpu" if argv[0] == "export" else "auto")


def test_the_library_never_imports_the_commands():
    """Data flows sources -> ... -> inference -> cli: no module of the library imports
    ``stoicheia.cli`` or ``stoicheia.commands`` (only they, and ``python -m stoicheia``, do)."""
    top = ("stoicheia.cli", "stoicheia.commands")
    allowed = {Path("stoicheia/cli.py"), Path("stoicheia/__main__.py")}
    found = []
    for path in sorted((REPO / "stoicheia").rglob("*.py")):
        rel = path.relative_to(REPO)
        if rel in allowed or rel.parts[:2] == ("stoicheia", "commands"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            hits = [n for n in names if any(n == t or n.startswith(t + ".") for t in top)]
            found += [f"{rel}:{node.lineno} imports {n}" for n in hits]
    assert not found, "the library imports the command line: " + "; ".join(found)


def test_help_lists_every_command(capsys):
    """``stoicheia --help`` names every command in its description and in its list (serve was
    missing from the description)."""
    commands = list(build_parser()._subparsers._group_actions[0].choices)
    assert "serve" in commands and "restore" in commands
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    described = out.split("positional arguments")[0]
    for name in commands:
        assert f"stoicheia {name}" in " ".join(described.split()), name
        assert f"    {name} " in out, name
