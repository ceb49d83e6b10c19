"""A stand-in for :class:`g2gt.serve.adapter.LoadedModel` in the ``g2gt serve`` tests (no tests here): no
weights, every word costs ``delay`` seconds of sleep, and it counts the words it has processed, so a test can
see how much of a request ran."""

from __future__ import annotations

import threading
import time

from g2gt.ud.document import Document
from g2gt.ud.io import sentence_from_words


class StubModel:
    """Splits raw text at white space (one sentence per text or line), "parses" by copying."""

    def __init__(self, name: str = "stub", delay: float = 0.0) -> None:
        self.name, self.delay = name, delay
        self.card: dict = {}
        self.description = "a stand-in model"
        self.components = ["tokenizer", "tagger", "parser"]
        self.has_enhancer = self.has_coref = False
        self.acknowledgements = ["stub"]
        self.words = 0
        self._lock = threading.Lock()

    def segment(self, texts):
        return [[sentence_from_words(t.split())] if t.split() else [] for t in texts]

    def run(self, inputs, tag=True, parse=True, enhanced=False, batch_tokens=500, prepare=None, coref=False):
        out = []
        for i, x in enumerate(inputs):
            sentences = self.segment([x])[0] if isinstance(x, str) else [s.copy() for s in x]
            if prepare is not None:
                sentences = prepare(i, sentences)
            n = sum(len(s) for s in sentences)
            time.sleep(self.delay * n)
            with self._lock:
                self.words += n
            out.append(Document(sentences, x if isinstance(x, str) else None, self.name))
        return out


def word_lists(n_sentences: int, words: int = 10, tag: str = "w") -> list[list[str]]:
    """``n_sentences`` sentences of ``words`` words each, for ``"sentences"`` in a ``/v1/parse`` request."""
    return [[f"{tag}{k}_{j}" for j in range(words)] for k in range(n_sentences)]
