r"""Lemmas as edit scripts (UDPipe-style), so that unseen words still get lemmas.

A rule turns a word form ``f`` into its lemma ``l`` in two parts, ``"<case>|<strip>|<append>"``:

* the *core*: lowercase ``f``, strip its last ``strip`` characters, append ``append``
  (the shortest such edit: ``strip = len(f) - p`` with ``p`` the longest common prefix of
  ``lower(f)`` and ``lower(l)``);
* the *casing* ``case`` of the result: ``l`` lowercase (``"l"``), the form's own casing kept on
  the common prefix (``"k"``, e.g. proper nouns ``Paris -> Paris``), first letter upper (``"t"``)
  or all upper (``"u"``).

``rule_for("Running", "run") == "l|4|"``, ``rule_for("mice", "mouse") == "l|3|ouse"``,
``rule_for("was", "be") == "l|3|be"``. A pair that no rule expresses (rare) becomes the
verbatim rule ``"=" + lemma``. :func:`apply_rule` inverts :func:`rule_for`:
``apply_rule(f, rule_for(f, l)) == l`` for every pair.

Lowercasing is Python's, except that the dotted capital ``İ`` (U+0130, Turkish and Azerbaijani), which
Python lowercases to two characters (``i`` + combining dot), becomes ``i``: ``İzini -> iz`` is then the
common rule ``"l|3|"`` instead of a rule of its own.
"""

from __future__ import annotations

import functools

__all__ = ["rule_for", "apply_rule", "rule_applies", "lemma_if_applies"]


def _lower(form: str) -> str:
    """``form.lower()``, with the ``i`` + combining dot that ``İ`` lowercases to made a plain ``i``."""
    low = form.lower()
    return low.replace("i\u0307", "i") if "\u0130" in form else low


def _core(form: str, lemma_lower: str) -> tuple[int, str]:
    low = _lower(form)
    p = 0
    m = min(len(low), len(lemma_lower))
    while p < m and low[p] == lemma_lower[p]:
        p += 1
    return len(low) - p, lemma_lower[p:]


def _cased(form: str, strip: int, append: str, case: str) -> str:
    low = _lower(form)
    if len(low) != len(form):  # lowercasing changed the length: no form-cased prefix
        base = low[: len(low) - strip] + append
        return base if case == "l" else _recase(base, case)
    if case == "k":
        return form[: len(form) - strip] + append
    base = low[: len(form) - strip] + append
    return base if case == "l" else _recase(base, case)


def _recase(s: str, case: str) -> str:
    if case == "u":
        return s.upper()
    if case == "t":
        return s[:1].upper() + s[1:]
    return s


def rule_for(form: str, lemma: str) -> str:
    """The edit rule that turns ``form`` into ``lemma`` (see the module docstring)."""
    if lemma in ("", "_") and form != "_":
        return "=_"
    strip, append = _core(form, _lower(lemma))
    for case in ("l", "k", "t", "u"):
        if _cased(form, strip, append, case) == lemma:
            return f"{case}|{strip}|{append}"
    return "=" + lemma


def rule_applies(form: str, rule: str) -> bool:
    """Whether ``rule`` can be applied to ``form``: it strips no more characters than ``form`` has and
    leaves a non-empty lemma."""
    if rule.startswith("="):
        return True
    parts = rule.split("|", 2)
    try:
        strip = int(parts[1])
    except (IndexError, ValueError):
        return False
    n = len(_lower(form))
    return strip < n or (strip == n and parts[2] != "")


def apply_rule(form: str, rule: str) -> str:
    """The lemma that ``rule`` gives for ``form``; the lowercased form if the rule does not apply."""
    if rule.startswith("="):
        return rule[1:]
    parts = rule.split("|", 2)
    if len(parts) != 3 or not rule_applies(form, rule):
        return _lower(form)
    case, strip, append = parts[0], int(parts[1]), parts[2]
    return _cased(form, strip, append, case)


@functools.lru_cache(maxsize=1 << 16)
def lemma_if_applies(form: str, rule: str) -> str | None:
    """``apply_rule(form, rule)`` when :func:`rule_applies`, else None; memoised (decoding asks for the same
    frequent words and rules again and again)."""
    return apply_rule(form, rule) if rule_applies(form, rule) else None
