"""``python -m stoicheia ...`` is the ``stoicheia`` command (run from a checkout, it uses that
checkout's code)."""

import sys

from stoicheia.cli import main

sys.exit(main())
