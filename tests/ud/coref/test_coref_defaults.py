"""One source of the coreference recipe's defaults: `g2gt train coref`, `train_coref` and `g2gt train pipeline`
train with :func:`coref_train_config`, the model fields of :class:`CorefConfig` and `train_coref`'s keywords."""

import dataclasses
import inspect

from g2gt.cli.main import build_parser
from g2gt.ud.coref.config import CorefConfig
from g2gt.core.config import recipe_overrides
from g2gt.ud.coref.train import COREF_TRAIN, coref_train_config, train_coref


def test_cli_defaults_are_the_recipe_defaults():
    args, _ = build_parser().parse_known_args(["train", "coref", "--out", "o"])
    tc = coref_train_config()
    model = {f.name: f.default for f in dataclasses.fields(CorefConfig) if f.default is not dataclasses.MISSING}
    task = {n: p.default for n, p in inspect.signature(train_coref).parameters.items()
            if p.default is not inspect.Parameter.empty}
    checked = 0
    for name, value in vars(args).items():
        for lib in (model, dataclasses.asdict(tc), task):
            if name in lib and name not in ("resume", "progress", "device", "threads"):
                assert value == lib[name], f"--{name.replace('_', '-')}: {value!r} != {lib[name]!r}"
                checked += 1
                break
    assert checked >= 20
    assert args.batch_tokens == task["batch_tokens"]
    assert args.init_from is None
    assert all(getattr(tc, k) == v for k, v in recipe_overrides(COREF_TRAIN).items())
    assert (tc.metric, tc.metric_mode) == ("conll", "max")
