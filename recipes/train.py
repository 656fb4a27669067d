"""Train Stoicheia with Composer.

    composer recipes/train.py yamls/demo.yaml [section.key=value ...]

``composer`` starts one process per GPU (or one on a CPU machine); each reads the same YAML.
Command-line ``key=value`` pairs override the YAML (e.g. ``train.lr=1e-3 data.num_workers=4``).
An autoresumed run (same ``run_name`` and ``train.save_folder``) continues from its newest
complete checkpoint.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Use the code of the checkout this script is in, even where the shared virtual environment's
# editable install points at another checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str]) -> int:
    if len(argv) < 1 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    from stoicheia.config import ConfigError, load_config

    try:
        cfg = load_config(argv[0], argv[1:])
    except ConfigError as err:
        print(f"train.py: config error: {err}", file=sys.stderr)
        return 2
    from stoicheia.train.builder import build_trainer, fit_run

    try:
        built = build_trainer(cfg)
    except (FileNotFoundError, ValueError) as err:
        print(f"train.py: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:
        if "size mismatch" in str(err) or "Missing key" in str(err) or "Unexpected key" in str(err):
            print(
                f"train.py: the checkpoint in {cfg.train.save_folder.format(run_name=cfg.run_name)} was made by a "
                "model of another shape; use another run_name (or delete that folder) to start a new run, "
                f"or restore the model.* settings it was trained with. "
                f"({str(err).splitlines()[0]})",
                file=sys.stderr,
            )
        else:
            print(f"train.py: {err}", file=sys.stderr)
        return 2
    fit_run(built)
    built.trainer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
