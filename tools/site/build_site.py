"""Build the course as a static site, and every lecture as a reveal.js slide deck, for offline use.

    python -m tools.site.build_site site [OUT]      # default build/site: README + every notebook + decks
    python -m tools.site.build_site site OUT --no-solutions   # leave solutions/ out of the site
    python -m tools.site.build_site site OUT --lite   # with the browser edition in OUT/lite (make site)
    python -m tools.site.build_site slides [OUT]    # default build/slides: the decks alone

``make site`` publishes the solutions by default (``make site SOLUTIONS=0`` leaves them out: an
instructor whose students use the site should not hand them the answers). The site links each
lecture to its deck (``slides/NN_topic.html``) and the home page to the deck index.

What "offline" means here: no page loads anything from another site. nbconvert's templates
load require.js, MathJax, mermaid, jQuery and reveal.js from CDNs; our templates drop them.
Formulas are typeset by KaTeX and slides run on reveal.js, both taken from the npm registry at
build time (pinned, integrity-checked, cached in ``build/vendor/``) and copied into the site
with their licences; ``tools/site/offline_html.py`` checks every page. The one exception is the
browser edition in ``lite/`` (``--lite``, ``tools/site/build_lite.py``): JupyterLite loads Pyodide from
a CDN when a notebook starts. The interactive attention views carry their own JavaScript
(course_lib.viz).

The work is done by the package ``tools/site`` (one module per idea, templates as files):
``vendor`` (npm), ``links``,
``pages`` (the site), ``deck`` (the slides).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tools.site.deck import build_slides
from tools.site.links import ROOT, BrokenLinks
from tools.site.offline_html import EXTERNAL, check_offline
from tools.site.pages import build_site

__all__ = ["EXTERNAL", "BrokenLinks", "build_site", "build_slides", "check_offline"]


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):  # the usage is the module's docstring
        print(__doc__)
        return 0
    solutions = "--no-solutions" not in argv
    lite = "--lite" in argv
    args = [a for a in argv if a not in ("--no-solutions", "--lite")]
    if not args or args[0] not in ("site", "slides") or len(args) > 2:
        print(__doc__)
        return 2
    what = args[0]
    out = Path(args[1]) if len(args) == 2 else ROOT / "build" / what
    try:
        if what == "site":
            build_site(out, solutions=solutions, lite=lite)
        else:
            build_slides(out, solutions=solutions)
    except BrokenLinks as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"open {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
