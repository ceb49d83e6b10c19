r"""The graph-to-graph Transformer dependency parser (RNGTr-style iterative refinement).

A sentence of ``n`` words becomes a graph of ``n + 1`` nodes: a ``<root>`` node at position 0 and the
words. Every node pair carries labels that enter the attention scores (:class:`g2gt.nn.GraphAttention`):

* channel 0, ``position``: the clipped relative distance ``clip(j - i, -k, k)``;
* channel 1, ``deps``: the *current* dependency graph — ``rel↑`` on (dependent, head) and ``rel↓`` on
  (head, dependent), ROOT's edges included (:func:`g2gt.ud.parse.batching.dependency_labels`).

Node input: ``e_i = LayerNorm(E_word[lower(w_i)] + CharCNN(w_i) + E_tb[t])``, where ``E_tb[t]`` is the learned
vector of the sentence's treebank ``t`` (only in models trained on several treebanks, ``ParserConfig.treebanks``;
row 0, the default, at parse time unless another is chosen). Heads on the encoder states ``h``:
biaffine arcs ``[B, n, n]`` (row = dependent, column = head), biaffine relations at a chosen head,
UPOS and the optional XPOS / UFeats / lemma-rule taggers (:class:`g2gt.nn.heads.Tagger`).

Iteration 0 parses from the empty graph (channel 1 all zeros); its tree is fed back as channel 1 and
the sentence is parsed again, ``T`` times. A sentence whose output graph equals its input graph has
reached a fixed point (the model is deterministic at inference) and is not encoded again
(:meth:`ParserModel.decode`).

Training (:meth:`ParserModel.forward`, one call per step so ``DistributedDataParallel`` works): a
pass from the empty graph plus, optionally, a pass from a refinement graph — the first pass's own
argmax prediction (``"self"``, RNGTr) or a given graph such as a corrupted gold tree (``"graph"``).

The parameter names (``word_embed``, ``char_encoder``, ``embed_norm``, ``encoder``, ``arc``, ``rel``,
``tagger``, ``taggers.{xpos,feats,lemma}``, ``treebank_embed``) are the checkpoint format.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...core.batch import compact_dtype
from ...core.graph import num_chain_labels
from ...nn.heads import BiaffineArcScorer, BiaffineLabelScorer, CharCNNWordEncoder, Tagger
from ...nn.layers import GraphEncoder
from .trees import decode_heads
from .batching import TAG_HEADS, ParseBatch, dependency_labels
from .config import ParserConfig

__all__ = ["ParserModel", "ParserConfig", "DecodedBatch"]


@dataclass
class DecodedBatch:
    """What :meth:`ParserModel.decode` returns for a batch of ``B`` sentences over ``n`` nodes (long
    tensors on the model's device; node 0 = ROOT and padding hold 0).

    ``heads``, ``rels``, ``upos``: ``[B, n]`` of the last pass of each sentence; ``tags``: for each tag
    head of the model (``"xpos"``, ``"feats"``, ``"lemma"``) ``[B, n, k]`` its best classes, best first
    (``k = 1``; ``k = 1 + lemma_topk`` for lemma rules: column 0 is the best class with ``<unk>`` (class 0,
    a rare rule) allowed, so 0 there says the head found no frequent rule; columns 1.. are the best
    ``lemma_topk`` rules, among which ``<unk>`` never is);
    ``passes``: ``[B]`` encoder passes run per sentence; ``history``: when recorded, ``(heads, rels,
    upos)`` after each iteration (a sentence that converged keeps its last values).
    """

    heads: Tensor
    rels: Tensor
    upos: Tensor
    tags: dict[str, Tensor]
    passes: Tensor
    history: list[tuple[Tensor, Tensor, Tensor]] = field(default_factory=list)


class ParserModel(nn.Module):
    """Graph-to-graph Transformer dependency parser (see the module docstring).

    Shapes: ``words [B, n]`` long (node 0 = ROOT), ``char_ids [U, m]`` long (characters of the
    batch's unique word types), ``word_types [B, n]`` long (row of ``char_ids`` of each node),
    ``padding_mask [B, n]`` bool, ``labels [B, C, n, n]`` (C = 2 with the graph channel, else 1),
    ``treebank [B]`` long (each sentence's index into ``config.treebanks``; None = the default, 0).

    :meth:`forward` is the training loss of a batch (all passes); :meth:`score` one pass;
    :meth:`decode` the inference of a batch (trees, relations, tags; refinement until a fixed point).
    """

    def extra_repr(self) -> str:
        """The config's sizes (the submodules follow)."""
        c = self.config
        keys = ("d_model", "num_layers", "num_heads", "ffn_dim", "num_rels", "num_upos", "num_labels")
        return ", ".join(f"{k}={getattr(c, k)}" for k in keys if hasattr(c, k))

    def __init__(self, config: ParserConfig) -> None:
        super().__init__()
        self.config = c = config
        self.word_embed = nn.Embedding(c.num_words, c.d_model, padding_idx=0)
        self.char_encoder = CharCNNWordEncoder(c.num_chars, c.d_model, c.char_dim, c.char_filters)
        self.embed_norm = nn.LayerNorm(c.d_model)
        # one vector per training treebank, added to every node's input (absent with one treebank: old checkpoints)
        self.treebank_embed = nn.Embedding(len(c.treebanks), c.d_model) if c.treebanks else None
        self.embed_dropout = nn.Dropout(c.dropout)
        sizes = [num_chain_labels(c.max_distance)]
        if c.graph_channel:
            sizes.append(1 + 2 * c.num_rels)
        self.encoder = GraphEncoder(c.num_layers, c.d_model, c.num_heads, c.ffn_dim, sizes, c.value_labels,
                                    c.dropout, c.attention_dropout, True, c.activation)
        self.arc = BiaffineArcScorer(c.d_model, c.arc_dim, c.head_dropout)
        self.rel = BiaffineLabelScorer(c.d_model, c.num_rels, c.label_dim, c.head_dropout)
        self.tagger = Tagger(c.d_model, c.num_upos, c.d_model, c.head_dropout)
        sizes_by_name = {"xpos": c.num_xpos, "feats": c.num_feats, "lemma": c.num_lemma_rules}
        # the optional word-level heads (name -> Tagger); absent when their size is 0
        self.taggers = nn.ModuleDict({name: Tagger(c.d_model, sizes_by_name[name], c.d_model, c.head_dropout)
                                      for name in TAG_HEADS if sizes_by_name[name] > 0})
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.word_embed.weight, std=self.config.d_model**-0.5)
        with torch.no_grad():
            self.word_embed.weight[0].zero_()
        if self.treebank_embed is not None:
            # zero: a fresh model starts treebank-neutral, and a warm-started one computes exactly its source's
            # function at step 0; the vectors move apart by the gradients of their treebanks' sentences
            nn.init.zeros_(self.treebank_embed.weight)
        for m in (self.char_encoder, self.embed_norm, self.encoder, self.arc, self.rel, self.tagger,
                  *self.taggers.values()):
            m.reset_parameters()

    # ------------------------------------------------------------------ passes
    def labels(self, position: Tensor, graph: Tensor | None) -> Tensor:
        """Stack the channels: ``position [B, n, n]`` and ``graph [B, n, n]`` (None = empty graph)
        -> ``[B, C, n, n]``."""
        if not self.config.graph_channel:
            return position[:, None]
        if graph is None:
            graph = torch.zeros_like(position)
        return torch.stack([position.to(graph.dtype), graph], 1)

    def embed(self, words: Tensor, char_ids: Tensor, word_types: Tensor, treebank: Tensor | None = None) -> Tensor:
        """Node vectors ``[B, n, d]``: word embedding + char-CNN word vector (+ the treebank vector of each
        sentence, ``treebank [B]`` long, None = the default treebank), layer-normed."""
        cvec = self.char_encoder(char_ids)  # [U, d]
        x = self.word_embed(words) + cvec[word_types]
        if self.treebank_embed is not None:
            tb = self.treebank_embed.weight[0] if treebank is None else self.treebank_embed(treebank)[:, None]
            x = x + tb  # [d] or [B, 1, d], broadcast over the nodes
        elif treebank is not None:
            raise ValueError("treebank indices given, but this model has no treebank vectors (its "
                             "ParserConfig.treebanks is empty): parse without choosing a treebank")
        return self.embed_dropout(self.embed_norm(x))

    def encode(self, words: Tensor, char_ids: Tensor, word_types: Tensor, padding_mask: Tensor,
               labels: Tensor, treebank: Tensor | None = None) -> Tensor:
        """Encoder states ``[B, n, d]``."""
        return self.encoder(self.embed(words, char_ids, word_types, treebank), labels, padding_mask)

    def score(self, words: Tensor, char_ids: Tensor, word_types: Tensor, padding_mask: Tensor,
              labels: Tensor, label_heads: Tensor,
              x: Tensor | None = None) -> tuple[Tensor, Tensor, dict[str, Tensor], Tensor]:
        """One training pass: arcs ``[B, n, n]`` (padded / self columns ``-inf``), relations at
        ``label_heads [B, n]`` ``[B, n, R]``, tag logits ``{"upos": [B, n, P], ...}`` and ``[2, B, n]``:
        argmax heads and the relations at them (no gradient; for self-training).
        ``x [B, n, d]``: node vectors from :meth:`embed` (the caller computes them once per batch)."""
        if x is None:
            x = self.embed(words, char_ids, word_types)
        h = self.encoder(x, labels, padding_mask)
        arc = self.arc(h, padding_mask)
        n = arc.shape[-1]
        arc = arc.masked_fill(torch.eye(n, dtype=torch.bool, device=arc.device), float("-inf"))
        d, hh = self.rel.project(h)
        rel = self.rel.score(d, hh, label_heads)
        with torch.no_grad():
            pred_heads = arc.argmax(-1)
            pred_rels = self.rel.score(d, hh, pred_heads).argmax(-1)
        tags = {"upos": self.tagger(h), **{name: t(h) for name, t in self.taggers.items()}}
        return arc, rel, tags, torch.stack([pred_heads, pred_rels])

    @staticmethod
    def pass_loss(out: tuple[Tensor, Tensor, dict[str, Tensor], Tensor], words_mask: Tensor, gold_heads: Tensor,
                  gold_rels: Tensor, gold_tags: dict[str, Tensor]) -> Tensor:
        """Summed arc + relation + tag cross-entropies (every head named in ``gold_tags``) of one
        :meth:`score` pass over the real words (``words_mask [B, n]``; golds ``[B, n]`` long).
        Scalar, float32 or wider."""
        arc, rel, tags, _ = out
        m = words_mask
        # the other words' targets are ignored (not selected with arc[m]: a boolean index reads the mask on the host)
        loss = _masked_ce(arc, gold_heads, m) + _masked_ce(rel, gold_rels, m)
        for name, gold in gold_tags.items():
            loss = loss + _masked_ce(tags[name], gold, m)
        return loss

    def forward(self, words: Tensor, char_ids: Tensor, word_types: Tensor, padding_mask: Tensor,
                position: Tensor, gold_heads: Tensor, gold_rels: Tensor, gold_upos: Tensor,
                refine: str = "none", refine_graph: Tensor | None = None,
                gold_tags: dict[str, Tensor] | None = None, treebank: Tensor | None = None) -> Tensor:
        r"""The whole training loss of a batch in ONE call (so that ``DistributedDataParallel``
        sees one forward per backward).

        ``position [B, n, n]`` is the position channel, golds ``[B, n]`` long (node 0 =
        ROOT, ignored). The node vectors are embedded once and shared by the passes:

        1. from the empty graph;
        2. ``refine="self"``: from the graph of pass 1's argmax heads and the relations
           at them (chosen without gradient); ``refine="graph"``: from ``refine_graph
           [B, n, n]`` (dependency-channel labels, e.g. a corrupted gold tree);
           ``refine="none"``: no second pass.

        ``gold_tags``: golds ``[B, n]`` of the tag heads (``"xpos"``, ``"feats"``, ``"lemma"``).
        ``treebank``: ``[B]`` long, each sentence's treebank (None = the default).

        Returns the SUM over passes and real words of arc + relation + tag cross-entropies.
        """
        if refine not in ("none", "self", "graph"):
            raise ValueError(f"refine must be 'none', 'self' or 'graph', got {refine!r}")
        if refine == "graph" and refine_graph is None:
            raise ValueError("refine='graph' needs refine_graph [B, n, n] (dependency-channel labels)")
        if refine != "none" and not self.config.graph_channel:
            raise ValueError(f"refine={refine!r} needs a model with the graph channel (graph_channel=True)")
        missing = sorted(set(gold_tags or {}) - set(self.taggers))
        if missing:
            raise ValueError(f"gold tags for {missing} but the model has no such head (its ParserConfig sizes "
                             "are 0); build the config from the vocabulary: ParserVocab.config(...)")
        words_mask = ~padding_mask
        words_mask[:, 0] = False
        golds = (gold_heads, gold_rels, {"upos": gold_upos, **(gold_tags or {})})
        x = self.embed(words, char_ids, word_types, treebank)  # shared by both passes
        if refine == "none":
            out = self.score(words, char_ids, word_types, padding_mask, self.labels(position, None), gold_heads, x)
            return self.pass_loss(out, words_mask, *golds)
        out = self.score(words, char_ids, word_types, padding_mask, self.labels(position, None), gold_heads, x)
        total = self.pass_loss(out, words_mask, *golds)
        if refine == "self":
            refine_graph = dependency_labels(out[3][0], out[3][1], words_mask)
        out = self.score(words, char_ids, word_types, padding_mask, self.labels(position, refine_graph),
                         gold_heads, x)
        return total + self.pass_loss(out, words_mask, *golds)

    # ------------------------------------------------------------------ inference
    @torch.inference_mode()
    def decode(self, batch: ParseBatch, refine_steps: int, root_rel: int, algorithm: str = "mst",
               input_graph: bool = False, lemma_topk: int = 5, record_history: bool = False,
               refine_confidence: float | None = None) -> DecodedBatch:
        r"""Parse a batch (in eval mode, under ``torch.inference_mode``): every sentence gets exactly one
        single-rooted tree.

        Each pass encodes the active sentences, takes log-softmax arc scores in float32, decodes a tree
        (``algorithm`` ``"mst"``: Chu-Liu-Edmonds, ``"eisner"``: projective; :func:`g2gt.ud.parse.trees.decode_heads`),
        picks each word's relation at its head (relation ``root_rel`` exactly for the word attached to
        ROOT) and its tags. The first pass reads the empty graph, or with ``input_graph`` the batch's own
        HEAD / DEPREL (``node_features`` ``head`` / ``rel``; check it is a tree first); ``refine_steps``
        passes follow, each reading the previous graph, except for sentences whose graph did not change
        (fixed point). Without the graph channel only one pass runs.

        ``refine_confidence`` ``c`` (None = off): a sentence whose first-pass tree is confident, every word's
        best head having probability ``max_j P(j | i) >= c``, is not refined (its first tree is final). Such
        trees rarely change: on UD English dev sets, ``c = 0.7`` leaves 62-72 % of the sentences with one pass
        and moves LAS by at most 0.03 (``benchmarks/refine_confidence.py``).
        """
        if algorithm not in ("mst", "eisner"):
            raise ValueError(f"algorithm must be 'mst' or 'eisner', got {algorithm!r}")
        T = refine_steps if self.config.graph_channel else 0
        was = self.training
        self.eval()
        try:
            g = batch.graph
            dev = g.tokens.device
            B = g.tokens.shape[0]
            words_mask, lengths = batch.words_mask, batch.lengths
            # labels stay in a compact integer dtype ([B, n, n] bytes, not 8x that as long); attention
            # widens them one query chunk at a time
            position = g.labels[:, 0]
            lab_dt = torch.promote_types(position.dtype, compact_dtype(2 * self.config.num_rels))
            position = position.to(lab_dt)
            graph = None
            if input_graph:
                graph = dependency_labels(g.node_features["head"], g.node_features["rel"], words_mask, lab_dt)
            x = self.embed(g.tokens, batch.char_ids, batch.word_types, batch.treebank)  # once for all iterations
            res_h, res_r, res_u = (torch.zeros_like(g.tokens) for _ in range(3))
            res_t = {name: torch.zeros(*g.tokens.shape, 1 + lemma_topk if name == "lemma" else 1, dtype=torch.long,
                                       device=dev) for name in self.taggers}
            passes = torch.zeros(B, dtype=torch.long, device=dev)
            history: list[tuple[Tensor, Tensor, Tensor]] = []
            active = torch.arange(B, device=dev)
            n_iter = max(T + (0 if input_graph else 1), 1)
            last_h = None  # [B, n, d]: each sentence's encoder states of its last pass (the tags read them once)
            for _ in range(n_iter):
                if active.numel():
                    sub = active
                    every = sub.numel() == B
                    rows = slice(None) if every else sub  # all sentences: views of the batch, no gathered copies
                    lab = self.labels(position[rows], None if graph is None else graph[rows])
                    h = self.encoder(x[rows], lab, g.padding_mask[rows])
                    passes[sub] += 1
                    ph, pr, conf = self._predict_tree(h, g.padding_mask[rows], words_mask[rows], lengths[rows],
                                                      algorithm, root_rel)
                    res_h[sub], res_r[sub] = ph, pr
                    if last_h is None and every:
                        last_h = h
                    else:
                        if last_h is None:
                            last_h = h.new_zeros(B, *h.shape[1:])
                        last_h[sub] = h
                    new_graph = dependency_labels(ph, pr, words_mask[rows], lab_dt)
                    if graph is None:
                        changed = torch.ones(sub.numel(), dtype=torch.bool, device=dev)
                        if refine_confidence is not None:
                            changed = conf < refine_confidence
                    else:
                        changed = (new_graph != graph[rows]).flatten(1).any(-1)
                    if every:
                        graph = new_graph
                    else:
                        if graph is None:
                            graph = torch.zeros(B, *position.shape[1:], dtype=lab_dt, device=dev)
                        graph[sub] = new_graph
                    active = sub[changed]
                if record_history:
                    res_u, tags = self._predict_tags(last_h, words_mask, lemma_topk)
                    history.append((res_h.clone(), res_r.clone(), res_u.clone()))
                elif active.numel() == 0:
                    break  # fixed point everywhere: later iterations would be identical
            if last_h is not None:  # the tags of each sentence's last pass, computed once
                res_u, tags = self._predict_tags(last_h, words_mask, lemma_topk)
                res_t.update(tags)
            return DecodedBatch(res_h, res_r, res_u, res_t, passes, history)
        finally:
            self.train(was)

    def _predict_tree(self, h: Tensor, padding_mask: Tensor, words_mask: Tensor, lengths: Tensor, algorithm: str,
                      root_rel: int) -> tuple[Tensor, Tensor, Tensor]:
        """Heads and relations ``[b, n]`` (one tree per sentence) from encoder states ``h``, and each
        sentence's confidence ``[b]``: the least probability of a word's best head, ``min_i max_j P(j | i)``."""
        dev = h.device
        arc = self.arc(h, padding_mask).float()
        arc.diagonal(dim1=1, dim2=2).fill_(float("-inf"))  # no self loops (in place: arc is a fresh tensor)
        arc = torch.log_softmax(arc, -1)
        conf = arc.amax(-1).masked_fill(~words_mask, 0.0).amin(-1).exp()  # [b]
        ph = decode_heads(arc, lengths, algorithm)  # on dev; only sentences whose greedy heads are no tree leave it
        wm = words_mask  # relations and tags are scored on real words only (no padding)
        d, hh = self.rel.project(h)
        hsel = hh.gather(1, ph[..., None].expand(-1, -1, hh.shape[-1]))[wm]
        rs = self.rel.score(d[wm][:, None], hsel[:, None], torch.zeros(len(hsel), 1, dtype=torch.long, device=dev))
        rs = rs[:, 0]
        is_root = ph[wm] == 0
        rs[:, root_rel] = torch.where(is_root, float("inf"), float("-inf")).to(rs.dtype)
        pr = torch.zeros_like(ph)
        pr[wm] = rs.max(-1).indices  # = argmax (first index on ties), about twice as fast on CPU
        return ph, pr, conf

    def _predict_tags(self, h: Tensor, words_mask: Tensor, lemma_topk: int) -> tuple[Tensor, dict[str, Tensor]]:
        """UPOS ``[b, n]`` and the other tag heads' top classes ``[b, n, k]`` from encoder states ``h``."""
        wm = words_mask
        b, n = wm.shape
        hw = h[wm]
        pu = torch.zeros(b, n, dtype=torch.long, device=h.device)
        pu[wm] = self.tagger(hw).max(-1).indices  # = argmax (first index on ties), faster on CPU
        tops = {}
        for name, tagger in self.taggers.items():
            logits = tagger(hw).float()
            if name == "lemma":  # <unk> (rare rules) is never an answer; column 0 says whether it was the best
                best = logits.max(-1, keepdim=True).indices
                logits[:, 0] = float("-inf")
                top = torch.cat([best, top_classes(logits, lemma_topk)], -1)
            else:
                top = logits.max(-1, keepdim=True).indices
            pt = torch.zeros(b, n, 1 + lemma_topk if name == "lemma" else 1, dtype=torch.long, device=h.device)
            pt[wm, : top.shape[-1]] = top
            tops[name] = pt
        return pu, tops

    @torch.no_grad()
    def attention_weights(self, words: Tensor, char_ids: Tensor, word_types: Tensor, padding_mask: Tensor,
                          labels: Tensor, treebank: Tensor | None = None) -> list[Tensor]:
        """Per-layer attention probabilities, a list of ``[B, H, n, n]`` (from
        ``GraphEncoder(need_weights=True)``; call it in eval mode)."""
        x = self.embed(words, char_ids, word_types, treebank)
        return self.encoder(x, labels, padding_mask, need_weights=True)[1]


def top_classes(logits: Tensor, k: int) -> Tensor:
    """The ``min(k, C)`` best classes of each row of ``logits [N, C]``, best first (lower index first on
    ties): ``[N, min(k, C)]`` long, the indices ``topk`` gives, by ``k`` max passes (on CPU several times
    faster than ``topk`` for small ``k``). ``logits`` is overwritten (the chosen entries become ``-inf``)."""
    out = []
    for _ in range(min(k, logits.shape[-1])):
        idx = logits.max(-1, keepdim=True).indices  # [N, 1]
        out.append(idx)
        logits.scatter_(-1, idx, float("-inf"))
    return torch.cat(out, -1) if out else logits.new_zeros(logits.shape[0], 0, dtype=torch.long)


def _masked_ce(logits: Tensor, gold: Tensor, mask: Tensor) -> Tensor:
    """Summed float32 cross-entropy of ``logits [B, n, K]`` against ``gold [B, n]`` over ``mask [B, n]``'s
    positions, without a host sync (the others' targets are ``ignore_index``)."""
    target = gold.masked_fill(~mask, -100)
    return F.cross_entropy(logits.flatten(0, 1).float(), target.flatten(), ignore_index=-100, reduction="sum")
