"""`python -m kernelkit ...`: the `kernelkit` command line, where the console script is not on PATH."""
import sys

from .cli import main

sys.exit(main())
