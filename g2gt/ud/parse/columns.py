"""Which CoNLL-U columns the parser writes and which a user may keep from the input (torch-free).

* predicted: HEAD, DEPREL, UPOS, and XPOS, FEATS, LEMMA when the model has those heads;
* ``keep``: columns named there are copied from the input instead of being predicted;
  HEAD / DEPREL are always predicted;
* DEPS: written ``_`` unless kept (``"deps"``) or predicted (``enhanced=True``);
* ID, FORM, MISC, comments and multiword-token lines always pass through unchanged.
"""

from __future__ import annotations

from typing import Iterable

__all__ = ["KEEPABLE_COLUMNS", "PASS_THROUGH_COLUMNS", "check_keep"]

KEEPABLE_COLUMNS = ("upos", "xpos", "feats", "lemma", "deps")
PASS_THROUGH_COLUMNS = ("id", "form", "misc")  # never predicted: naming them in `keep` changes nothing


def check_keep(keep: Iterable[str] | str) -> set[str]:
    """The lowercased column names of ``keep`` (one name or several); ``ValueError`` for HEAD / DEPREL
    (always predicted) and for names that are not CoNLL-U columns the parser writes."""
    names = [keep] if isinstance(keep, str) else list(keep)
    out = set()
    for name in names:
        k = str(name).lower()
        if k in ("head", "deprel"):
            raise ValueError(f"keep={name!r}: HEAD and DEPREL are what the parser predicts; to start from the "
                             "input's tree use use_input_graph=True (g2gt parse --refine)")
        if k not in KEEPABLE_COLUMNS + PASS_THROUGH_COLUMNS:
            raise ValueError(f"keep={name!r}: not a CoNLL-U column the parser writes; expected some of "
                             f"{', '.join(KEEPABLE_COLUMNS)}")
        out.add(k)
    return out
