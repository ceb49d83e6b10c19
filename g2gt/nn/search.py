"""Sequence decoding over the KV cache: greedy search and batched beam search.

Both work with any model exposing ``encode(tokens, labels, padding_mask)``,
``init_cache()`` and ``decode(new_tokens, memory, memory_padding_mask, cache=...)``;
:meth:`g2gt.nn.G2GTransformer.generate` encodes a batch and calls them. The translation task
(:mod:`g2gt.seq2seq`) and the UD multiword-token expander both decode through here. Tree decoding
(MST, Eisner) lives in :mod:`g2gt.ud.parse.trees`.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["greedy_search", "beam_search"]


def _reorder(cache, index: Tensor) -> None:
    for self_c, cross_c in cache:
        self_c.reorder(index)
        cross_c.reorder(index)


@torch.no_grad()
def greedy_search(
    model, memory: Tensor, memory_padding_mask: Tensor | None, max_len: int, bos_id: int, eos_id: int,
) -> list[list[int]]:
    """Greedy decoding. ``memory [B, n, d]`` -> per sentence the token ids (no BOS/EOS).

    Finished sentences keep being fed EOS so the batch stays rectangular; their
    outputs are cut at the first EOS.
    """
    B = memory.shape[0]
    cache = model.init_cache()
    tok = torch.full((B, 1), bos_id, dtype=torch.long, device=memory.device)
    out = []
    done = torch.zeros(B, dtype=torch.bool, device=memory.device)
    for _ in range(max_len):
        logits = model.decode(tok, memory, memory_padding_mask, cache=cache)[:, -1]
        nxt = logits.float().argmax(-1)
        nxt = nxt.masked_fill(done, eos_id)
        out.append(nxt)
        done |= nxt == eos_id
        if bool(done.all()):
            break
        tok = nxt[:, None]
    seqs = torch.stack(out, 1).tolist() if out else [[] for _ in range(B)]
    return [s[: s.index(eos_id)] if eos_id in s else s for s in seqs]


@torch.no_grad()
def beam_search(
    model, memory: Tensor, memory_padding_mask: Tensor | None, max_len: int, bos_id: int, eos_id: int,
    beam_size: int = 5, length_penalty: float = 1.0, return_scores: bool = False,
) -> list[list[int]] | list[list[tuple[float, list[int]]]]:
    """Batched beam search.

    A hypothesis ``y`` is ranked by its length-normalised log-probability
    ``sum_t log p(y_t | y_<t, x) / T ** length_penalty`` where ``T`` counts the
    scored tokens (the EOS included). A sentence stops once it has ``beam_size``
    finished hypotheses (an EOS counts only when it ranks among the top ``beam_size``
    candidates of its step, as in fairseq); at ``max_len`` the live beams are finished as they are
    (no EOS scored). With ``beam_size=1`` this is exactly :func:`greedy_search`.

    Args:
        memory: ``[B, n, d]`` encoder output; ``memory_padding_mask``: ``[B, n]`` bool.
        return_scores: return, per sentence, every finished ``(normalised score, tokens)``
            sorted best first, instead of the best tokens only.

    Returns:
        the best hypothesis per sentence (token ids, no BOS/EOS).
    """
    B, n, d = memory.shape
    K = beam_size
    dev = memory.device
    memory = memory.repeat_interleave(K, 0)
    mpm = None if memory_padding_mask is None else memory_padding_mask.repeat_interleave(K, 0)
    cache = model.init_cache()
    sdtype = torch.promote_types(memory.dtype, torch.float32)  # float32 under autocast, float64 stays
    scores = torch.full((B, K), float("-inf"), device=dev, dtype=sdtype)
    scores[:, 0] = 0.0
    hyps = torch.full((B * K, 1), bos_id, dtype=torch.long, device=dev)
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    active = [True] * B

    def norm(score: float, length: int) -> float:
        return score / (length**length_penalty) if length_penalty else score

    for _ in range(max_len):
        logits = model.decode(hyps[:, -1:], memory, mpm, cache=cache)[:, -1]
        logp = torch.log_softmax(logits.to(sdtype), -1)  # [B*K, V]
        V = logp.shape[-1]
        cand = (scores.view(B * K, 1) + logp).view(B, K * V)
        top_s, top_i = cand.topk(min(2 * K, K * V), dim=-1)  # [B, 2K]
        beam_idx, tok = top_i // V, top_i % V
        new_scores = torch.full((B, K), float("-inf"), device=dev, dtype=sdtype)
        src_rows = torch.zeros(B, K, dtype=torch.long, device=dev)
        new_tok = torch.full((B, K), eos_id, dtype=torch.long, device=dev)
        ts, bi, tk = top_s.tolist(), beam_idx.tolist(), tok.tolist()
        for b in range(B):
            if not active[b]:
                src_rows[b] = b * K
                continue
            kept = 0
            for rank, (s, origin, t) in enumerate(zip(ts[b], bi[b], tk[b])):
                if s == float("-inf"):
                    break
                if t == eos_id:
                    # as in fairseq: an EOS finishes a hypothesis only when it ranks among the
                    # top K candidates; lower-ranked EOS candidates are dropped, so they cannot
                    # fill the finished list while better live beams remain
                    if rank < K:
                        seq = hyps[b * K + origin, 1:].tolist()
                        finished[b].append((norm(s, len(seq) + 1), seq))
                        if len(finished[b]) >= K:
                            break
                    continue
                if kept < K:
                    new_scores[b, kept] = s
                    src_rows[b, kept] = b * K + origin
                    new_tok[b, kept] = t
                    kept += 1
                if kept == K and len(finished[b]) + kept >= K:
                    break
            if len(finished[b]) >= K:
                active[b] = False
        if not any(active):
            break
        rows = src_rows.view(-1)
        hyps = torch.cat([hyps.index_select(0, rows), new_tok.view(-1, 1)], 1)
        _reorder(cache, rows)
        scores = new_scores
    for b in range(B):
        if active[b] or not finished[b]:
            for k in range(K):
                s = float(scores[b, k])
                if s != float("-inf"):
                    seq = hyps[b * K + k, 1:].tolist()
                    finished[b].append((norm(s, max(len(seq), 1)), seq))  # no EOS was scored
    if return_scores:
        return [sorted(f, key=lambda x: -x[0]) for f in finished]
    return [max(f, key=lambda x: x[0])[1] if f else [] for f in finished]
