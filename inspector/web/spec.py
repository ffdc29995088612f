"""The spec and its seed documents, served beside the rule pages that cite them.

`docs/SPEC.md` is the repair contract and `docs/seeds/` the documents it was
built from; both are part of the repository. The spec is rendered once per
process from Markdown (markdown-it-py, every heading given an id so a rule
page can link to its section) and sanitised with nh3, as any Markdown here is.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import nh3
from django.conf import settings
from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin

# "## 4. The repair algorithm" -> section "4"; a rule's "§4, step 6" names it.
_SECTION = re.compile(r"^(\d+)\.\s")
_CITED = re.compile(r"§(\d+)")


@dataclass(frozen=True, slots=True)
class Spec:
    html: str
    # Section number -> the id of its heading.
    anchors: dict[str, str]


def docs_dir() -> Path:
    return Path(settings.BASE_DIR) / "docs"


def seed_names() -> list[str]:
    return sorted(p.name for p in (docs_dir() / "seeds").glob("*.txt"))


def seed_path(name: str) -> Path | None:
    """The seed document called `name`, or None: only names that are listed are served."""
    return docs_dir() / "seeds" / name if name in seed_names() else None


# The heading id of the project's own rules, shown after the spec on its page.
OUR_OWN = "rules-of-our-own"


@cache
def spec() -> Spec:
    text = (docs_dir() / "SPEC.md").read_text(encoding="utf-8")
    ours = (docs_dir() / "beyond-the-spec.md").read_text(encoding="utf-8")
    # Its title becomes a section of the page that the rule pages link to.
    text += "\n\n" + ours.replace("# Rules of our own", "## Rules of our own", 1)
    markdown = MarkdownIt("commonmark").enable("table").use(anchors_plugin, max_level=3)
    tokens = markdown.parse(text)
    anchors: dict[str, str] = {}
    for opening, inline in itertools.pairwise(tokens):
        if opening.type == "heading_open" and opening.tag == "h2":
            number = _SECTION.match(inline.content)
            if number and isinstance(opening.attrs.get("id"), str):
                anchors[number.group(1)] = str(opening.attrs["id"])
    html = markdown.renderer.render(tokens, markdown.options, {})
    attributes = {tag: set(allowed) for tag, allowed in nh3.ALLOWED_ATTRIBUTES.items()}
    for tag in ("h1", "h2", "h3"):
        attributes.setdefault(tag, set()).add("id")
    return Spec(html=nh3.clean(html, attributes=attributes), anchors=anchors)


def section_anchor(citation: str) -> str | None:
    """The heading id of the section a citation like "§4, step 6" names."""
    number = _CITED.search(citation)
    return spec().anchors.get(number.group(1)) if number else None
