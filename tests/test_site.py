"""`make site` and `make slides`, opened in headless Chromium with the network off.

The site is built into a temporary folder (lecture 09 is executed, so its interactive views are
in it), then crawled from ``index.html``: every page reached by an internal link is opened; the
test fails on a link to a file or an anchor that does not exist, a link that leaves the site
for another local file, an image that does not load, a console error in any frame, a formula
KaTeX could not typeset or left as raw TeX, or any request to another host. One slide deck is
opened and stepped through to its last slide with the same checks, and every slide of every
deck is shown and measured: none may overflow its 16:9 frame.

Skipped, with a message, only where no Chromium is installed (.ci/run installs Debian's
``chromium`` package). Building needs ``npm`` the first time (KaTeX and reveal.js come from the
npm registry and are cached in build/vendor/).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from _browser import Browser

from tools.notebooks import add_slide_metadata
from tools.site import build_site

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # `make slow`, not `make unit`

PAGE_TIMEOUT = 60  # seconds for one page to load and typeset (2 busy cores, large pages)
DECK = "01_softmax.html"

# Run in the page: is it loaded and typeset, what does it link to, what went wrong?
PAGE_STATE_JS = r"""(() => {
  const root = document.documentElement;
  const skip = "script, style, pre, code, textarea, .katex, .katex-error";
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const rawTex = [];
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest(skip)) continue;
    const text = node.textContent;
    if (/\$\$|\\\(|\\\[|\$[^\s$][^$]*\$|\\(frac|sqrt|sum|mathbb|operatorname)\b/.test(text))
      rawTex.push(text.trim().slice(0, 100));
  }
  return {
    url: document.URL,
    ready: document.readyState === "complete" && !!root.dataset.math,
    math: root.dataset.math || null,
    formulas: document.querySelectorAll(".katex").length,
    katexErrors: Array.from(document.querySelectorAll(".katex-error"))
      .map(e => (e.getAttribute("title") || e.textContent).slice(0, 120)),
    rawTex: rawTex.slice(0, 5),
    links: Array.from(document.querySelectorAll("a[href]")).map(a => a.href),
    ids: Array.from(document.querySelectorAll("[id], a[name]")).map(e => e.id || e.name),
    images: Array.from(document.images).map(i => ({
      src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0, alt: i.alt })),
  };
})()"""


def _build(kind: str, out: Path, **options) -> Path:
    try:
        if kind == "site":
            build_site.build_site(out, log=lambda *_: None, **options)
        else:
            build_site.build_slides(out, log=lambda *_: None)
    except build_site.BrokenLinks as err:
        pytest.fail(f"`make {kind}` found broken links: {err}")
    return out


@pytest.fixture(scope="module")
def site(chromium, tmp_path_factory) -> Path:
    return _build("site", tmp_path_factory.mktemp("site") / "site")


@pytest.fixture(scope="module")
def slides(chromium, tmp_path_factory) -> Path:
    return _build("slides", tmp_path_factory.mktemp("slides") / "slides")


def _open(browser: Browser, url: str) -> dict:
    """Navigate to ``url`` and wait until the page is loaded and KaTeX has run."""
    browser.navigate(url)

    def state():
        try:
            s = browser.evaluate(PAGE_STATE_JS)
        except RuntimeError:  # the old document went away mid-call
            return None
        return s if s and s["ready"] and s["url"].split("#")[0] == url.split("#")[0] else None

    return browser.wait_for(state, PAGE_TIMEOUT, f"{url} to load and typeset its formulas")


def _page_problems(state: dict, errors: list[dict]) -> list[str]:
    problems = [f"console error: {e['text'][:200]}" for e in errors]
    if state["math"] != "done":
        problems.append(f"KaTeX did not run (data-math={state['math']!r})")
    problems += [f"formula not typeset: {e}" for e in state["katexErrors"]]
    problems += [f"raw TeX left in the text: {t!r}" for t in state["rawTex"]]
    problems += [f"image does not load: {i['src'][:120]}" for i in state["images"] if not i["ok"]]
    problems += [
        f"image without a specific alt text ({i['alt']!r}): {i['src'][:60]}"
        for i in state["images"]
        if i["alt"].strip().lower() in ("", "figure", "image")
    ]
    return problems


def test_site_works_offline(site, chromium):
    """Crawl the whole site from index.html."""
    start = (site / "index.html").as_uri()
    problems: dict[str, list[str]] = {}
    ids: dict[str, set[str]] = {}
    anchors: list[tuple[str, str, str]] = []  # (from page, to page, fragment)
    queue, seen = [start], {start}
    formulas = 0
    t0 = time.monotonic()
    with Browser(chromium) as browser:
        while queue:
            url = queue.pop(0)
            before = len(browser.console_errors)
            state = _open(browser, url)
            browser.pump(0.3)  # late console messages (e.g. from the views' iframes)
            name = Path(unquote(urlsplit(url).path)).relative_to(site).as_posix()
            page_problems = _page_problems(state, browser.console_errors[before:])
            formulas += state["formulas"]
            ids[url] = set(state["ids"])
            for link in state["links"]:
                parts = urlsplit(link)
                if parts.scheme in ("http", "https", "mailto"):
                    continue  # external: not followed (the network is off)
                if parts.scheme != "file":
                    page_problems.append(f"unexpected link {link}")
                    continue
                target = Path(unquote(parts.path))
                if site not in target.parents:
                    page_problems.append(f"link leaves the site: {link}")
                    continue
                if not target.exists():
                    page_problems.append(f"broken link: {target.relative_to(site)}")
                    continue
                page = target.as_uri()
                if parts.fragment and not parts.fragment.startswith("/"):
                    # ("#/2/1" is a reveal.js slide route inside a deck, not an anchor)
                    anchors.append((name, page, parts.fragment))
                if target.suffix == ".html" and page not in seen:
                    seen.add(page)
                    queue.append(page)
            if page_problems:
                problems[name] = page_problems
        external = browser.external_requests()
    for origin, page, fragment in anchors:
        # As a browser does: the fragment as written, then percent-decoded (nbconvert's
        # heading ids are themselves percent-encoded).
        if page in ids and fragment not in ids[page] and unquote(fragment) not in ids[page]:
            problems.setdefault(origin, []).append(f"no anchor #{fragment} in {page}")
    pages = sorted(Path(unquote(urlsplit(u).path)).relative_to(site).as_posix() for u in seen)
    print(f"crawled {len(pages)} pages, {formulas} formulas, in {time.monotonic() - t0:.0f} s")
    assert not external, f"requests left the machine: {external[:10]}"
    assert not problems, "\n".join(f"{p}: {'; '.join(v)}" for p, v in problems.items())
    # Every lecture and the README were reached by following links from the home page.
    for lecture in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        assert f"notebooks/{lecture.stem}.html" in pages, f"{lecture.name} is not linked"
    assert formulas > 100, f"only {formulas} formulas typeset: is KaTeX running?"


def test_site_uses_no_cdn(site):
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        found = build_site.EXTERNAL.search(text)
        assert not found, f"{page.relative_to(site)} loads {found.group(0)!r}"
    assert (site / "_static" / "katex" / "LICENSE").exists()


@pytest.mark.parametrize(
    "path", sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.name
)
def test_every_lecture_has_slide_metadata(path):
    nb = nbformat.read(path, as_version=4)
    types = [c.metadata.get("slideshow", {}).get("slide_type") for c in nb.cells]
    assert all(t in add_slide_metadata.SLIDE_TYPES for t in types), (
        f"{path.name}: cells without slide metadata; run .venv/bin/python -m "
        "tools.notebooks.add_slide_metadata (it changes nothing but the metadata)"
    )
    assert types[0] == "slide", f"{path.name}: the title cell must open a slide"


def test_slide_metadata_tool_is_idempotent_and_touches_only_metadata(tmp_path):
    source = ROOT / "notebooks" / "01_softmax.ipynb"
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        cell.metadata.pop("slideshow", None)
    copy = tmp_path / source.name
    nbformat.write(nb, copy)
    before = nbformat.read(copy, as_version=4)
    assert add_slide_metadata.main([str(copy)]) == 0
    once = copy.read_text()
    assert add_slide_metadata.main([str(copy), "--check"]) == 0
    assert add_slide_metadata.main([str(copy)]) == 0 and copy.read_text() == once
    after = nbformat.read(copy, as_version=4)
    for a, b in zip(before.cells, after.cells, strict=True):
        assert (a.source, a.get("outputs"), a.get("execution_count")) == (
            b.source, b.get("outputs"), b.get("execution_count"),
        )  # fmt: skip
        assert {k: v for k, v in b.metadata.items() if k != "slideshow"} == dict(a.metadata)
    types = [c.metadata.slideshow.slide_type for c in after.cells]
    assert types[0] == "slide" and "skip" in types  # the title opens; the Colab cell is skipped


def test_a_deck_steps_through_offline(slides, chromium):
    deck = (slides / DECK).as_uri()
    t0 = time.monotonic()
    with Browser(chromium) as browser:
        state = _open(browser, deck)
        browser.wait_for(
            lambda: browser.evaluate("document.documentElement.dataset.deck") == "ready",
            PAGE_TIMEOUT,
            "reveal.js to start",
        )
        total = browser.evaluate("Reveal.getTotalSlides()")
        assert total >= 5, f"{DECK} has only {total} slides: is its slide metadata there?"
        visited, empty = set(), []
        for _ in range(4 * total + 50):  # slides plus fragments, with a margin; never endless
            where = browser.evaluate(
                "(() => { const s = Reveal.getIndices(); const el = Reveal.getCurrentSlide();"
                " return [s.h, s.v, el.innerText.trim().length]; })()"
            )
            visited.add((where[0], where[1]))
            if where[2] == 0:
                empty.append(where[:2])
            if browser.evaluate("Reveal.isLastSlide() && !Reveal.availableFragments().next"):
                break
            browser.evaluate("Reveal.next()")
            browser.pump(0.05)
        else:
            pytest.fail(f"{DECK}: never reached the last slide")
        browser.pump(0.3)
        progress = browser.evaluate("Reveal.getProgress()")
        errors = list(browser.console_errors)
        external = browser.external_requests()
    print(f"stepped through {len(visited)} slides of {DECK} in {time.monotonic() - t0:.0f} s")
    assert len(visited) == total and progress == 1
    assert not empty, f"empty slides at {empty}"
    problems = _page_problems(state, errors)
    assert not problems, problems
    assert not external, f"requests left the machine: {external[:10]}"


# Every slide of the deck, shown in turn and measured once deck.js has fitted it.
DECK_REPORT_JS = """(() => Reveal.getSlides().map(s => {
  const i = Reveal.getIndices(s);
  Reveal.slide(i.h, i.v);
  return courseDeck.report(s);
}))()"""


@pytest.mark.slow
def test_no_slide_overflows_its_frame(slides, chromium):
    """Each deck at 1280 x 720: no slide's content may stick out of its frame or scroll."""
    decks = sorted(p.name for p in slides.glob("[0-9][0-9]_*.html"))
    assert len(decks) == len(list((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    problems, summary = [], []
    with Browser(chromium) as browser:
        for deck in decks:
            _open(browser, (slides / deck).as_uri())
            browser.wait_for(
                lambda: browser.evaluate(
                    "document.documentElement.dataset.deck === 'ready' && "
                    "Array.from(document.images).every(i => i.complete)"
                ),
                PAGE_TIMEOUT,
                f"{deck} to start",
            )
            reports = browser.evaluate(DECK_REPORT_JS)
            minimum = browser.evaluate("courseDeck.minText")
            assert minimum >= 22, f"deck.js lets text shrink to {minimum} px; the floor is 22"
            for r in reports:
                assert r["fontSize"] >= minimum, (deck, r)
                if r["overflow"]:
                    problems.append(f"{deck} slide {r['h']}.{r['v']} ({r['title'][:50]!r})")
            shrunk = sum(r["fontSize"] < 28 for r in reports)
            smallest = min(r["fontSize"] for r in reports)
            summary.append(f"{deck}: {len(reports)} slides, {shrunk} shrunk, smallest {smallest}px")
        assert not browser.console_errors, browser.console_errors[:5]
        assert not browser.external_requests()
    print("\n".join(summary))
    assert not problems, "slides overflow their frame:\n  " + "\n  ".join(problems)


def test_deck_cuts_a_lecture_into_slides_with_notes():
    """One idea per slide: headings open slides, long prose becomes speaker notes."""
    from tools.site.deck import LIMIT, NOTE_CHARS, deck_slides

    nb = nbformat.v4.new_notebook()
    long = "word " * (NOTE_CHARS // 4)
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 01 · Title\n\n" + long + "\n\n## Learning goals\n- one"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("## 1. A section\n\nShort text.\n\n$$a_1 = b_2$$"),
        nbformat.v4.new_code_cell("\n".join(f"y{i} = {i}" for i in range(60))),
        nbformat.v4.new_markdown_cell("### A sub-section\n\n" + long),
    ]
    slides = deck_slides(nb)
    titles = [s.title for s in slides]
    # The set-up code before the first section is folded into one slide below the goals.
    assert titles[:4] == ["01 · Title", "Learning goals", "Set-up", "1. A section"]
    assert slides[0].notes and not slides[0].parts  # the long intro went to the notes
    folded = slides[2].parts[0].html
    assert folded.startswith("<details") and "x = 1" in re.sub(r"<[^>]+>", "", folded)
    assert "$$a_1 = b_2$$" in slides[3].parts[1].html  # TeX untouched for KaTeX
    assert titles[4:7] == ["1. A section (continued)"] * 3  # 60 lines of code: three slides
    assert titles[-1] == "A sub-section" and slides[-1].notes
    assert all(s.weight <= LIMIT for s in slides)
    assert [s.new_stack for s in slides] == [True, True, False, True, False, False, False, False]


@pytest.mark.slow
def test_site_without_solutions(tmp_path):
    """make site SOLUTIONS=0: no solution page, and no link into solutions/."""
    out = _build("site", tmp_path / "site", solutions=False, slides=False)
    assert not (out / "solutions").exists()
    assert (out / "exercises").exists() and (out / "notebooks").exists()
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert 'href="solutions/' not in text and 'href="../solutions/' not in text, page
    lecture = (out / "notebooks" / "01_softmax.html").read_text(encoding="utf-8")
    assert ">Solutions<" not in lecture and ">Exercises<" in lecture and ">Quiz<" in lecture
    quizzes = sorted((out / "quizzes").glob("*_quiz.html"))
    assert len(quizzes) >= 13
    for page in quizzes:  # the questions, never the answers
        text = page.read_text(encoding="utf-8")
        assert 'type="radio"' in text and "quiz-answer" not in text and "Answer:" not in text


# -- accessibility: axe-core on every page and deck, the keyboard alone -----------------------

AXE_RUN_JS = """(async () => {
  const r = await axe.run(document, {resultTypes: ['violations']});
  return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
                first: v.nodes[0].html.slice(0, 120)}));
})()"""


def _axe_source(tmp_path: Path) -> str:
    from tools.site.vendor import AXE, vendor

    return (vendor(AXE, tmp_path) / "axe.min.js").read_text(encoding="utf-8")


def test_site_and_decks_have_no_serious_accessibility_violations(site, chromium, tmp_path):
    """axe-core (npm, cached in build/vendor like KaTeX and reveal.js; injected by the test,
    not shipped) on every page of the site, and on every deck with all of its slides shown
    (reveal.js's scroll view): 0 serious or critical violations (contrast, labels, landmarks,
    language, names of links and controls, ...)."""
    axe = _axe_source(tmp_path)
    # Not lite/: the browser edition is JupyterLite's own application (tools/site/build_lite.py).
    pages = sorted(
        p for p in site.rglob("*.html") if not {"_static", "lite"} & set(p.relative_to(site).parts)
    )
    results: dict[str, list] = {}
    with Browser(chromium, timeout=PAGE_TIMEOUT * 3) as browser:
        for page in pages:
            rel = page.relative_to(site).as_posix()
            deck = rel.startswith("slides/") and rel != "slides/index.html"
            url = page.as_uri() + ("?view=scroll" if deck else "")
            browser.navigate(url)
            browser.wait_for(
                lambda u=url: (
                    browser.evaluate("document.readyState") == "complete"
                    and browser.evaluate("document.URL") == u
                ),
                PAGE_TIMEOUT,
                f"{rel} to load",
            )
            if deck:
                browser.wait_for(
                    lambda: browser.evaluate("document.documentElement.dataset.deck") == "ready",
                    PAGE_TIMEOUT,
                    f"{rel}'s reveal.js",
                )
            browser.evaluate(axe + ";0")
            results[rel] = browser.evaluate(AXE_RUN_JS)
    print("\naxe-core 4.14.1, serious/critical violations per page:")
    for rel, found in results.items():
        print(f"  {rel}: {len(found)}" + (f" {found}" if found else ""))
    bad = {rel: found for rel, found in results.items() if found}
    assert len(results) >= 60, f"only {len(results)} pages checked"
    assert not bad, "\n".join(f"{rel}: {found}" for rel, found in bad.items())


KEY_JS = {"ArrowRight": 39, "ArrowDown": 40, "ArrowLeft": 37, "Tab": 9, " ": 32, "Enter": 13}


def _press(browser: Browser, key: str, shift: bool = False) -> None:
    code = KEY_JS[key]
    params = {"key": key, "code": "Space" if key == " " else key, "windowsVirtualKeyCode": code,
              "modifiers": 8 if shift else 0}  # fmt: skip
    if key in (" ", "Enter"):
        params["text"] = " " if key == " " else "\r"
    browser.send("Input.dispatchKeyEvent", {"type": "keyDown", **params}, browser.session)
    browser.send("Input.dispatchKeyEvent", {"type": "keyUp", **params}, browser.session)
    browser.pump(0.2)


def test_a_deck_and_a_quiz_work_with_the_keyboard_alone(site, chromium):
    """Real key events (no mouse): the arrow keys move through a deck, ending on its quiz;
    Tab reaches a quiz's radio buttons, Space picks one, Enter opens its answer."""
    with Browser(chromium) as browser:
        _open(browser, (site / "slides" / DECK).as_uri())
        browser.wait_for(
            lambda: browser.evaluate("document.documentElement.dataset.deck") == "ready",
            PAGE_TIMEOUT,
            "reveal.js",
        )
        total = browser.evaluate("Reveal.getHorizontalSlides().length")
        for _ in range(total - 1):
            _press(browser, "ArrowRight")
        assert browser.evaluate("Reveal.getIndices().h") == total - 1
        assert browser.evaluate("Reveal.getCurrentSlide().textContent").startswith(
            "Check your understanding"
        )
        _press(browser, "ArrowDown")
        assert browser.evaluate("Reveal.getIndices().v") == 1
        assert "Quiz 1" in browser.evaluate("Reveal.getCurrentSlide().textContent")
        _press(browser, "ArrowLeft")
        assert browser.evaluate("Reveal.getIndices().h") == total - 2

        _open(browser, (site / "quizzes" / "01_softmax_quiz.html").as_uri())
        focused = []
        for _ in range(60):  # Tab through links until the first radio button has the focus
            _press(browser, "Tab")
            focused.append(
                browser.evaluate("document.activeElement.id || document.activeElement.tagName")
            )
            if focused[-1] == "q01-2-a":
                break
        assert focused[-1] == "q01-2-a", f"Tab never reached item 2's first choice: {focused}"
        label = browser.evaluate(
            "document.querySelector('label[for=\"' + document.activeElement.id + '\"]').textContent"
        )
        assert label.startswith("(a)")
        _press(browser, "ArrowDown")  # radio groups move with the arrows
        _press(browser, " ")
        assert browser.evaluate("document.activeElement.id") == "q01-2-b"
        assert browser.evaluate("document.getElementById('q01-2-b').checked")
        for _ in range(10):  # on to the "Show the answer" control of the same item
            _press(browser, "Tab")
            if browser.evaluate("document.activeElement.tagName") == "SUMMARY":
                break
        assert browser.evaluate("document.activeElement.parentElement.closest('#q01-2') !== null")
        _press(browser, "Enter")
        assert browser.evaluate("document.querySelector('#q01-2 details').open")
