"""Pictures of attention: static matplotlib plots, and interactive views (see their modules)."""

from .plots import *  # noqa: F403
from .views import *  # noqa: F403
from .widgets import *  # noqa: F403
