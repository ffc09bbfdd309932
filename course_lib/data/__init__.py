"""Generated corpora for the lectures that train models (translation, pretraining).

Everything here is produced offline from small hand-written grammars with a seed, so every
run of a notebook sees exactly the same data.
"""

from .translation import *  # noqa: F403
