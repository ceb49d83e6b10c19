"""CLI sub-commands. Each module listed in ``COMMAND_MODULES`` defines ``register(subparsers)`` (and, for
``g2gt train TASK``, ``register_train(subparsers)``), adding its commands with
``subparsers.add_parser(name, help=..., configure=fn)``: ``fn(parser)`` adds the options and
``parser.set_defaults(func=run)`` only when that command is used. Modules import torch and the library
inside their ``run`` functions, never at module level. Shared pieces are in :mod:`g2gt.cli.common`."""

COMMAND_MODULES = [
    "g2gt.cli.parsing",   # train parser, parse
    "g2gt.cli.demo",      # demo, attention
    "g2gt.cli.distill",   # train distill
    "g2gt.cli.seq2seq",   # train seq2seq, translate, evaluate-mt
    "g2gt.cli.ud",        # evaluate, draw
    "g2gt.cli.enhance",  # train enhancer, enhance
    "g2gt.cli.coref",     # train coref, coref
    "g2gt.cli.lemma",     # train lemmatizer
    "g2gt.cli.models",    # models, export-model
    "g2gt.cli.treebank",  # train segmenter, train pipeline, package
    "g2gt.cli.average",   # average (checkpoint averaging)
    "g2gt.cli.bench",     # bench
    "g2gt.cli.serve",     # serve
    "g2gt.cli.kernel",    # build-kernel
]
