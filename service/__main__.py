"""``python -m shuangkou.service``: the same as the ``shuangkou`` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
