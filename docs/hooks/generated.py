"""MkDocs hooks: pages built from the repository itself, so the site cannot drift from the code.

* ``benchmarks/results/*.md`` and their figures are published under ``benchmarks/results/``.
* ``<!-- cli-reference -->`` in a page becomes the reference of every ``csr-marl`` command.
* ``<!-- docstring: MODULE -->`` becomes that module's docstring (the env cards live there).
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def on_files(files, config):
    """Publish the committed benchmark result pages and figures beside the docs."""
    for path in sorted(RESULTS.iterdir()):
        if path.suffix in (".md", ".png"):
            uri = f"benchmarks/results/{path.name}"
            content = path.read_bytes() if path.suffix == ".png" else path.read_text(encoding="utf-8")
            files.append(File.generated(config, uri, content=content))
    return files


def on_page_markdown(markdown, page, config, files):
    """Fill the generated parts of a page."""
    if "<!-- cli-reference -->" in markdown:
        from csr_marl.cli.reference import markdown_reference

        markdown = markdown.replace("<!-- cli-reference -->", markdown_reference(heading_level=2))
    return re.sub(r"<!-- docstring: ([\w.]+) -->", lambda m: docstring_markdown(m.group(1)), markdown)


def docstring_markdown(module_name: str) -> str:
    """A module docstring as Markdown: reST's ``code`` and :role:`name` become `code`."""
    text = inspect.cleandoc(importlib.import_module(module_name).__doc__ or "")
    text = re.sub(r":\w+:`~?\.?([^`]+)`", r"`\1`", text)
    text = text.replace("``", "`")
    # the docstring's own title is the page's: drop a leading "# ..." line
    return re.sub(r"\A#\s[^\n]*\n", "", text)


ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj):<code>(~?)\.?([\w.]+)</code>")


def on_page_content(html, page, config, files):
    """Docstrings' reST roles (:func:`x`, rendered as ``:func:<code>x</code>``) become links to the API
    entry of that name on the page when there is one, plain code otherwise."""
    ids = set(re.findall(r'id="([\w.]+)"', html))

    def link(match: re.Match) -> str:
        target = match.group(2)
        text = target.rsplit(".", 1)[-1] if match.group(1) else target
        anchor = target if target in ids else next((i for i in sorted(ids) if i.endswith("." + target)), None)
        return f'<a href="#{anchor}"><code>{text}</code></a>' if anchor else f"<code>{text}</code>"

    return ROLE.sub(link, html)
