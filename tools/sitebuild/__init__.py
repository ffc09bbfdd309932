"""The pieces of ``make site`` and ``make slides`` (tools/build_site.py is the command).

One module per idea:

* :mod:`.vendor` — KaTeX and reveal.js from the npm registry (pinned, integrity-checked, cached);
* :mod:`.offline` — the one check that a page loads nothing from another site (also used by
  tools/export_html.py);
* :mod:`.links` — where a repository file appears in the site, and link rewriting;
* :mod:`.pages` — the site: notebooks and Markdown pages rendered with navigation;
* :mod:`.deck` — the slides: a lecture cut into one idea per slide, prose moved to speaker
  notes, then rendered by reveal.js;
* ``templates/`` — the HTML templates, CSS and JavaScript, as real files.
"""
