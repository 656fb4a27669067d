"""Argument checks of the ``stoicheia`` command, shared by its subcommands.

Every value is checked where argparse reads it (``type=`` functions), so each command refuses a
bad value the same way and before any file is read: one line on stderr,
``stoicheia COMMAND: error: argument --NAME: WHAT IS WRONG; THE FIX``, and exit status 2
(:class:`OneLineParser`; argparse's own errors, such as a missing argument, get the same one
line). Output folders are checked before any work starts (:func:`out_dir_problem`).

Which model ``restore`` and ``serve`` run with when their CHECKPOINT may be left out
(:func:`choose_model`): the one given, else the shipped base model
(:mod:`stoicheia.inference.shipped`), said in one note on stderr. ``restore`` reads
``CHECKPOINT [TEXT]``, so ``stoicheia restore "ἔδοξε τῇ βουλῇ [....]"`` gives one positional:
it is the TEXT, with the shipped model, unless it names an existing file or folder (a
checkpoint, run folder or export folder) or an object-store URI. A word that is neither an
existing path nor Greek text (``checkpoints/typo/best.pt``) stays the CHECKPOINT, which the
loader then names as missing: never taken for a text to restore.
"""

from __future__ import annotations

import argparse
import difflib
import math
import os
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _close(word: str, known: Any) -> str | None:
    """The one of ``known`` that ``word`` is most likely a typo of (``difflib``'s ratio at
    least 0.6), or ``None``."""
    found = difflib.get_close_matches(word, [str(k) for k in known], n=1)
    return found[0] if found else None


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line (no usage block) and exit 2.

    A mistyped command or choice (``stoicheia restor``, ``--decoder beem``) and a mistyped
    option (``--top-kk``) get "did you mean ...?" in that line, the closest of the known
    names by :func:`difflib.get_close_matches` (argparse of Python 3.11 suggests nothing)."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError:
            guess = _close(str(value), action.choices or ())
            if guess is None:
                raise
            if isinstance(action, argparse._SubParsersAction):
                raise argparse.ArgumentError(
                    None, f"{str(value)!r} is not a command; did you mean {guess!r}?"
                ) from None
            raise argparse.ArgumentError(
                action,
                f"invalid choice: {value!r}; did you mean {guess!r}? (choose from "
                f"{', '.join(map(repr, action.choices))})",
            ) from None

    def error(self, message: str):  # type: ignore[override]
        if message.startswith("unrecognized arguments: "):
            words = message.removeprefix("unrecognized arguments: ").split(";")[0].split()
            options = [opt for a in self._actions for opt in a.option_strings]
            guesses = {
                w.split("=")[0]: g
                for w in words
                if w.startswith("-") and (g := _close(w.split("=")[0], options))
            }
            if len(guesses) == 1:
                message += f"; did you mean {next(iter(guesses.values()))}?"
            elif guesses:
                message += (
                    "; did you mean "
                    + ", ".join(f"{g} (for {w})" for w, g in guesses.items())
                    + "?"
                )
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help lists the arguments)\n")


def int_in(lo: int, hi: int | None = None, meaning: str = "") -> Callable[[str], int]:
    """A ``type=`` function: a whole number from ``lo`` to ``hi`` (``None``: no upper bound).

    ``meaning`` (what the number is, and its default) ends the error message."""
    span = f"from {lo:,} to {hi:,}" if hi is not None else f"of at least {lo:,}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a whole number; give one {span}{meaning}"
            ) from None
        if value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(
                f"{text} is out of range; give a whole number {span}{meaning}"
            )
        return value

    parse.__name__ = "whole number"
    return parse


def float_in(
    lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False, meaning: str = ""
) -> Callable[[str], float]:
    """A ``type=`` function: a finite number in the interval from ``lo`` to ``hi`` (``lo_open``/
    ``hi_open``: the bound itself excluded); ``nan`` and ``inf`` are refused."""
    span = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a number; give one in {span}{meaning}"
            ) from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(
                f"{text} is not a finite number; give one in {span}{meaning}"
            )
        if not (
            (value > lo if lo_open else value >= lo) and (value < hi if hi_open else value <= hi)
        ):
            raise argparse.ArgumentTypeError(
                f"{text} is out of range; give a number in {span}{meaning}"
            )
        return value

    parse.__name__ = "number"
    return parse


def device_name(text: str) -> str:
    """A ``type=`` function for ``--device``: ``auto`` or a device this machine has (checked by
    :func:`stoicheia.inference.loading.resolve_device`, whose message lists those it has)."""
    from stoicheia.inference.loading import ModelLoadError, resolve_device

    try:
        resolve_device(text)
    except ModelLoadError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def out_dir_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be used as an output folder, or ``None``: it is a file, a folder
    above it is a file, or the folder (or the nearest existing one above it) is not writable."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        return f"{p} is a file, not a folder; give the path of a folder (new or empty)"
    above = p
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        return f"{p}: {above} is a file, so no folder can be made under it; give another path"
    if not os.access(above, os.W_OK | os.X_OK):
        return f"{p}: no permission to write in {above}; give a folder you can write to"
    return None


__all__ = [
    "OneLineParser",
    "choose_model",
    "device_name",
    "float_in",
    "int_in",
    "looks_like_text",
    "names_a_model",
    "out_dir_problem",
]


def fusion_weights(value: str) -> list[float]:
    """``--fusion-weights``: comma-separated weights in [0, 1] (``""``: none), in the order given.
    Raises ``argparse.ArgumentTypeError`` naming the bad item."""
    out: list[float] = []
    for item in (x.strip() for x in value.split(",")):
        if not item:
            continue
        try:
            w = float(item)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{item!r} is not a number; "
                "give weights in [0, 1] separated by commas, e.g. 0,0.5,1"
            ) from None
        if not 0.0 <= w <= 1.0:
            raise argparse.ArgumentTypeError(
                f"{item} is outside [0, 1] (0: the model alone, 1: the n-gram's letters)"
            )
        out.append(w)
    return list(dict.fromkeys(out))


def _fail(command: str, message: str) -> int:
    print(f"stoicheia {command}: error: {message}", file=sys.stderr)
    return 2


def _exists(path: str) -> bool:
    if "\n" in path or len(path.encode("utf-8")) > 4096:
        return False
    try:
        return Path(path).exists()
    except (OSError, ValueError):  # a name too long, a NUL character
        return False


def looks_like_text(word: str) -> bool:
    """Whether ``word`` reads as a text rather than a path: it holds a Greek letter, is ``-``
    (stdin), or holds a Leiden bracket or several words (not a checkpoint's ``.pt``): a Latin
    or transliterated text is then refused as a text ("no Greek letter"), not taken for a
    missing checkpoint."""
    if word == "-" or any(unicodedata.name(c, "").startswith("GREEK") for c in word):
        return True
    if "[" in word or "]" in word:
        return True
    return any(c.isspace() for c in word.strip()) and not word.endswith((".pt", ".safetensors"))


def names_a_model(word: str) -> bool:
    """Whether ``word`` is meant as a CHECKPOINT: an existing file or folder, or an
    object-store URI (``s3://``, ``gs://``, ``oci://``)."""
    return "://" in word or _exists(word)


def choose_model(
    args: argparse.Namespace, command: str, takes_text: bool = False, defer_note: bool = False
) -> int | None:
    """Settle ``args.checkpoint`` (and, when ``takes_text``, ``args.text``): a lone positional
    that names no existing file or folder but reads as Greek is the text; no checkpoint means
    the shipped model, said in one note on stderr (``defer_note``: kept in
    ``args.shipped_note`` instead, for the command to print once its input is checked, so
    that a bad input is one error line). A checkpoint that does not exist is left to
    the loader, which names it (after the text and the options are checked, as before). Returns
    ``None`` to go on, or the exit status 2 after one line on stderr (Greek words typed without
    quotes, no shipped model)."""
    from stoicheia.inference.shipped import shipped_dir, shipped_note

    given = args.checkpoint
    text = getattr(args, "text", None) if takes_text else None
    if takes_text and given is not None and not names_a_model(given) and looks_like_text(given):
        if text is not None:  # two Greek words: the shell split an unquoted text
            return _fail(
                command,
                f'a text of several words goes in quotes: stoicheia {command} "{given} {text}" '
                f'(the shipped model), or stoicheia {command} CHECKPOINT "TEXT"',
            )
        args.text, given = given, None
    if given is None:
        folder = shipped_dir()
        if folder is None:
            return _fail(
                command,
                "no CHECKPOINT given and no shipped model in stoicheia/base_model (a checkout "
                "without it: `stoicheia export RUN_FOLDER --ship` writes it); give a checkpoint, "
                "run folder or export folder",
            )
        args.checkpoint = str(folder)
        if defer_note:
            args.shipped_note = shipped_note(command)
        else:
            print(shipped_note(command), file=sys.stderr)
    return None
