"""``g2gt.Error``: the one base class of every error a user can cause.

A bad input file, a wrong option value, a checkpoint of the wrong kind, a training folder in use: each is
raised as a subclass of :class:`Error` (itself a :class:`ValueError`, so ``except ValueError`` keeps
working) with a message that names what was given, what was expected and how to fix it. The ``g2gt``
command prints such an error as one line and exits with status 2; anything else is a bug.

::

    try:
        nlp = g2gt.load("my_model")
    except g2gt.Error as e:
        print(e)          # e.g. "my_model/parser.pt: is a segmenter checkpoint, expected a parser ..."

This module imports nothing, so every layer of the package can raise these errors.
"""

from __future__ import annotations

__all__ = ["Error"]


class Error(ValueError):
    """An error a user can cause and fix: the message says what was expected (subclasses say where)."""
