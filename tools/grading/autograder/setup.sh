#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (with network):
# Python >= 3.11, a virtual environment outside /autograder with the course's pinned packages,
# and the course (course/, from this zip) installed into it as the Makefile does.
# Choose Gradescope's Ubuntu 24.04 base image (Python 3.12); 22.04's Python 3.10 is too old.
set -euo pipefail
SOURCE="${AUTOGRADER_ROOT:-/autograder}/source"
VENV="${AUTOGRADER_VENV:-/opt/attention-course/venv}"
apt-get install -y --no-install-recommends python3 python3-venv util-linux
PY=""
for candidate in python3.14 python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        PY="$(command -v "$candidate")"
        break
    fi
done
if [ -z "$PY" ]; then
    echo "setup.sh: the course needs Python 3.11 or newer; this image has $(python3 --version 2>&1)." >&2
    echo "Choose Gradescope's Ubuntu 24.04 base image (Python 3.12) in the autograder settings." >&2
    exit 1
fi
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet pip==26.3
# torch's CPU build (the course's pin, 2.13.0): PyPI's Linux wheel would pull ~1.5 GB of CUDA
# libraries that the grader never uses.
"$VENV/bin/python" -m pip install --extra-index-url https://download.pytorch.org/whl/cpu \
    -r "$SOURCE/course/requirements.txt"
"$VENV/bin/python" -m pip install --no-deps -r "$SOURCE/course/requirements-nodeps.txt"
# Editable, as `make venv` installs it: a copy in site-packages would put the checks where the
# sandbox (which mounts the virtual environment read-only) could read them.
"$VENV/bin/python" -m pip install --no-deps --no-build-isolation -e "$SOURCE/course"
# Say in the build log whether the grader's sandbox can start in this image.
cd "$SOURCE/course" && PYTHONPATH="$SOURCE/course" "$VENV/bin/python" -m tools.grading.gradescope check
