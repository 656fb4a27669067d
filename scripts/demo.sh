#!/usr/bin/env bash
# The main job on real input: install, convert the shared corpus to shards, train demo.yaml.
# The inscriptions whose dev digit is 4 (I.Sicily: the number's last digit; the other corpora: a
# stable hash of the file name), with their twins, are held out as the inscription dev set
# (bronze/inscription_dev: never trained on; the restoration benchmark's texts).
# Extra arguments are passed to the trainer as overrides, e.g. `bash scripts/demo.sh train.max_steps=100`.
set -euo pipefail
cd "$(dirname "$0")/.."
# Everything the demo prints is also appended to checkpoints/stoicheia-demo/console.log (the run
# folder): scripts/docs_outputs.py cuts the README's screen of the demo's output from it.
# tee -i: Ctrl-C reaches every process of the terminal's group; tee ignores it and keeps copying
# until the trainer has printed its [preempt] line (a tee killed by Ctrl-C lost that line, and the
# trainer, writing into the closed pipe, ended with status 1 instead of 130). The EXIT trap waits
# for tee, so console.log is whole when the script's status comes back.
mkdir -p checkpoints/stoicheia-demo
exec > >(tee -i -a checkpoints/stoicheia-demo/console.log) 2>&1
TEE_PID=$!
trap 'status=$?; exec >&- 2>&-; wait "$TEE_PID"; exit "$status"' EXIT
bash scripts/setup.sh
CORPUS=${STOICHEIA_CORPUS:-../shared/corpus}
if [ ! -f data/shards/stats.json ]; then
  # bronze: the five EpiDoc corpora of inscriptions (Sicily, the Black Sea, Cyrenaica, Crete,
  # Israel/Palestine); --skip-bad: IIP ships 5 files with unresolved merge-conflict markers,
  # named and counted in stats.json, the rest converted
  .venv/bin/python -m stoicheia convert --out data/shards "gold=$CORPUS/perseus" "silver=$CORPUS/ud" \
    "bronze=$CORPUS/isicily" "bronze=$CORPUS/iospe" "bronze=$CORPUS/igcyr" "bronze=$CORPUS/cretan" "bronze=$CORPUS/iip" \
    --val-work Andocides/andoc_gk.xml --val-work Colluthus/colluthus.01_gk.xml --inscription-dev-digit 4 \
    --skip-bad --workers "$(nproc)"
else
  echo "demo: data/shards exists; delete it to convert again"
fi
# stoicheia.launch is Composer's launcher with Ctrl-C passed on to the trainer, which saves the
# batch in progress and exits 130 (docs/runs.md); `composer` itself prints a traceback there.
.venv/bin/python -m stoicheia.launch recipes/train.py yamls/demo.yaml "$@"
# How well it restores: the benchmark on an even sample of 80 inscriptions of the inscription
# dev set (docs/measuring-restoration.md; every corpus in proportion), with the letter 5-gram and
# the parallels beside the network, fused into the search at the weights that do best there;
# --save-fusion leaves ngram.npz and fusion.json beside the checkpoint, which restore then uses.
# The whole dev set (568 inscriptions, about four times as long) is one command away:
#   .venv/bin/python -m stoicheia benchmark checkpoints/stoicheia-demo/best.pt --out benchmark/full
if [ ! -f benchmark/stoicheia-demo/summary.txt ] || [ checkpoints/stoicheia-demo/best.pt -nt benchmark/stoicheia-demo/summary.txt ]; then
  echo "demo: measuring restoration on 80 inscriptions of the dev set (stoicheia benchmark --sample 80)"
  .venv/bin/python -m stoicheia benchmark checkpoints/stoicheia-demo/best.pt --shards data/shards \
    --out benchmark/stoicheia-demo --save-fusion --sample 80
else
  echo "demo: benchmark/stoicheia-demo is newer than best.pt; delete it to measure again"
  cat benchmark/stoicheia-demo/summary.txt
fi
# The demo ends by restoring a held-out sentence (Andocides, a work the model never saw) with a
# lacuna of uncertain width ([5±3]; the truth is δε|σπότου, 6 letters) and one of known width.
echo "demo: restoring a held-out sentence with the best checkpoint"
.venv/bin/python -m stoicheia restore checkpoints/stoicheia-demo/best.pt --top-k 3 \
  "Λυδὸς ὁ Φερεκλέους τοῦ Θημακέως ἐμήνυσε μυστήρια γίγνεσθαι ἐν τῇ οἰκίᾳ Φερεκλέους τοῦ δε[5±3] τοῦ ἑαυτοῦ, ἐν Θημακῷ· καὶ ἀπογράφει τούς τε ἄλλους, καὶ τὸν πατέρα ἔφη τὸν ἐμὸν παρ[...]αι μέν"
