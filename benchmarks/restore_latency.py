"""Benchmark: latency of ``restore`` on the same inscription-like texts, at top-1, top-5 and top-20.

    .venv/bin/python benchmarks/restore_latency.py [--checkpoint CKPT] [--repeats 3] [--threads 2]
        [--alternatives 0]

Prints figures; asserts nothing. Without ``--checkpoint`` the model is ``yamls/demo.yaml``'s
shape (d96, 4 layers, 512-slot rows) with random weights: the compute per forward pass is the
demo model's, the restorations are meaningless (a trained model's BLANK may end gaps earlier,
so its step count can differ a little). The text is the one of issue 15 §5: 235 letters with
three gaps, ``[....]``, ``[-ca.6-]`` and ``[---]``. Each figure is the median of ``--repeats``
runs after one warm-up, with ``torch.set_num_threads(--threads)``.

``--alternatives`` is passed to ``restore`` when it accepts it (each gap's own top-k costs one
beam over that gap); to compare with a checkout from before per-gap alternatives existed, run
this script with ``PYTHONPATH`` pointing at that checkout and ``--alternatives 0`` here.

``--page`` times the page's own request instead: ``POST /restore`` of the app ``stoicheia
serve`` runs (in process, JSON in and out), the same text of three gaps, top-5, with the
decoder the server uses by default (``fusion.json`` beside ``--checkpoint``: the n-gram and the
parallels). ``--parallels INDEX`` (and ``--ngram FILE``) give them to a model without a
``fusion.json``, as its ``data.shard_root`` would: then the page is timed twice, with the
parallels mixed in letter by letter (before issue 31, at ``--parallels-weight``) and as whole
readings (after), on the same warm process. Before/after across checkouts: run it with
``PYTHONPATH`` at each.
"""

from __future__ import annotations

import os as _os
import sys as _sys
from pathlib import Path as _Path

# Use the code of the checkout given by PYTHONPATH if any, else the one this script is in.
if not _os.environ.get("PYTHONPATH"):
    _sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import inspect  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

TEXT = (
    "ἔδοξε τῇ βουλῇ καὶ τῷ δήμῳ ἐπειδὴ Ἀπολλόδωρος Ἀρτεμιδώρου εὔνους ὢν διατελεῖ τῷ δήμῳ "
    "καὶ πρ[....] καὶ λέγων καὶ πράττων ἀγαθὸν ὅ τι ἂν δύνηται ὑπὲρ τῆς πόλεως, [-ca.6-] "
    "ἐπαινέσαι αὐτὸν καὶ στεφανῶσαι χρυσῷ στεφάνῳ ἀρετῆς ἕνεκα καὶ εὐνοίας τῆς εἰς τὸν δῆμον "
    "[---] δὲ τὸ ψήφισμα ἐν στήλῃ λιθίνῃ"
)


def _model(checkpoint: str | None):
    from stoicheia.inference.loading import LoadedModel, load_model

    if checkpoint:
        return load_model(checkpoint, device="cpu")
    from stoicheia.model.config import EncoderConfig
    from stoicheia.model.encoder import CharBertEncoder

    torch.manual_seed(0)
    enc = CharBertEncoder(EncoderConfig(d_model=96, n_layers=4, n_heads=4, char_window=128)).eval()
    return LoadedModel(enc, {"data": {"seq_len": 512}}, "random demo-shape model", "checkpoint")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--alternatives",
        type=int,
        default=None,
        help="each gap's own top-k (default: restore's, top-k)",
    )
    ap.add_argument("--top-k", type=int, nargs="+", default=[1, 5, 20])
    ap.add_argument("--page", action="store_true", help="time POST /restore of the page")
    ap.add_argument("--parallels", help="with --page: a parallels index folder")
    ap.add_argument("--ngram", help="with --page: an n-gram file (ngram.npz)")
    ap.add_argument("--parallels-weight", type=float, default=0.9)
    args = ap.parse_args()
    if args.page:
        torch.set_num_threads(args.threads)
        return page(args)
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    from stoicheia.inference import restore as R

    model = _model(args.checkpoint)
    print(
        f"code: {_Path(R.__file__).resolve().parent}; model: {model.source}; "
        f"import + load {time.perf_counter() - t0:.2f} s"
    )
    from stoicheia.text.encode import text_to_planes

    print(
        f"text: {len(text_to_planes(TEXT)[0])} letters, 3 gaps; {args.threads} threads; "
        f"median of {args.repeats}"
    )
    kwargs = {}
    if args.alternatives is not None and "alternatives" in inspect.signature(R.restore).parameters:
        kwargs["alternatives"] = args.alternatives
    for k in args.top_k:
        R.restore(model, TEXT, top_k=k, **kwargs)  # warm-up
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            res = R.restore(model, TEXT, top_k=k, **kwargs)
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        print(
            f"top-{k:<3} {med:7.3f} s   {len(res.restorations) / med:7.1f} restorations/s   "
            f"{1 / med:6.2f} texts/s"
        )


def _timed(call, repeats: int) -> float:
    call()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def page(args: argparse.Namespace) -> None:
    """``--page``: the median seconds of ``POST /restore`` for the text of three gaps (module
    docstring), per way of decoding."""
    from fastapi.testclient import TestClient

    import stoicheia.inference.restore as R
    from stoicheia.serve.app import create_app

    model = _model(args.checkpoint)
    client = TestClient(create_app(model))
    print(f"code: {_Path(R.__file__).resolve().parent}; model: {model.source}")
    print(f"page: POST /restore, 3 gaps, top-5; {args.threads} threads; median of {args.repeats}")

    def post() -> dict:
        got = client.post("/restore", json={"text": TEXT, "top_k": 5})
        got.raise_for_status()
        return got.json()

    if not args.parallels:
        med = _timed(post, args.repeats)
        notes = "; ".join(post()["notes"])
        print(f"page (server's default decoder) {med:7.3f} s   notes: {notes}")
        return
    from stoicheia.inference.restore.fusion_file import find_fusion

    ways = {"parallels letter by letter (before)": None, "whole readings (after)": "readings"}
    for label, way in ways.items():
        fusion = find_fusion(
            model,
            args.ngram,
            None,
            parallels=args.parallels,
            parallels_weight=args.parallels_weight,
        )
        if way is None and fusion is not None and hasattr(fusion, "readings"):
            fusion.readings = None  # the letter-by-letter prior of before
        original = R.restore

        def restore_with(*a, fusion=fusion, original=original, **kw):
            kw["fusion"] = fusion
            return original(*a, **kw)

        R.restore = restore_with  # create_app imports it from the package: the page uses it
        try:
            client = TestClient(create_app(model))
            med = _timed(post, args.repeats)
        finally:
            R.restore = original
        print(f"page, {label:<38} {med:7.3f} s")


if __name__ == "__main__":
    main()
