"""Allow ``python -m pflux.cli``."""

import sys

from pflux.cli import main

sys.exit(main())
