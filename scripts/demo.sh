#!/usr/bin/env bash
# The main job on real input: install, convert the shared corpus to shards, train demo.yaml.
# Extra arguments are passed to the trainer as overrides, e.g. `bash scripts/demo.sh train.max_steps=100`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
CORPUS=${STOICHEIA_CORPUS:-../shared/corpus}
if [ ! -f data/shards/stats.json ]; then
  .venv/bin/python -m stoicheia convert --out data/shards "gold=$CORPUS/perseus" "silver=$CORPUS/ud" "bronze=$CORPUS/isicily" \
    --val-work Andocides/andoc_gk.xml --val-work Colluthus/colluthus.01_gk.xml --workers "$(nproc)"
else
  echo "demo: data/shards exists; delete it to convert again"
fi
exec .venv/bin/composer recipes/train.py yamls/demo.yaml "$@"
