"""``python -m placement.api.cli``: the same as the ``placement`` script."""

import sys

from placement.api.cli.entry import main

sys.exit(main())
