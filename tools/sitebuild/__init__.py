"""The pieces of ``make site`` and ``make slides`` (``python -m tools.build_site`` is the command).

One module per idea:

* :mod:`.vendor` — KaTeX and reveal.js from the npm registry (pinned, integrity-checked, cached);
* the offline check and the CDN-free template base are ``tools/offline_html.py``, shared with
  tools/export_html.py;
* :mod:`.links` — where a repository file appears in the site, and link rewriting;
* :mod:`.pages` — the site: notebooks and Markdown pages rendered with navigation;
* :mod:`.deck` — the slides: a lecture cut into one idea per slide, prose moved to speaker
  notes, then rendered by reveal.js;
* ``templates/`` — the HTML templates, CSS and JavaScript, as real files.
"""
