"""``python -m tools.grade NOTEBOOK.ipynb`` (or a folder, ``--csv``): see tools/grading/cli.py."""

import sys

from tools.grading.cli import main

sys.exit(main(sys.argv[1:]))
