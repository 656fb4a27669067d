"""Train Stoicheia with Composer.

    composer recipes/train.py yamls/demo.yaml [section.key=value ...]

``composer`` starts one process per GPU (or one on a CPU machine); each reads the same YAML.
Command-line ``key=value`` pairs override the YAML (e.g. ``train.lr=1e-3 data.num_workers=4``).
An autoresumed run (same ``run_name`` and ``train.save_folder``) continues from its newest
complete checkpoint.
"""

from __future__ import annotations

import sys


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
    except FileNotFoundError as err:
        print(f"train.py: {err}", file=sys.stderr)
        return 2
    fit_run(built)
    built.trainer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
