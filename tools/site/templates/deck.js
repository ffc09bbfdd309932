// The course's decks: reveal.js on a 1280 x 720 (16:9) frame, and a slide that does not fit
// is shrunk: its text first (down to 22 px), then its figures. window.courseDeck
// lets the browser test ask whether a slide still overflows its frame.
(function () {
  "use strict";
  var WIDTH = 1280, HEIGHT = 720;
  // Text never goes below 22 px (readable from the back of a room); a slide that still does
  // not fit must be cut differently in tools/site/deck.py, and the browser test says so.
  var BASE = 28, MIN_TEXT = 22, FIGURE_MIN = 200, FIGURE_STEP = 20;

  function tooBig(slide) {
    if (slide.scrollHeight > slide.clientHeight + 1 || slide.scrollWidth > slide.clientWidth + 1)
      return true;
    // Anything that scrolls or sticks out inside the slide (wide code, a wide table) counts too.
    var frame = slide.getBoundingClientRect();
    var scale = frame.width / slide.offsetWidth || 1;
    var inner = slide.querySelectorAll("pre, code, table, img, .katex-display, .deck-html");
    for (var i = 0; i < inner.length; i++) {
      var el = inner[i];
      if (el.closest("details:not([open])")) continue;  // folded (the set-up): not shown
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible")
        return true;
      var box = el.getBoundingClientRect();
      if ((box.right - frame.right) / scale > 1 || (box.bottom - frame.bottom) / scale > 1)
        return true;
    }
    return false;
  }

  function fit(slide) {
    var size = BASE, figures = slide.querySelectorAll("img.deck-img"), figureMax = 460;
    slide.style.fontSize = size + "px";
    figures.forEach(function (img) { img.style.maxHeight = ""; });
    while (tooBig(slide)) {
      if (size > MIN_TEXT) size -= 1;
      else if (figures.length && figureMax > FIGURE_MIN) figureMax -= FIGURE_STEP;
      else break;
      slide.style.fontSize = size + "px";
      figures.forEach(function (img) { img.style.maxHeight = figureMax + "px"; });
    }
    slide.dataset.fitted = String(size);
    return size;
  }

  function leaf(slide) {
    return slide && slide.classList.contains("deck-slide") ? slide : null;
  }

  function report(slide) {
    slide = leaf(slide || Reveal.getCurrentSlide());
    if (!slide) return null;
    fit(slide);
    var indices = Reveal.getIndices(slide);
    return {h: indices.h, v: indices.v || 0, fontSize: parseFloat(slide.dataset.fitted),
            overflow: tooBig(slide), scrollHeight: slide.scrollHeight,
            title: (slide.querySelector("h1, h2, h3") || {}).textContent || ""};
  }

  window.courseDeck = {fit: fit, overflows: tooBig, report: report, minText: MIN_TEXT};

  document.addEventListener("DOMContentLoaded", function () {
    Reveal.initialize({
      width: WIDTH, height: HEIGHT, margin: 0.03, center: false, hash: true,
      controls: true, progress: true, slideNumber: "c/t", transition: "none",
      plugins: [RevealNotes]
    }).then(function () {
      var current = leaf(Reveal.getCurrentSlide());
      if (current) fit(current);
      Reveal.on("slidechanged", function (event) {
        var slide = leaf(event.currentSlide);
        if (slide) fit(slide);
      });
      document.documentElement.dataset.deck = "ready";
    });
  });
})();
