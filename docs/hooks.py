"""MkDocs hooks of the g2gt site.

``<!-- api-rest: MODULE -->`` on an API page becomes one ``::: path`` entry for every name of
``MODULE.__all__`` that no ``::: path`` line of the API pages shows yet, so a public name added to the code
appears in the reference at once (tests/test_docs.py checks the built site's inventory for every one).
"""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

DIRECTIVE = re.compile(r"^::: ([\w.]+)", re.MULTILINE)
REST = re.compile(r"^<!-- api-rest: ([\w.]+) -->$", re.MULTILINE)


def public_paths(module_name: str) -> list[str]:
    """The defining path (``module.Name``) of each name of ``module_name.__all__``."""
    with warnings.catch_warnings():  # third-party deprecation notes on import are not the site's warnings
        warnings.simplefilter("ignore")
        module = importlib.import_module(module_name)
        objects = {name: getattr(module, name) for name in module.__all__}
    lazy = getattr(module, "_LAZY", {})
    out = []
    for name, obj in objects.items():
        home = getattr(obj, "__module__", None) if callable(obj) else None
        if home is None:  # a constant: the submodule the lazy table names, else the package itself
            home = f"{module_name}.{lazy[name]}" if name in lazy else module_name
        out.append(f"{home}.{getattr(obj, '__qualname__', name)}" if callable(obj) else f"{home}.{name}")
    return out


def on_page_markdown(markdown: str, page, config, files) -> str:
    if not REST.search(markdown):
        return markdown
    api = Path(config["docs_dir"]) / "api"
    shown = {m for p in api.glob("*.md") for m in DIRECTIVE.findall(p.read_text(encoding="utf-8"))}

    def rest(match: re.Match) -> str:
        paths = [p for p in public_paths(match[1]) if p not in shown]
        return "\n\n".join(f"::: {p}" for p in paths)

    return REST.sub(rest, markdown)
