"""The package's import graph: no cycle, and no module imports from a layer above its own.

Layers, bottom to top: core (graph, batching, config, Trainer, checkpoints; knows no task) and the private
helpers; nn (layers); seq2seq (sequence generation: the translation task, beam search, subwords) beside
ud/io (CoNLL-U and sentences, a data format both tasks read); the rest of ud (the UD product, whose
multiword-token expander is a small seq2seq model); cli and serve (front ends). The top-level
``g2gt/__init__.py`` is the facade: it may name anything (lazily), and nothing imports it.

Inside ``ud`` the same rule holds between its parts (:data:`UD_LAYERS`, bottom to top): data formats and checks;
the stage protocol; the stages in the order a pipeline runs them (a later stage may use an earlier one: the
parser asks the lemmatizer, the enhancer reads parses); the result object; the pipeline; corpus scale; the
training recipes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import g2gt

ROOT = Path(g2gt.__file__).resolve().parent
LAYERS = {"_version": 0, "_lazy": 0, "errors": 0, "core": 0, "data": 0, "nn": 1, "seq2seq": 2, "ud": 3,
          "cli": 4, "serve": 4, "__main__": 5}
UD_LAYERS = {"io": 0, "limits": 0, "vocab": 0, "evaluate": 0, "stage": 1, "tokenize": 2, "lemma": 3, "parse": 4,
             "enhance": 5, "coref": 5, "document": 6, "document_json": 6, "document_stream": 6, "spans": 6, "draw": 6, "pipe": 7,
             "pipeline": 8, "scale": 9, "spacy": 9, "spacy.convert": 6,
             "recipe": 10}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = ["g2gt", *p.relative_to(ROOT).with_suffix("").parts]
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return out


def _edges() -> dict[str, set[str]]:
    mods = _modules()
    edges: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        pkg = name.split(".") if is_pkg else name.split(".")[:-1]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = pkg[: len(pkg) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
                if not target or not target.startswith("g2gt"):
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    out.add(sub if sub in mods else target)
            elif isinstance(node, ast.Import):
                out |= {a.name for a in node.names if a.name in mods}
        out.discard(name)
        edges[name] = {t for t in out if t in mods}
    return edges


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) == 1:
        return None
    if parts[1:3] == ["ud", "io"]:
        return LAYERS["seq2seq"]  # CoNLL-U and sentences: a data format that graph-to-sequence reads too
    return LAYERS.get(parts[1], 9)


def test_no_module_imports_from_a_higher_layer_or_the_facade():
    bad = []
    for src, targets in _edges().items():
        if _layer(src) is None:
            continue  # the facade
        for t in targets:
            if _layer(t) is None or _layer(t) > _layer(src):
                bad.append(f"{src} -> {t}")
    assert not bad, "imports up a layer (or of the g2gt facade): " + ", ".join(sorted(bad))


def _ud_layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[:2] != ["g2gt", "ud"] or len(parts) < 3:
        return None  # outside ud, or the g2gt.ud package itself (imports nothing)
    return UD_LAYERS.get(".".join(parts[2:4]), UD_LAYERS.get(parts[2], 99))


def test_no_ud_module_imports_from_a_higher_part_of_ud():
    unknown = sorted({m.split(".")[2] for m in _edges() if _ud_layer(m) == 99})  # a key "part.module" is finer
    assert not unknown, f"parts of g2gt.ud without a layer in UD_LAYERS: {unknown}"
    bad = []
    for src, targets in _edges().items():
        if _ud_layer(src) is None:
            continue
        bad += [f"{src} -> {t}" for t in targets if (_ud_layer(t) or 0) > _ud_layer(src)]
    assert not bad, "imports up a layer inside g2gt.ud: " + ", ".join(sorted(bad))


def test_import_graph_has_no_cycle():
    edges = _edges()
    state: dict[str, int] = {}
    cycles = []

    def visit(v: str, path: list[str]) -> None:
        state[v] = 1
        for w in sorted(edges.get(v, ())):
            if state.get(w) == 1:
                cycles.append(path[path.index(w):] + [w] if w in path else [v, w])
            elif w not in state:
                visit(w, path + [w])
        state[v] = 2

    for v in sorted(edges):
        if v not in state:
            visit(v, [v])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_no_import_hook_is_installed():
    """``import g2gt`` leaves ``sys.meta_path`` alone (the 0.1 import paths had their release)."""
    import importlib.util
    import subprocess
    import sys

    code = ("import sys; before = list(sys.meta_path); import g2gt; assert sys.meta_path == before, sys.meta_path; "
            "import importlib.util as u; assert u.find_spec('g2gt.parsing') is None")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert importlib.util.find_spec("g2gt.segment") is None
