"""Bridges between stanza ``Document`` objects and g2gt's :class:`~g2gt.ud.io.sentence.Sentence` / :class:`~g2gt.Graph`.

No stanza model is needed: the conversion goes through CoNLL-U text with
``stanza.utils.conll.CoNLL.conll2doc`` (``ignore_gapping=False``, so empty nodes
survive) and ``"{:C}".format(doc)``, which keeps words, multiword tokens,
comments and every column.

Typical uses::

    import stanza
    from g2gt.ud.io.stanza import graphs_from_document, apply_parse

    doc = stanza.Pipeline("en")("Dogs bark.")              # a stanza parse ...
    graphs = graphs_from_document(doc)                      # ... as g2gt input graphs
    apply_parse(doc, [[2, 0, 2]], [["nsubj", "root", "punct"]])  # our parse back into stanza Words

Graphs follow :meth:`g2gt.ud.io.sentence.Sentence.to_graph`: tokens = word forms,
``node_features["upos"]``, a ``"position"`` chain channel and a ``"deps"`` edge
channel (word -> head ``rel↑``, head -> word ``rel↓``).  The root word has no
edge, so :func:`document_from_graphs` gives it the relation ``"root"``.
"""

from __future__ import annotations

from typing import Any, Sequence

from ...core.graph import DOWN, UP, EdgeChannel, Graph, LabelVocab
from .build import sentence_from_words
from .conllu import Sentence, parse_conllu_string, to_conllu_string
from .sentence import check_tree

__all__ = [
    "document_from_sentences",
    "sentences_from_document",
    "document_vocab",
    "graphs_from_document",
    "document_from_graphs",
    "graph_heads",
    "apply_parse",
]


def _conll():
    try:
        from stanza.utils.conll import CoNLL
    except ImportError as e:  # pragma: no cover - stanza is a dependency
        raise ImportError("g2gt.ud.io.stanza needs the 'stanza' package (pip install stanza)") from e
    return CoNLL


def document_from_sentences(sentences: Sequence[Sentence]):
    """``list[Sentence]`` -> ``stanza.models.common.doc.Document`` (words, MWT tokens,
    empty nodes, comments and all columns carried over)."""
    if not sentences:
        raise ValueError("document_from_sentences needs at least one sentence")
    return _conll().conll2doc(input_str=to_conllu_string(sentences), ignore_gapping=False)


def sentences_from_document(doc, name: str = "<stanza>") -> list[Sentence]:
    """``stanza Document`` -> ``list[Sentence]`` via its CoNLL-U rendering (``"{:C}"``).

    Words without a head (a tokenize-only pipeline) get HEAD ``_`` (stanza's own
    writer would print the placeholder chain ``i-1`` there).
    """
    text = "{:C}".format(doc)
    if not text.strip():
        raise ValueError(f"{name}: the stanza Document has no sentences")
    sents = parse_conllu_string(text.rstrip("\n") + "\n\n", name=name)
    for s, ds in zip(sents, doc.sentences):
        for k, w in zip(s.word_indices, ds.words):
            if w.head is None:
                s.rows[k]["head"] = None
    return sents


def document_vocab(doc_or_sentences) -> LabelVocab:
    """A :meth:`LabelVocab.for_dependencies` of every relation in a Document or sentence list
    (sorted, so the same relations always give the same ids)."""
    sents = doc_or_sentences if isinstance(doc_or_sentences, (list, tuple)) else sentences_from_document(doc_or_sentences)
    rels = sorted({r for s in sents for r in s.deprels if r is not None})
    return LabelVocab.for_dependencies(rels)


def graphs_from_document(doc, rel_vocab: LabelVocab | None = None, max_distance: int = 8) -> list[Graph]:
    """``stanza Document`` -> one :class:`Graph` per sentence (see module docstring).

    ``rel_vocab`` defaults to :func:`document_vocab` of the whole document, so every
    graph uses the same label ids. Sentences whose words lack heads get only the
    ``"position"`` channel.
    """
    sents = sentences_from_document(doc)
    vocab = rel_vocab if rel_vocab is not None else document_vocab(sents)
    return [s.to_graph(vocab, max_distance=max_distance) for s in sents]


def graph_heads(graph: Graph, rel_vocab: LabelVocab, channel: str = "deps",
                root_relation: str = "root") -> tuple[list[int], list[str]]:
    """Decode a dependency edge channel back to 1-based ``heads`` and ``deprels``.

    Every ``rel↑`` edge ``(word, head)`` sets ``heads[word] = head + 1``; words without
    one are roots (head 0, relation ``root_relation``). ``rel↓`` edges must mirror them.

    Raises:
        ValueError: naming the graph (``meta["sent_id"]``) and word when a word has two
            heads, a label is not a dependency label of ``rel_vocab``, or the result is
            not a single-rooted tree.
    """
    where = graph.meta.get("sent_id") or repr(graph)
    if channel not in graph.channels or not isinstance(graph.channels[channel], EdgeChannel):
        raise ValueError(f"{where}: graph has no edge channel {channel!r} (channels: {list(graph.channels)})")
    ch = graph.channels[channel]
    n = graph.num_nodes
    heads: list[int] = [0] * n
    rels: list[str] = [root_relation] * n
    seen = [False] * n
    down: set[tuple[int, int, str]] = set()
    for (s, t), lab in zip(ch.edge_index.t().tolist(), ch.edge_label.tolist()):
        name = rel_vocab.name(lab) if 0 <= lab < len(rel_vocab) else None
        if name is None or name[-1] not in (UP, DOWN):
            raise ValueError(f"{where}: edge {s}->{t} has label {lab} ({name!r}), expected a rel{UP} / rel{DOWN} id")
        if name[-1] == DOWN:
            down.add((t, s, name[:-1]))
            continue
        if seen[s]:
            raise ValueError(f"{where}: word {s + 1} has two heads ({heads[s]} and {t + 1})")
        seen[s] = True
        heads[s], rels[s] = t + 1, name[:-1]
    up = {(i, heads[i] - 1, rels[i]) for i in range(n) if seen[i]}
    if down and down != up:
        raise ValueError(f"{where}: the {DOWN} edges do not mirror the {UP} edges")
    problem = check_tree(heads)
    if problem is not None:
        raise ValueError(f"{where}: channel {channel!r} is not a dependency tree: {problem}")
    return heads, rels


def document_from_graphs(graphs: Sequence[Graph], rel_vocab: LabelVocab, channel: str = "deps"):
    """``list[Graph]`` -> ``stanza Document``: forms from ``tokens``, UPOS from
    ``node_features["upos"]`` (if any), heads / relations decoded with :func:`graph_heads`
    (graphs without ``channel`` get no parse), ``sent_id`` / ``text`` from ``meta``."""
    sents: list[Sentence] = []
    for g in graphs:
        s = sentence_from_words([str(t) for t in g.tokens], text=g.meta.get("text"), sent_id=g.meta.get("sent_id"))
        upos = g.node_features.get("upos")
        upos = [str(u) for u in upos] if upos is not None else None
        if channel in g.channels:
            heads, rels = graph_heads(g, rel_vocab, channel)
            s = s.with_parse(heads, rels, upos)
        elif upos is not None:
            for k, tag in zip(s.word_indices, upos):
                s.rows[k]["upos"] = tag
        sents.append(s)
    return document_from_sentences(sents)


def apply_parse(doc, heads: Sequence[Sequence[int]], deprels: Sequence[Sequence[str]],
                upos: Sequence[Sequence[str]] | None = None):
    """Write a parse into a stanza Document in place: ``word.head`` / ``word.deprel``
    (and ``word.upos``) of every sentence, then rebuild ``sentence.dependencies``.

    ``heads[s][i]`` is the 1-based head of word ``i+1`` of sentence ``s`` (0 = root).
    Returns ``doc``.

    Raises:
        ValueError: naming the sentence when the numbers of sentences or words differ
            or a head is out of range.
    """
    if len(heads) != len(doc.sentences) or len(deprels) != len(doc.sentences):
        raise ValueError(
            f"apply_parse: the Document has {len(doc.sentences)} sentences but got "
            f"{len(heads)} head lists and {len(deprels)} relation lists"
        )
    if upos is not None and len(upos) != len(doc.sentences):
        raise ValueError(f"apply_parse: {len(doc.sentences)} sentences but {len(upos)} UPOS lists")
    for si, sent in enumerate(doc.sentences):
        words = sent.words
        n = len(words)
        h, r = heads[si], deprels[si]
        u: Any = upos[si] if upos is not None else None
        if len(h) != n or len(r) != n or (u is not None and len(u) != n):
            raise ValueError(
                f"apply_parse: sentence {si} ({getattr(sent, 'sent_id', None) or ''}) has {n} words but got "
                f"{len(h)} heads, {len(r)} relations" + ("" if u is None else f", {len(u)} UPOS")
            )
        for i, w in enumerate(words):
            hi = int(h[i])
            if not 0 <= hi <= n:
                raise ValueError(f"apply_parse: sentence {si}, word {i + 1}: head {hi} is outside 0..{n}")
            w.head = hi
            w.deprel = str(r[i])
            if u is not None:
                w.upos = str(u[i])
        sent.build_dependencies()
    return doc
