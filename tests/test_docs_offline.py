"""The documentation site works offline, opened from disk: typeset math, drawn diagrams, links.

A classroom may have no network. The site serves MathJax and mermaid itself
(docs/javascripts/vendor/) and writes page.html links (``use_directory_urls: false``). This test
builds the site with mkdocs, opens pages from ``file://`` in headless Chromium with every network
request sent to a dead proxy, and checks

* theory.md and stirling.md: every formula that arithmatex marked is typeset by MathJax (one
  ``mjx-container`` per formula at least, no MathJax error node);
* architecture.md: its mermaid diagrams are drawn (mkdocs-material draws them in a closed
  shadow root, so the check is on a screenshot: the diagrams' node fill colour covers thousands of
  pixels; a page without diagrams has none);
* no internal link of any page points to a directory (which ``file://`` shows as a listing);
* the executed teaching notebook is a page (examples/teaching.html, mkdocs-jupyter), with its
  figures and its formulas typeset;
* the search works from disk: a page opened with ``?q=word`` lists the pages that hold the word
  (mkdocs-material's ``offline`` plugin, with the iframe-worker shim served by the site), the
  notebook's page among them.

Skipped, with the reason, where mkdocs (the ``docs`` extra), Pillow or a Chromium binary
(``chromium-headless-shell``, ``chromium``; Debian: ``apt-get install chromium-headless-shell``)
is missing. About 40 s.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = next((shutil.which(n) for n in ("chromium-headless-shell", "chromium",
                                           "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)
# the fill of a mermaid node under this site's theme (mkdocs-material, default indigo palette)
MERMAID_FILL = (237, 240, 255)

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary on PATH "
                       "(apt-get install chromium-headless-shell)"),
    # every test reads the site its module fixture builds (mkdocs, about 20 CPU seconds): the
    # module is one long test, left out of make test-fast whatever each test's own time
    pytest.mark.slow,
    # and one worker builds it: under pytest-xdist a module fixture is built by every worker
    # that runs one of the module's tests
    pytest.mark.xdist_group("docs-offline"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _chromium(*args: str) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
           "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",  # no network
           "--virtual-time-budget=20000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("page", ["theory.html", "stirling.html"])
def test_math_is_typeset_from_disk(site, page):
    built = (site / page).read_text()
    n_formulas = built.count('class="arithmatex"')
    assert n_formulas >= 5
    dom = _chromium("--dump-dom", (site / page).as_uri()).stdout
    assert dom.count("<mjx-container") >= n_formulas
    assert not re.search(r'<g[^>]*data-mml-node="merror"', dom), "a MathJax error"
    assert not re.search(r'class="arithmatex"[^>]*>\s*\\[(\[]', dom), "raw LaTeX left"


def test_mermaid_is_drawn_from_disk(site, tmp_path):
    np = pytest.importorskip("numpy")
    image = pytest.importorskip("PIL.Image", reason="Pillow is not installed")

    def fill_pixels(page: str) -> int:
        shot = tmp_path / f"{page}.png"
        _chromium("--window-size=1280,1400", f"--screenshot={shot}", (site / page).as_uri())
        a = np.asarray(image.open(shot).convert("RGB"))[80:]  # below the header bar
        return int(np.all(a == MERMAID_FILL, axis=-1).sum())

    assert fill_pixels("architecture.html") > 5000
    assert fill_pixels("stirling.html") == 0  # the control: no diagram, no such pixels


def test_internal_links_name_files(site):
    bad = {}
    for page in site.rglob("*.html"):
        if "vendor" in page.parts:
            continue
        for href in re.findall(r'href="([^"#]*)"', page.read_text()):
            if href and not re.match(r"[a-z]+:", href) and (href.endswith("/") or href == "."):
                bad.setdefault(page.name, []).append(href)
    assert not bad, bad


def test_notebook_is_a_page_with_figures_and_math(site):
    page = site / "examples" / "teaching.html"
    built = page.read_text()
    assert "One step by hand" in built and "Past depth one" in built
    assert built.count('src="data:image/png;base64,') == 14  # the notebook's fourteen figures
    n_formulas = built.count('class="arithmatex"')
    assert n_formulas >= 30
    dom = _chromium("--dump-dom", page.as_uri()).stdout
    assert dom.count("<mjx-container") >= n_formulas
    assert not re.search(r'<g[^>]*data-mml-node="merror"', dom), "a MathJax error"
    nav = (site / "theory.html").read_text()
    assert 'href="examples/teaching.html"' in nav, "the notebook is not in the site's navigation"


def test_structure_notebook_is_a_page_with_figures_and_math(site):
    page = site / "examples" / "structure.html"
    built = page.read_text()
    assert "Chow-Liu and TAN" in built and "Selective kDB" in built
    assert built.count('src="data:image/png;base64,') == 4  # the notebook's four figures
    n_formulas = built.count('class="arithmatex"')
    assert n_formulas >= 10
    dom = _chromium("--dump-dom", page.as_uri()).stdout
    assert dom.count("<mjx-container") >= n_formulas
    assert not re.search(r'<g[^>]*data-mml-node="merror"', dom), "a MathJax error"
    nav = (site / "theory.html").read_text()
    for href in ("examples/structure.html", "structure.html", "dirichlet_process.html"):
        assert f'href="{href}"' in nav, f"{href} is not in the site's navigation"


@pytest.mark.parametrize(("word", "expected"), [
    ("restaurant", {"theory.html", "examples/teaching.html", "stirling.html"}),
    ("franchise", {"examples/teaching.html"}),
    ("Chow", {"structure.html", "examples/structure.html"}),
    ("Kneser", {"dirichlet_process.html"}),
])
def test_search_works_from_disk(site, word, expected):
    """Material hides its search under file:// unless the offline plugin inlines the index."""
    built = (site / "index.html").read_text()
    assert "unpkg.com" not in built, "a script from the network"
    dom = _chromium("--dump-dom", (site / "index.html").as_uri() + f"?q={word}").stdout
    hits = set(re.findall(r'href="file://[^"]*?/site\d*/([^"#]+)(?:#[^"]*)?"[^>]*'
                          r'class="md-search-result__link', dom))
    assert expected <= hits, hits
