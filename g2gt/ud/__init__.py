"""Universal Dependencies: raw text to tokens, sentences, tags, lemmas, trees and enhanced graphs.

* :mod:`~g2gt.ud.pipeline` — :class:`Pipeline` (``g2gt.load()``), the stages in order;
  :mod:`~g2gt.ud.stage` — the stage protocol, dtypes, saving;
* :mod:`~g2gt.ud.tokenize` — the learned segmenter (tokens, sentences, multiword tokens) and the rule tokenizer;
* :mod:`~g2gt.ud.parse` — tagger, lemmatizer and graph-to-graph parser; :mod:`~g2gt.ud.enhance` — enhanced UD;
* :mod:`~g2gt.ud.document` — the result object (:mod:`~g2gt.ud.io.views`: its words and tokens,
  :mod:`~g2gt.ud.spans`: coreference entities); :mod:`~g2gt.ud.spacy` — the result in spaCy, g2gt as a spaCy
  pipeline;
* :mod:`~g2gt.ud.io` — CoNLL-U and sentences (the model registry and packages are :mod:`g2gt.core.registry`
  and :mod:`g2gt.core.package`);
* :mod:`~g2gt.ud.evaluate` — the CoNLL 2018 scorer and the UD validator; :mod:`~g2gt.ud.draw` — SVG trees;
* :mod:`~g2gt.ud.scale` — corpus scale: worker processes, many files, Ray Data;
* training recipes: :mod:`~g2gt.ud.recipe` (``g2gt train pipeline``, its scores, training folders).

Importing this package imports nothing: each module loads when it is used.
"""
