"""CLI sub-commands. Each module here defines ``register(subparsers, train_subparsers)``
and adds its own commands; :mod:`g2gt.cli` calls every module listed in
``COMMAND_MODULES``."""

COMMAND_MODULES = [
    "g2gt.commands.parsing",   # train parser, parse, demo, attention
    "g2gt.commands.seq2seq",   # train seq2seq, translate, evaluate-mt
    "g2gt.commands.ud",        # evaluate, draw
    "g2gt.commands.bench",     # bench
]
