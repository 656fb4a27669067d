"""``python -m stoicheia ...`` is the ``stoicheia`` command (run from a checkout, it uses that
checkout's code)."""

import sys

try:
    from stoicheia.cli import main
except KeyboardInterrupt:  # Ctrl-C while Python loads the command: no traceback
    print("stoicheia: interrupted (Ctrl-C)", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
