"""The course as web pages: ``make site``, ``make slides``, ``make lite``, one module per idea:

* :mod:`.build_site` — the command (``python -m tools.site.build_site site|slides OUT``);
* :mod:`.build_lite` — the browser edition (JupyterLite, ``make lite``);
* :mod:`.export_html` — one notebook as an offline HTML page;
* :mod:`.offline_html` — the offline check and the CDN-free template base;
* :mod:`.vendor` — KaTeX and reveal.js from the npm registry (pinned, integrity-checked, cached);
* :mod:`.rendering` — what pages, decks and quiz pages are made of: templates, Markdown to
  HTML, highlighted code, slide parts, the notebooks as shown (imported by the three builders,
  importing none of them);
* :mod:`.links` — where a repository file appears in the site, and link rewriting;
* :mod:`.pages` — the site: notebooks and Markdown pages rendered with navigation;
* :mod:`.deck` — the slides: a lecture cut into one idea per slide, prose moved to speaker
  notes, then rendered by reveal.js;
* :mod:`.quiz` — the concept quizzes as site pages and deck slides;
* ``templates/`` — the HTML templates, CSS and JavaScript, as real files.
"""
