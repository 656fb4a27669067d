"""An export folder used as a notebook user would: ``transformers`` and the folder, no stoicheia.

Run by ``tests/test_inference.py`` in a fresh interpreter (``python -I``, another working
folder, under ``tests/no_stoicheia.py``, which refuses every import of stoicheia):
``hf_standalone.py FOLDER TEXTS_JSON OUT`` loads the tokenizer and the model with
``trust_remote_code``, encodes the texts of ``TEXTS_JSON`` (a JSON list of str), runs the
model, reads its letters back, and writes ``OUT.npz`` (planes, batch, logits) and
``OUT.json`` (counts, decoded letters, rendered texts, the stoicheia modules imported).
"""

import json
import sys

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer


def main(folder: str, texts_file: str, out: str) -> None:
    with open(texts_file, encoding="utf-8") as f:
        texts = json.load(f)
    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
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
    meta["errors"] = []
    for args, kwargs in [((texts[0],), {"truncation": True}), (("123 abc",), {}),
                         ((texts,), {"padding": "max_length"}), (("α[β",), {"strict": True})]:
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
