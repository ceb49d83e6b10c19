"""A griffe extension for the API reference: g2gt's docstrings use reStructuredText roles, the site Markdown.

mkdocstrings renders docstrings as Markdown. This extension rewrites, in every docstring of the package, once
the package is loaded:

* ``:class:`X```, ``:func:``, ``:meth:``, ``:mod:``, ``:attr:``, ``:data:``, ``:exc:``, ``:obj:`` (with
  ``~`` for the last component only, ``.`` for a name relative to the object, ``title <target>``) -> a link
  to the object's entry when the target is an object of the package, else the name as code;
* ``:math:`...``` -> ``\\( ... \\)`` and ``.. math::`` blocks -> ``\\[ ... \\]`` (KaTeX renders both, bundled
  with the site: nothing is loaded from another host);
* ``text::`` closing a paragraph before a literal block -> ``text:``.

Links are "optional" autorefs: an object of the package that the reference does not show (a private helper)
comes out as code, not as a warning. The reference's own pages link with ``[name][g2gt.path]``, which fail
the strict build when broken.
"""

from __future__ import annotations

import html
import re
import textwrap
from pathlib import Path
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|attr|data|exc|obj|const):`(?P<body>[^`]+)`")
MATH_ROLE = re.compile(r":math:`(?P<body>[^`]+)`")
MATH_BLOCK = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*\n(?P<body>(?:[ \t]*\n|(?P=indent)[ \t]+\S.*\n?)+)",
                        re.MULTILINE)
LITERAL_INTRO = re.compile(r"(\S)::[ \t]*$", re.MULTILINE)


def _display(target: str, title: str | None) -> tuple[str, str]:
    """(target path, text shown) of a role body."""
    if title is not None:
        return target.lstrip("~"), title
    if target.startswith("~"):
        target = target[1:]
        return target, target.rstrip("()").rsplit(".", 1)[-1]
    return target, target.lstrip(".")


def _candidates(target: str, obj: griffe.Object) -> list[str]:
    """Full paths ``target`` may name, seen from ``obj`` (Sphinx's search order, roughly)."""
    target = target.rstrip("()")
    scopes: list[str] = []
    node: Any = obj
    while node is not None:
        scopes.append(node.path)
        node = node.parent
    relative = target.lstrip(".")
    if target.startswith("."):
        return [f"{scope}.{relative}" for scope in scopes]
    return [target] + [f"{scope}.{target}" for scope in scopes]


class RstToMarkdown(griffe.Extension):
    """Rewrite the reST roles and math of every docstring of the package into the site's Markdown.

    Also lets griffe see ``g2gt.core`` and ``g2gt.ud``: they are folders without ``__init__.py`` (implicit
    namespace packages, which Python imports), and griffe skips such folders inside a regular package unless
    their module objects exist before the loader reaches their files.
    """

    def on_module_instance(self, *, node: Any, mod: griffe.Module, agent: Any, **kwargs: Any) -> None:
        if mod.parent is not None or not isinstance(mod.filepath, Path) or mod.filepath.name != "__init__.py":
            return
        root = mod.filepath.parent
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and not (p / "__init__.py").exists()):
            if any(folder.glob("*.py")) and folder.name not in mod.members:
                mod.set_member(folder.name, griffe.Module(folder.name, filepath=[folder], parent=mod))

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        collection = loader.modules_collection
        seen: set[int] = set()

        def lookup(path: str) -> str | None:
            try:
                found = collection.get_member(path)
            except (KeyError, ValueError, AttributeError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                return None
            try:
                return found.final_target.path if found.is_alias else found.path
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                return None

        def role(match: re.Match, obj: griffe.Object) -> str:
            body = match["body"].strip()
            titled = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>", body)
            target, shown = _display(titled["target"], titled["title"]) if titled else _display(body, None)
            for path in _candidates(target, obj):
                resolved = lookup(path)
                if resolved:
                    return (f'<autoref identifier="{html.escape(resolved)}" optional>'
                            f"<code>{html.escape(shown)}</code></autoref>")
            return f"`{shown}`"

        def math_block(match: re.Match) -> str:
            indent = match["indent"]
            body = textwrap.dedent(match["body"]).strip("\n")
            return f"{indent}\\[\n" + textwrap.indent(body, indent) + f"\n{indent}\\]\n\n"

        def rewrite(obj: griffe.Object) -> None:
            if id(obj) in seen:
                return
            seen.add(id(obj))
            doc = obj.docstring
            if doc is not None and doc.value:
                text = MATH_BLOCK.sub(math_block, doc.value)
                text = MATH_ROLE.sub(lambda m: f"\\({m['body']}\\)", text)
                text = ROLE.sub(lambda m: role(m, obj), text)
                text = LITERAL_INTRO.sub(r"\1:", text)
                doc.value = text
            for member in obj.members.values():
                if not member.is_alias:
                    rewrite(member)

        rewrite(pkg)
