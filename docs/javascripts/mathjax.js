// MathJax 3 configuration for pymdownx.arithmatex (generic mode): arithmatex wraps every formula
// of the Markdown in <span class="arithmatex">\(...\)</span> or <div class="arithmatex">\[...\]</div>;
// MathJax typesets those elements only. Loaded before the MathJax script (mkdocs.yml,
// extra_javascript), which reads window.MathJax when it starts.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex"
  }
};

// mkdocs-material emits document$ on every page load, including its instant navigation, which
// swaps the page content without reloading scripts: typeset the new page's math each time.
document$.subscribe(() => {
  if (!window.MathJax || !MathJax.startup || !MathJax.typesetPromise) {
    return;  // MathJax not started yet: its startup typesets the first page itself
  }
  if (MathJax.startup.output.clearCache) {
    MathJax.startup.output.clearCache();  // CHTML output only; the vendored SVG output has none
  }
  MathJax.typesetClear();
  MathJax.texReset();
  MathJax.typesetPromise();
});
