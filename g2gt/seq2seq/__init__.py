"""Sequence-to-sequence (and graph-to-sequence) translation on the G2GT core.

* :mod:`.translator`: ``Translator`` -- load a model by name or path, translate lines, files and streams
  (``Translator.load(name_or_path, device="auto", dtype="auto")``, ``translator(lines)``, ``pipe``,
  ``translate_file``, ``save``); :mod:`.package`: translation models by name and as installable packages;
* :mod:`.config`: ``Seq2SeqSettings`` (one model's data / decoding settings), ``TranslateConfig`` (how a
  Translator decodes), ``Seq2SeqConfig`` (the model and data settings of the training recipe) and
  ``seq2seq_train_config`` (its ``TrainConfig``);
* :mod:`.data`: aligned text files (``read_lines``, ``read_parallel``, ``read_training_data``);
* :mod:`.task`: the task for the Trainer (``Seq2SeqTask``), decoding, ``load_seq2seq``;
* :mod:`.metrics`: ``mt_scores``, corpus BLEU / chrF through sacreBLEU's metric objects;
* :mod:`.recipe`: ``train_seq2seq``, ``final_evaluation``.

Greedy and beam search live beside the model (:meth:`g2gt.nn.G2GTransformer.generate`, :mod:`g2gt.nn.search`).
Importing this package does not import torch: the names of :mod:`.task`,
:mod:`.recipe` and :mod:`.translator` load on first use.
"""

from .._lazy import lazy_exports
from typing import TYPE_CHECKING

from .config import Seq2SeqConfig, Seq2SeqSettings, TranslateConfig, seq2seq_train_config
from .data import MisalignedError, check_aligned, read_lines, read_parallel, read_training_data
from .metrics import mt_scores
from .package import build_translation_package, find_translator, training_card

_LAZY = {
    "Seq2SeqTask": "task", "load_seq2seq": "task",
    "Seq2SeqRun": "recipe", "final_evaluation": "recipe", "train_seq2seq": "recipe", "Translator": "translator",
}

if TYPE_CHECKING:  # pragma: no cover
    from .recipe import Seq2SeqRun, final_evaluation, train_seq2seq
    from .translator import Translator
    from .task import Seq2SeqTask, load_seq2seq


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "MisalignedError", "Seq2SeqConfig", "Seq2SeqRun", "Seq2SeqSettings", "Seq2SeqTask", "TranslateConfig",
    "Translator", "build_translation_package", "check_aligned", "final_evaluation", "find_translator",
    "load_seq2seq", "mt_scores", "read_lines", "read_parallel", "read_training_data", "seq2seq_train_config",
    "train_seq2seq", "training_card",
]
