"""Quieten exactly one third-party logger, at ``import course_lib``.

bitsandbytes (lecture 15's reference for NF4, and imported by peft whenever it is installed)
warns at import, on CPUs with AVX512-BF16, that an optional kernel it would download from a hub
is missing. The course never uses that kernel, and the warning would land on the stderr of every
notebook that imports peft (which nbval compares). Nothing else is changed.
"""

import logging

logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)
