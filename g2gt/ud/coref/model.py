r"""The coreference model: a window's words and trees in, mentions and antecedent links out.

Node input (word ``i`` of a window): ``e_i = LN(E_word[w_i] + CharCNN(w_i) + E_upos[u_i] + E_rel[r_i] +
E_morph[m_i])``. Three label channels enter every attention score (:class:`g2gt.nn.GraphAttention`): the
relative position ``clip(j - i, -k, k)``, the dependency trees (``rel↑`` / ``rel↓``) and the signed sentence
distance ``clip(s_j - s_i, -K, K)`` (:func:`g2gt.ud.coref.data.sentence_distance_labels`). After a
:class:`g2gt.nn.layers.GraphEncoder` (states ``x [B, n, d]``):

* **mention heads and types**: ``P(t_i) = softmax(MLP(x_i))`` over ``0`` (no mention headed by word ``i``),
  ``1`` (a mention of unknown type) and ``1 + k`` (a mention of entity type ``k``);
* **extents**: for a head ``i``, the first word ``a`` and the last word ``b`` of its mention are chosen among
  the words of ``i``'s subtree, ``a ∈ [left_i, i]``, ``b ∈ [i, right_i]``:
  ``s^start_ia = d_i^T U h_a + h_a^T u + β[clip(i - a)]`` (a biaffine head-selection scorer,
  :class:`g2gt.nn.heads.BiaffineArcScorer`, plus an offset bias), softmax over the allowed ``a``; the same
  for ``b``;
* **antecedents**: between mention heads, as the parser scores arcs,
  ``s_ij = d_i^T U h_j + h_j^T u + β_dist[bucket(i - j)] + β_sent[clip(s_i - s_j)] + β_lemma[lemma_i = lemma_j]``
  for ``j < i``, and ``s_iε = 0`` for "no antecedent" (a new entity).

Loss (summed): cross-entropy of the head tags over every word; of start and end over the gold mention heads;
and for the antecedents the negative log of the probability mass on correct antecedents,
``-log Σ_{j ∈ gold(i)} softmax_j(s_i·)`` (``gold(i) = {ε}`` for the first mention of an entity), over the
mention heads ``i`` gold or predicted, with candidates ``j`` gold or predicted mention heads (so that the
model learns to leave a wrongly detected mention alone).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...core.graph import num_chain_labels
from ...nn.heads import MLP, BiaffineArcScorer, CharCNNWordEncoder
from ...nn.layers import GraphEncoder
from .config import CorefConfig
from .data import CorefBatch, sentence_distance_labels

__all__ = ["CorefConfig", "CorefModel", "distance_bucket", "NUM_DIST_BUCKETS"]

NUM_DIST_BUCKETS = 14
_MAX_OFFSET = 32


def distance_bucket(d: Tensor) -> Tensor:
    """Buckets of a positive distance: ``1 .. 4`` as they are, then ``[5, 8) [8, 16) ...`` up to 13 (``d >=
    1024``); 0 for ``d <= 0``."""
    d = d.clamp(min=0)
    log = torch.floor(torch.log2(d.clamp(min=1).float())).long()
    return torch.where(d <= 4, d, (log + 3).clamp(max=NUM_DIST_BUCKETS - 1))


class CorefModel(nn.Module):
    """Words + trees -> mention heads, extents and antecedent scores (module docstring).

    Shapes: a :class:`g2gt.ud.coref.data.CorefBatch` of ``B`` windows of at most ``n`` words.
    """

    def __init__(self, config: CorefConfig) -> None:
        super().__init__()
        self.config = c = config
        self.word_embed = nn.Embedding(c.num_words, c.d_model, padding_idx=0)
        self.char_encoder = CharCNNWordEncoder(c.num_chars, c.d_model, c.char_dim, c.char_filters)
        self.upos_embed = nn.Embedding(c.num_upos, c.d_model, padding_idx=0)
        self.rel_embed = nn.Embedding(c.num_rels, c.d_model, padding_idx=0)
        self.morph_embed = nn.Embedding(c.num_morph, c.d_model, padding_idx=0)
        self.embed_norm = nn.LayerNorm(c.d_model)
        self.embed_dropout = nn.Dropout(c.dropout)
        sizes = [num_chain_labels(c.max_distance), c.num_tree_labels, 2 * c.max_sentences + 2]
        self.encoder = GraphEncoder(c.num_layers, c.d_model, c.num_heads, c.ffn_dim, sizes, c.value_labels,
                                    c.dropout, c.attention_dropout, True, c.activation)
        self.tagger = nn.Sequential(MLP(c.d_model, c.d_model, c.head_dropout), nn.Linear(c.d_model, c.num_tags))
        self.start = BiaffineArcScorer(c.d_model, c.span_dim, c.head_dropout)
        self.end = BiaffineArcScorer(c.d_model, c.span_dim, c.head_dropout)
        self.start_offset = nn.Embedding(_MAX_OFFSET + 1, 1)
        self.end_offset = nn.Embedding(_MAX_OFFSET + 1, 1)
        self.antecedent = BiaffineArcScorer(c.d_model, c.antecedent_dim, c.head_dropout)
        self.dist_bias = nn.Embedding(NUM_DIST_BUCKETS, 1)
        self.sent_bias = nn.Embedding(c.max_sentences + 1, 1)
        self.lemma_bias = nn.Embedding(2, 1)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        std = self.config.d_model ** -0.5
        for emb in (self.word_embed, self.upos_embed, self.rel_embed, self.morph_embed):
            nn.init.normal_(emb.weight, std=std)
            with torch.no_grad():
                emb.weight[0].zero_()
        self.char_encoder.reset_parameters()
        self.embed_norm.reset_parameters()
        self.encoder.reset_parameters()
        self.tagger[0].reset_parameters()
        self.tagger[1].reset_parameters()
        for m in (self.start, self.end, self.antecedent):
            m.reset_parameters()
        for emb in (self.start_offset, self.end_offset, self.dist_bias, self.sent_bias, self.lemma_bias):
            nn.init.zeros_(emb.weight)

    def extra_repr(self) -> str:
        c = self.config
        return f"d_model={c.d_model}, layers={c.num_layers}, tags={c.num_tags}"

    # ------------------------------------------------------------------ pieces
    def encode(self, batch: CorefBatch) -> Tensor:
        """Encoder states ``[B, n, d]``."""
        g = batch.graphs
        f = g.node_features
        x = self.word_embed(g.tokens) + self.char_encoder(batch.char_ids)[batch.word_types] \
            + self.upos_embed(f["upos"]) + self.rel_embed(f["rel"]) + self.morph_embed(f["morph"])
        x = self.embed_dropout(self.embed_norm(x))
        sent = sentence_distance_labels(f["sentence"], self.config.max_sentences)
        sent = sent.masked_fill(g.padding_mask[:, None, :] | g.padding_mask[:, :, None], 0)
        labels = torch.cat([g.labels.long(), sent[:, None]], 1)
        return self.encoder(x, labels, g.padding_mask)

    def extent_scores(self, x: Tensor, batch: CorefBatch) -> tuple[Tensor, Tensor]:
        """Start and end logits ``[B, n, n]`` (row = head, column = candidate word), ``-inf`` outside the head's
        subtree on that side."""
        f = batch.graphs.node_features
        n = x.shape[1]
        pos = torch.arange(n, device=x.device)
        off = (pos[:, None] - pos[None, :])  # i - j
        s = self.start(x) + self.start_offset(off.clamp(0, _MAX_OFFSET)).squeeze(-1)
        e = self.end(x) + self.end_offset((-off).clamp(0, _MAX_OFFSET)).squeeze(-1)
        ok_s = (pos[None, None, :] >= f["left"][:, :, None]) & (pos[None, None, :] <= pos[None, :, None])
        ok_e = (pos[None, None, :] <= f["right"][:, :, None]) & (pos[None, None, :] >= pos[None, :, None])
        return s.masked_fill(~ok_s, float("-inf")), e.masked_fill(~ok_e, float("-inf"))

    def antecedent_scores(self, x: Tensor, batch: CorefBatch) -> Tensor:
        """Antecedent logits ``[B, n, n]`` (row = anaphor ``i``, column = candidate ``j``), ``-inf`` for ``j >= i``;
        the score of "no antecedent" is 0."""
        f = batch.graphs.node_features
        n = x.shape[1]
        pos = torch.arange(n, device=x.device)
        s = self.antecedent(x) + self.dist_bias(distance_bucket(pos[:, None] - pos[None, :])).squeeze(-1)
        sd = (f["sentence"][:, :, None] - f["sentence"][:, None, :]).clamp(0, self.config.max_sentences)
        same = (f["lemma"][:, :, None] == f["lemma"][:, None, :]).long()
        s = s + self.sent_bias(sd).squeeze(-1) + self.lemma_bias(same).squeeze(-1)
        return s.masked_fill(pos[None, :] >= pos[:, None], float("-inf"))

    # ------------------------------------------------------------------ training
    def forward(self, batch: CorefBatch) -> Tensor:
        """The summed training loss of a batch (module docstring)."""
        g = batch.graphs
        f = g.node_features
        words = ~g.padding_mask
        x = self.encode(batch)
        tags = self.tagger(x)  # [B, n, T]
        loss = F.cross_entropy(tags[words].float(), f["tag"][words], reduction="sum")
        gold = words & (f["tag"] > 0)
        if gold.any():
            s, e = self.extent_scores(x, batch)
            b, i = gold.nonzero(as_tuple=True)
            ts = torch.maximum(torch.minimum(f["start"][b, i] - 1, i), f["left"][b, i])
            te = torch.minimum(torch.maximum(f["end"][b, i] - 1, i), f["right"][b, i])
            loss = loss + F.cross_entropy(s[b, i].float(), ts, reduction="sum") \
                + F.cross_entropy(e[b, i].float(), te, reduction="sum")
        pred = words & (tags.detach().argmax(-1) > 0)
        cand = gold | pred
        if cand.any():
            a = self.antecedent_scores(x, batch).float()
            a = a.masked_fill(~cand[:, None, :], float("-inf"))
            cl = f["cluster"]
            same = (cl[:, :, None] == cl[:, None, :]) & (cl[:, :, None] > 0) & gold[:, None, :] & torch.isfinite(a)
            dummy = a.new_zeros(a.shape[:2] + (1,))
            scores = torch.cat([a, dummy], -1)  # [B, n, n + 1]
            ok = torch.cat([same, ~same.any(-1, keepdim=True)], -1)
            b, i = cand.nonzero(as_tuple=True)
            sc, gk = scores[b, i], ok[b, i]
            loss = loss + (torch.logsumexp(sc, -1) - torch.logsumexp(sc.masked_fill(~gk, float("-inf")), -1)).sum()
        return loss

    @torch.no_grad()
    def predict(self, batch: CorefBatch) -> dict[str, Tensor]:
        """Per window: ``tag [B, n]`` (argmax), ``tag_probs [B, n, T]``, ``start`` / ``end [B, n]`` (argmax window
        positions) and antecedent logits ``antecedent [B, n, n]``."""
        x = self.encode(batch)
        tags = self.tagger(x).float()
        s, e = self.extent_scores(x, batch)
        return {"tag": tags.argmax(-1), "tag_probs": tags.softmax(-1), "start": s.argmax(-1), "end": e.argmax(-1),
                "antecedent": self.antecedent_scores(x, batch).float()}
