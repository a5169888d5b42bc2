"""MkDocs hook (``mkdocs.yml``): links from the pages to repository files outside ``docs/``.

A page links a repository file relative to itself, as a repository browser resolves it
(``../results/tables/x.md``, ``../tasks/squad/README.md``). MkDocs knows only the files under
``docs/``, so such a link is a "not found" warning and fails ``mkdocs build --strict``. This hook
adds each linked repository file that exists to the site as a plain copy under ``repo/`` (never
rendered), so MkDocs validates the link against it and points it at the copy. A target that does
not exist is not added and stays MkDocs' warning: a broken link still fails ``--strict``. A link
to a folder is a warning too (a site cannot show a folder: link a file in it).

:class:`ExampleSection` is a Griffe extension for the API reference (mkdocstrings).
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import griffe
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel

log = logging.getLogger("mkdocs.hooks.repo_links")

#: Inline links and images ``](target)`` and reference definitions ``[name]: target``.
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)|^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
SITE_FOLDER = "repo"  # where the linked repository files land in the site
_EXAMPLE_TITLE = re.compile(r"^([ \t]*)Example:[ \t]*$", re.MULTILINE)


class RepoFile(File):
    """A repository file copied into the site as it is, Markdown included (never rendered)."""

    def is_documentation_page(self) -> bool:
        return False


def linked_paths(markdown: str) -> list[str]:
    """The relative link targets of a page's Markdown, without query or anchor."""
    paths = []
    for match in _LINK.finditer(markdown):
        scheme, netloc, path, _, _ = urlsplit(match.group(1) or match.group(2))
        if path and not (scheme or netloc or path.startswith("/")):
            paths.append(unquote(path))
    return paths


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Adds each existing repository file that a page links to, outside ``docs/``."""
    docs = Path(config.docs_dir).resolve()
    root = Path(config.config_file_path).resolve().parent
    for page in list(files.documentation_pages()):
        source = page.abs_src_path
        if source is None:
            continue
        for path in linked_paths(Path(source).read_text(encoding="utf-8")):
            src_uri = posixpath.normpath(posixpath.join(posixpath.dirname(page.src_uri), path))
            target = (docs / src_uri).resolve()
            if not src_uri.startswith("../") or src_uri in files.src_uris:
                continue  # a page of the site (MkDocs checks it), or added already
            if not target.is_relative_to(root) or not target.exists():
                continue  # broken: left to MkDocs' "not found" warning
            if target.is_dir():
                log.warning(f"Doc file '{page.src_uri}' links the folder '{path}': link a file")
                continue
            where = posixpath.join(SITE_FOLDER, target.relative_to(root).as_posix())
            files.append(
                RepoFile(
                    src_uri,
                    str(docs),
                    config.site_dir,
                    config.use_directory_urls,
                    dest_uri=where,
                    inclusion=InclusionLevel.INCLUDED,
                )
            )
    return files


class ExampleSection(griffe.Extension):
    """Reads a Google-style ``Example:`` section as ``Examples:`` (Napoleon takes both spellings,
    Griffe only the plural; otherwise its doctest lines render as Markdown quotes and links)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE_TITLE.sub(r"\1Examples:", obj.docstring.value)
