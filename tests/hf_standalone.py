"""An export folder used as a notebook user would: ``transformers`` and the folder, no stoicheia.

Run by ``tests/test_inference.py`` in a fresh interpreter (``python -I``, another working
folder, under ``tests/no_stoicheia.py``, which refuses every import of stoicheia):
``hf_standalone.py FOLDER TEXTS_JSON OUT`` loads the tokenizer and the model with
``trust_remote_code``, encodes the texts of ``TEXTS_JSON`` (a JSON list of str), runs the
model, reads its letters back, and writes ``OUT.npz`` (planes, batch, logits) and
``OUT.json`` (counts, decoded letters, rendered texts, a long text encoded whole (with its
warning) and truncated, the errors of refused options, the stoicheia modules imported).
"""

import json
import logging
import sys

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer


def main(folder: str, texts_file: str, out: str) -> None:
    with open(texts_file, encoding="utf-8") as f:
        texts = json.load(f)
    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    warned = []  # the tokenizer's warnings, as a notebook user sees them (transformers' logger)

    class Keep(logging.Handler):
        def emit(self, record):
            warned.append(record.getMessage())

    logging.getLogger("transformers").addHandler(Keep(logging.WARNING))
    model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
    arrays = {}
    meta = {"tokenizer": type(tok).__name__, "dropped": [], "leiden": []}
    for i, text in enumerate(texts):
        enc = tok.encode_planes(text)
        for name, plane in enc.planes.to_dict().items():
            arrays[f"planes/{i}/{name}"] = plane
        meta["dropped"].append(dict(enc.dropped))
        meta["leiden"].append(dict(enc.leiden))
    batch = tok(texts, return_tensors="pt", return_planes=True)
    with torch.no_grad():
        logits = model(**batch)
    arrays.update({f"batch/{k}": v.numpy() for k, v in batch.items()})
    arrays.update({f"logits/{k}": v.numpy() for k, v in logits.items()})
    meta["letters"] = tok.batch_decode(logits["char"].argmax(-1), skip_special_tokens=True)
    meta["rendered"] = tok.render(logits, batch)
    meta["one_text"] = tok(texts[0])["input_ids"]
    # a text longer than the model's rows: encoded whole with one warning (per tokenizer: the
    # batch above had its own), cut only when asked
    meta["batch_warnings"] = [w for w in warned if "model_max_length" in w]
    warned.clear()
    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    long_text = " ".join(texts[:40])
    meta["model_max_length"] = tok.model_max_length
    meta["long_whole"] = len(tok(long_text)["input_ids"])
    meta["long_again"] = len(tok([long_text, long_text])["input_ids"][1])
    meta["long_cut"] = tok(long_text, truncation=True)["input_ids"]
    meta["long_cut_5"] = tok(long_text, truncation=True, max_length=5)["input_ids"]
    tok.truncation_side = "left"
    meta["long_cut_left_5"] = tok(long_text, truncation=True, max_length=5)["input_ids"]
    tok.truncation_side = "right"
    meta["long_planes"] = tok.encode_planes(long_text).planes.chars.tolist()
    meta["warnings"] = [w for w in warned if "model_max_length" in w]
    meta["errors"] = []
    for args, kwargs in [
        ((texts[0],), {"stride": 2}),
        (("123 abc",), {}),
        ((texts,), {"padding": "max_length"}),
        (("α[β",), {"strict": True}),
        ((texts[0],), {"max_length": 5}),
    ]:
        try:
            tok(*args, **kwargs)
            meta["errors"].append(None)
        except Exception as err:  # the error a notebook user would see
            meta["errors"].append(f"{type(err).__name__}: {err}")
    meta["modules"] = sorted(m for m in sys.modules if m.split(".")[0] == "stoicheia")
    np.savez(out + ".npz", **arrays)
    with open(out + ".json", "w", encoding="utf-8") as f:
        json.dump(meta, f, ensure_ascii=False)


if __name__ == "__main__":
    main(*sys.argv[1:4])
