"""``python -m g2gt`` = the ``g2gt`` command."""

import sys

from .cli.main import main

sys.exit(main())
