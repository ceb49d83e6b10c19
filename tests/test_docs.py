"""Every ```python and ```bash block of README.md and docs/ runs, and the docs site builds with --strict.

Each page becomes one script, run with ``python`` in a fresh temporary folder: its Python blocks in order (so a
page shares one namespace, and a block that starts worker processes runs as a saved script would), and at its
place each bash block, run with ``bash -euo pipefail`` and the ``g2gt`` of this interpreter on PATH (the blocks
share the folder's files). A failure names the Markdown file and line.

Markers, in an HTML comment on the line before a block (several joined by ``;``):

* ``<!-- skip: REASON -->``: never run here (installs packages, needs a server or a GPU, is a sketch);
* ``<!-- slow -->``: needs minutes or the full data sets; runs in the slow suite (``pytest -m slow``);
* ``<!-- requires: NAME ... -->``: runs only where every NAME exists: a dotted Python name
  (``g2gt.Error``), or an environment variable in capitals (``G2GT_DATA``); otherwise skipped, saying which.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_+-]*)[^\n]*$")
MARKER = re.compile(r"^<!--\s*(?P<body>.*?)\s*-->\s*$")
RUN_LANGS = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
PAGE_TIMEOUT_S = 1200


@dataclass
class Block:
    """One fenced code block: its page, first code line (1-based), language, code and markers."""

    page: Path
    line: int
    lang: str
    code: str
    skip: str | None = None
    slow: bool = False
    requires: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def parse_markers(comment: str) -> dict:
    """``"slow; requires: G2GT_DATA"`` -> {"slow": True, "requires": ["G2GT_DATA"]}."""
    out: dict = {"skip": None, "slow": False, "requires": []}
    for part in filter(None, (p.strip() for p in comment.split(";"))):
        key, _, value = part.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "skip":
            out["skip"] = value or "marked skip"
        elif key == "slow":
            out["slow"] = True
        elif key == "requires":
            out["requires"] += value.replace(",", " ").split()
    return out


def extract_blocks(page: Path) -> list[Block]:
    """The runnable (python / bash) fenced blocks of a Markdown page, with their markers."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start, lang = i, fence["lang"].lower()
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        if lang in RUN_LANGS:
            prev = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
            marker = MARKER.match(prev.strip())
            markers = parse_markers(marker["body"]) if marker else parse_markers("")
            blocks.append(Block(page, start + 2, RUN_LANGS[lang], "\n".join(lines[start + 1:i]) + "\n", **markers))
        i += 1
    return blocks


def missing_requirement(name: str) -> str | None:
    """None when ``name`` exists (environment variable or importable dotted name), else what is missing."""
    if name.isupper():
        return None if os.environ.get(name) else f"${name} is not set"
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return f"{name} does not exist in this version"
        return None
    return f"{name} cannot be imported"


BASH_RUNNER = """\
import os as _os, subprocess as _subprocess, sys as _sys
_os.environ["PATH"] = {bindir!r} + _os.pathsep + _os.environ.get("PATH", "")

def _docs_bash(code, where):
    _sys.stdout.flush(); _sys.stderr.flush()
    trap = "trap 'echo DOCS-BASH-LINE $LINENO >&2' ERR\\n"
    done = _subprocess.run(["bash", "-euo", "pipefail", "-c", trap + code])
    if done.returncode:
        print(f"DOCS-BASH-FAILED {{where}} {{done.returncode}}", file=_sys.stderr)
        _sys.exit(done.returncode)
"""


def script_for(blocks: list[Block]) -> tuple[str, list[tuple[int, Block]]]:
    """One Python script for a page, in the page's order: its Python blocks as they are (one namespace), each
    bash block as a call that runs it with ``bash -euo pipefail``; and, for each block, the line it starts at."""
    lines = BASH_RUNNER.format(bindir=str(Path(sys.executable).parent)).splitlines()
    starts = []
    for block in blocks:
        lines.append(f"# ---- {block.where}")
        starts.append((len(lines) + 1, block))
        if block.lang == "python":
            lines += block.code.splitlines()
        else:
            lines.append(f"_docs_bash({block.code!r}, {block.where!r})")
    return "\n".join(lines) + "\n", starts


def block_at(starts: list[tuple[int, Block]], script_line: int) -> str:
    """``page:line`` of the Markdown line that became ``script_line``."""
    found = None
    for start, block in starts:
        if start <= script_line:
            found = (start, block)
    if found is None:
        return "the runner's preamble"
    start, block = found
    return f"{block.page.relative_to(REPO)}:{block.line + script_line - start}"


def failure_place(stderr: str, starts: list[tuple[int, Block]]) -> str | None:
    """Where a page script failed: the Markdown ``page:line`` of the failing line."""
    bash = re.findall(r"DOCS-BASH-FAILED (\S+):(\d+) ", stderr)
    if bash:
        page, first = bash[-1]
        lines = re.findall(r"DOCS-BASH-LINE (\d+)", stderr)
        return f"{page}:{int(first) + int(lines[-1]) - 2}" if lines else f"the bash block at {page}:{first}"
    lines = [int(n) for n in re.findall(r'File "[^"]*page\.py", line (\d+)', stderr)]
    return block_at(starts, lines[-1]) if lines else None


def run_page(blocks: list[Block], tmp_path: Path) -> None:
    script, starts = script_for(blocks)
    (tmp_path / "page.py").write_text(script, encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, "page.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=PAGE_TIMEOUT_S)
    if proc.returncode == 0:
        return
    where = failure_place(proc.stderr, starts) or "one of " + ", ".join(b.where for b in blocks)
    pytest.fail(f"the code block at {where} failed (exit status {proc.returncode}):\n"
                f"--- stdout (end)\n{proc.stdout[-3000:]}\n--- stderr (end)\n{proc.stderr[-6000:]}",
                pytrace=False)


def page_cases(slow: bool) -> list:
    cases = []
    for page in PAGES:
        runnable = [b for b in extract_blocks(page) if b.skip is None
                    and not any(missing_requirement(r) for r in b.requires)]
        chosen = runnable if slow else [b for b in runnable if not b.slow]
        if chosen and (not slow or any(b.slow for b in chosen)):
            cases.append(pytest.param(chosen, id=str(page.relative_to(REPO))))
    return cases


def unrun_cases() -> list:
    """The blocks not run by default: marked ``skip`` or with ``requires`` (run where the requirement is met)."""
    return [pytest.param(block, id=block.where) for page in PAGES for block in extract_blocks(page)
            if block.skip is not None or block.requires]


@pytest.mark.parametrize("blocks", page_cases(slow=False))
def test_code_blocks_run(blocks, tmp_path):
    run_page(blocks, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("blocks", page_cases(slow=True))
def test_code_blocks_run_slow(blocks, tmp_path):
    run_page(blocks, tmp_path)


@pytest.mark.parametrize("block", unrun_cases())
def test_a_block_not_run_says_why_and_names_what_exists(block):
    """A block that is not run gives its reason, and what it requires of g2gt exists: a page may wait for an
    environment variable or an optional package, never for a g2gt name this version does not have."""
    assert block.skip is None or block.skip.strip(), f"{block.where}: '<!-- skip: -->' needs a reason"
    for name in block.requires:
        missing = missing_requirement(name)
        assert not ((name == "g2gt" or name.startswith("g2gt.")) and missing), f"{block.where}: requires {name}, but {missing}"


# ---------------------------------------------------------------------------- the runner itself
def test_runner_reads_markers_and_lines(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# t\n\n<!-- slow; requires: G2GT_X_UNSET -->\n```python\nx = 1\n```\n\n"
                    "```bash\ng2gt --version\n```\n<!-- skip: why -->\n\n```py\nboom\n```\n```text\nno\n```\n")
    a, b, c = extract_blocks(page)
    assert (a.lang, a.line, a.slow, a.requires, a.code) == ("python", 5, True, ["G2GT_X_UNSET"], "x = 1\n")
    assert (b.lang, b.line, b.slow, b.skip) == ("bash", 9, False, None)
    assert (c.lang, c.skip) == ("python", "why")
    assert missing_requirement("G2GT_X_UNSET") and missing_requirement("g2gt.no_such_name")
    assert missing_requirement("g2gt.load") is None


def test_runner_names_the_failing_markdown_line(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("```python\nx = 1\n```\n\ntext\n\n```python\ny = x + 1\nraise ValueError(y)\n```\n")
    blocks = [Block(REPO / "README.md", b.line, b.lang, b.code) for b in extract_blocks(page)]
    with pytest.raises(pytest.fail.Exception, match=r"README.md:9 failed \(exit status 1\)"):
        run_page(blocks, tmp_path)


def test_runner_shares_files_between_blocks_and_names_a_failing_bash_line(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("```python\nopen('f.txt', 'w').write('hi')\n```\n\n```bash\ngrep -q hi f.txt\ng2gt --version\n"
                    "false\necho never\n```\n")
    blocks = [Block(REPO / "README.md", b.line, b.lang, b.code) for b in extract_blocks(page)]
    with pytest.raises(pytest.fail.Exception, match=r"README.md:8 failed \(exit status 1\)"):
        run_page(blocks, tmp_path)


# ---------------------------------------------------------------------------- the site
def _public_paths() -> dict[str, str]:
    """{public name: the path it is defined at} for g2gt.__all__, g2gt.nn, g2gt.seq2seq and the stage classes."""
    spec = importlib.util.spec_from_file_location("g2gt_docs_hooks", REPO / "docs" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    out = {}
    for module in ("g2gt", "g2gt.nn", "g2gt.seq2seq"):
        names = importlib.import_module(module).__all__
        out.update({f"{module}.{name}": path for name, path in zip(names, hooks.public_paths(module))})
    from g2gt.ud.enhance import Enhancer
    from g2gt.ud.parse import Parser
    from g2gt.ud.pipeline import Pipeline
    from g2gt.ud.tokenize import Segmenter

    out.update({c.__name__: f"{c.__module__}.{c.__qualname__}" for c in (Parser, Segmenter, Enhancer, Pipeline)})
    return out


def _inventory(site: Path) -> set[str]:
    """The object names of the built site's ``objects.inv`` (Sphinx inventory v2: 4 header lines, zlib)."""
    import zlib

    raw = (site / "objects.inv").read_bytes()
    body = raw.split(b"\n", 4)[4]
    return {line.split(" ", 1)[0] for line in zlib.decompress(body).decode().splitlines() if line}


def test_site_builds_strict_offline_and_covers_every_public_name(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-6000:]
    # the API reference shows every public name
    inventory = _inventory(site)
    missing = {name: path for name, path in _public_paths().items() if path not in inventory}
    assert not missing, f"public names missing from the API reference (docs/api/*.md): {missing}"
    # nothing on any page loads from another host (scripts, styles, fonts, images)
    loads = re.compile(r"""<(?:script|img|link)\b[^>]*?(?:src|href)=["'](https?:)?//""")
    pages = list(site.rglob("*.html"))
    assert len(pages) > 10
    remote = [str(p.relative_to(site)) for p in pages if loads.search(p.read_text(encoding="utf-8"))]
    assert not remote, f"pages that load something from another host: {remote}"
    shutil.rmtree(site)
