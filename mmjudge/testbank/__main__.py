"""``python -m mmjudge.testbank``: see :mod:`mmjudge.testbank.command`."""

import sys

from mmjudge.testbank.command import main

sys.exit(main())
