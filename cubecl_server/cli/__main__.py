"""``python -m cubecl_server.cli``."""

import sys

from cubecl_server.cli import main

sys.exit(main())
