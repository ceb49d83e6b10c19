"""nlp.pipe(n_process=2) from a Jupyter notebook (a real kernel, run by nbclient): the workers start and the
documents are those of one process."""

from __future__ import annotations

import pytest

from g2gt.core.registry import DEFAULT_MODEL, available_models

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

CELLS = [
    "import json, g2gt\nnlp = g2gt.load(device='cpu')\ntexts = ['A cat sat. It slept.', 'Dogs bark.'] * 3",
    "one = [d.conllu() for d in nlp.pipe(texts)]\ntwo = [d.conllu() for d in nlp.pipe(texts, n_process=2)]\n"
    "print(json.dumps({'same': one == two, 'docs': len(two)}))",
]


@pytest.mark.skipif(DEFAULT_MODEL not in available_models(), reason="the shipped model is not here")
def test_n_process_works_in_a_notebook(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
                            ).execute()
    out = [o for o in nb.cells[-1].outputs if o.get("name") == "stdout"]
    assert out and out[-1]["text"].strip() == '{"same": true, "docs": 6}', nb.cells[-1].outputs
