"""Translation scores: corpus BLEU and chrF through sacreBLEU's metric objects, with their signatures.

This is the one scorer of the project (dev evaluation while training, the final dev translation,
``g2gt evaluate-mt`` and ``benchmarks/seq2seq.py``). Hypotheses and references are detokenized text;
sacreBLEU tokenizes them itself (13a for BLEU) so the numbers are comparable with published ones.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["mt_scores"]


def mt_scores(refs: Sequence[str], hyps: Sequence[str], lowercase: bool = False) -> dict:
    """Corpus BLEU and chrF of ``hyps`` against one reference each.

    Returns ``{"bleu", "chrf", "bleu_signature", "chrf_signature", "bleu_detail", "sentences",
    "lowercase"}``: the scores (0-100) from ``sacrebleu.metrics.BLEU(lowercase=...)`` and
    ``CHRF(lowercase=...)``, sacreBLEU's own signature strings (e.g.
    ``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0``) and its verbose BLEU line (n-gram
    precisions, brevity penalty). Raises ``ValueError`` for different lengths or no sentences.

    Args:
        refs: one reference per sentence.
        hyps: one hypothesis per sentence.
        lowercase: score case-insensitively.

    Returns:
        The scores, as a dict.

    Raises:
        ValueError: different lengths or no sentences.
    """
    from sacrebleu.metrics import BLEU, CHRF

    refs, hyps = list(refs), list(hyps)
    if len(refs) != len(hyps):
        raise ValueError(f"{len(refs)} references but {len(hyps)} hypotheses: expected one hypothesis per reference")
    if not refs:
        raise ValueError("nothing to score: no sentences")
    bleu, chrf = BLEU(lowercase=lowercase), CHRF(lowercase=lowercase)
    b = bleu.corpus_score(hyps, [refs])
    c = chrf.corpus_score(hyps, [refs])
    return {"bleu": float(b.score), "chrf": float(c.score), "bleu_signature": str(bleu.get_signature()),
            "chrf_signature": str(chrf.get_signature()), "bleu_detail": str(b), "sentences": len(refs),
            "lowercase": bool(lowercase)}
