"""``python -m jaxdp.cli``."""

import sys

from . import main

sys.exit(main())
