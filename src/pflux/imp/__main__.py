"""``python -m pflux.imp``: the same as ``pflux-imp``."""

import sys

from pflux.imp.main import main

sys.exit(main())
