"""Training recipes: a UD treebank to a scored model folder (``g2gt train pipeline``) and the training folders
they keep.

* :mod:`~g2gt.ud.recipe.train` — :func:`~g2gt.ud.recipe.train.train_pipeline`: every stage a treebank supports,
  each in its own training folder, with the budget split among them, then the model folder and its card;
* :mod:`~g2gt.ud.recipe.score` — the model folder scored on the dev set (official CoNLL 2018 scorer, from raw
  text and from the gold tokenisation) and the facts the card records (treebank, machine);
* :mod:`~g2gt.core.run_folder` — what a training folder holds (finished or not, its budget, the commands that
  trained it: ``commands.jsonl``).

Importing this package loads none of them: import the module you use.
"""
