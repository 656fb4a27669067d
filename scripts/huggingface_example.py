"""The notebook example of docs/huggingface.md: an export folder and ``transformers``, no stoicheia.

    python scripts/huggingface_example.py exported/stoicheia-demo

Everything below this docstring is what docs/huggingface.md shows (a test checks that they
agree, and runs this script on a tiny export with every import of stoicheia refused).
"""

import sys
import unicodedata

import torch
from transformers import AutoModel, AutoTokenizer

folder = sys.argv[1] if len(sys.argv) > 1 else "exported/stoicheia-demo"
tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()

texts = [
    "θεοῖς πᾶσι [.]ἱ στρατευσάμενοι κατὰ ναῦν Ἁλαισῖνοι",  # ISic000612, its [ο] lost
    "μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχι[..]ος οὐλομένην",
]
batch = tok(texts, return_tensors="pt", return_planes=True)
print({k: tuple(v.shape) for k, v in batch.items()})
print(batch["input_ids"][1].tolist())
print(tok.decode(batch["input_ids"][1]))
# any Unicode spelling gives the same inputs
print(tok(unicodedata.normalize("NFD", texts[1])) == tok(unicodedata.normalize("NFC", texts[1])))

with torch.no_grad():
    logits = model(**batch)
print({k: tuple(v.shape) for k, v in logits.items()})
# the most likely letter of every slot of the text (padding left out)
best = logits["char"].argmax(-1)
for ids, mask in zip(best, batch["attention_mask"], strict=True):
    print(tok.decode(ids[mask == 1], skip_special_tokens=True))
# the text with what it lacks (lost letters, unknown accents, ...) from the model
for line in tok.render(logits, batch):
    print(line)

# the three most likely letters of each lost letter of the second text
probs = logits["char"][1].softmax(-1)
for i in (batch["input_ids"][1] == tok.mask_token_id).nonzero().flatten().tolist():
    top = probs[i].topk(3)
    letters = tok.convert_ids_to_tokens(top.indices.tolist())
    print(i, [(c, round(q, 3)) for c, q in zip(letters, top.values.tolist(), strict=True)])
