"""``python -m learnsched``: the same as the ``learnsched`` command."""

import sys

from .cli import main

sys.exit(main())
