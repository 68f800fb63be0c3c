"""mkdocs hook: render the Sphinx roles of the docstrings (``:func:`name```) as code.

The docstrings are numpy-style and written for reading in a terminal and in Sphinx; mkdocstrings
renders a role such as ``:func:`fastpath.counts.tying_groups``` as the literal text
``:func:`` followed by the code span. This hook drops the role, keeping the code span, and the
``~`` of Sphinx's short form (``:class:`~pkg.Name``` shows ``Name``). It runs on the HTML of
every page, so the Markdown sources are untouched.
"""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|exc|obj|const|ref|term):"
                   r"(<code>)~?([^<]*?)(</code>)")


def _short(match: re.Match) -> str:
    name = match.group(2)
    if match.group(0).split("<code>", 1)[1].startswith("~"):
        name = name.rsplit(".", 1)[-1]
    return f"{match.group(1)}{name}{match.group(3)}"


def on_page_content(html: str, **kwargs) -> str:
    return _ROLE.sub(_short, html)
