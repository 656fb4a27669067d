"""Train Stoicheia with Composer: ``composer recipes/train.py yamls/demo.yaml [key=value ...]``.

Usage, exit status and the steps of a run: :mod:`stoicheia.train.run` (``--help``).
"""

import sys
from pathlib import Path

# The code of the checkout this script is in, even where the shared environment points elsewhere.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stoicheia.lifetime import die_with_launcher, ignore_stop_signals  # noqa: E402

# First thing: a trainer whose `composer` launcher dies (even of SIGKILL) gets SIGTERM: it saves.
die_with_launcher()

from stoicheia.train.run import main  # noqa: E402

if __name__ == "__main__":
    status = main(sys.argv[1:])
    ignore_stop_signals()  # the run is over: a late SIGTERM must not replace its status
    sys.exit(status)
