"""One source of defaults: every default of ``g2gt train STAGE`` and ``g2gt parse`` is the library's.

For each command, each option's default must equal the field of its config dataclass (the model), of the
recipe's :class:`TrainConfig` (optimisation and budget) or the keyword argument of the Python function the
command calls (task options and ``--batch-tokens``), so a model trained from Python with the defaults is the
model the command trains.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from g2gt.cli.main import build_parser
from g2gt.core.config import TrainConfig

SKIP = {"command", "task", "func", "device", "threads", "progress", "debug", "log_level", "out", "resume",
        "overwrite"}


def _cli_defaults(argv: list[str]) -> dict:
    args, extra = build_parser().parse_known_args(argv)
    assert extra == []
    return {k: v for k, v in vars(args).items() if not k.startswith("_") and k not in SKIP}


def _fields(obj_or_cls) -> dict:
    if isinstance(obj_or_cls, type):
        return {f.name: f.default for f in dataclasses.fields(obj_or_cls) if f.default is not dataclasses.MISSING}
    return dataclasses.asdict(obj_or_cls)


def _params(fn) -> dict:
    return {n: p.default for n, p in inspect.signature(fn).parameters.items()
            if p.default is not inspect.Parameter.empty}


def _stage(name: str):
    """``(argv, sources)`` of ``g2gt train NAME``: the library objects its options come from, the training
    function first (its keyword arguments are the task options; a model field of the same name, such as the
    segmenter's ``spaces_in_tokens``, is set from them)."""
    if name == "parser":
        from g2gt.ud.parse import ParserConfig, parser_train_config, train_parser

        return ["train", "parser", "--out", "o"], [train_parser, ParserConfig, parser_train_config()]
    if name == "enhancer":
        from g2gt.ud.enhance import EnhancerConfig, enhancer_train_config, train_enhancer

        return ["train", "enhancer", "--out", "o"], [train_enhancer, EnhancerConfig, enhancer_train_config()]
    if name == "segmenter":
        from g2gt.ud.tokenize import SegmentDataConfig, SegmenterConfig, train_segmenter
        from g2gt.ud.tokenize.train import default_train_config

        return (["train", "segmenter", "--out", "o"],
                [train_segmenter, SegmenterConfig, SegmentDataConfig, default_train_config()])
    if name == "distill":
        from g2gt.ud.parse import ParserConfig, parser_train_config
        from g2gt.ud.parse.distill import train_distill

        return ["train", "distill", "--out", "o"], [train_distill, ParserConfig, parser_train_config()]
    raise AssertionError(name)


#: CLI defaults that differ from the function's by design, each with its reason
BY_DESIGN = {
    ("segmenter", "english_rules"): None,  # None = decided from the --train file's name (en_*); Python has no name
    # None = sized to the device: the library's 1500 on the CPU, more on a GPU (test_device_sized_batch_budgets)
    ("parser", "batch_tokens"): None,
}


def test_device_sized_batch_budgets_are_the_library_defaults_on_the_cpu():
    from g2gt.core.runtime import train_batch_tokens
    from g2gt.seq2seq.config import Seq2SeqConfig
    from g2gt.ud.parse import train_parser

    for default in (_params(train_parser)["batch_tokens"], _fields(Seq2SeqConfig)["batch_tokens"]):
        assert train_batch_tokens(default, "cpu") == default


@pytest.mark.parametrize("stage", ["parser", "enhancer", "segmenter", "distill"])
def test_train_command_defaults_are_the_library_defaults(stage):
    argv, sources = _stage(stage)
    cli = _cli_defaults(argv)
    checked = set()
    for src in sources:
        lib = _params(src) if callable(src) and not isinstance(src, type) else _fields(src)
        for name, value in cli.items():
            if name in lib and name not in checked:
                expected = BY_DESIGN.get((stage, name), lib[name])
                if isinstance(expected, tuple):
                    value = tuple(value)
                assert value == expected, f"g2gt train {stage} --{name.replace('_', '-')}: {value!r} != {expected!r}"
                checked.add(name)
    # the model, the optimisation and the batch size are all covered
    assert {"num_layers", "lr", "max_minutes", "batch_tokens"} <= checked or stage == "segmenter"
    assert {"lr", "max_minutes", "window"} <= checked or stage != "segmenter"


def test_every_train_option_is_checked():
    """No option of ``g2gt train parser`` escapes the comparison (a new one needs a library default)."""
    argv, sources = _stage("parser")
    known = set().union(*((_params(s) if callable(s) and not isinstance(s, type) else _fields(s)) for s in sources))
    extra = {"train", "dev", "init_from", "preset"}  # data, warm start, presets: no library default
    assert set(_cli_defaults(argv)) - known - extra == set()


def test_parser_recipe_is_the_shipped_architecture():
    from g2gt.ud.parse import ParserConfig, parser_train_config

    cfg = ParserConfig(1, 1, 1, 1)
    assert (cfg.d_model, cfg.num_layers, cfg.num_heads, cfg.ffn_dim, cfg.dropout) == (256, 4, 8, 512, 0.15)
    tc = parser_train_config()
    assert (tc.lr, tc.grad_clip, tc.eval_every, tc.metric) == (1.5e-3, 5.0, 200, "las")
    assert isinstance(tc, TrainConfig) and parser_train_config(lr=1e-4).lr == 1e-4


def test_parse_command_defaults_are_the_parsers():
    from g2gt.ud.parse import Parser

    cli = _cli_defaults(["parse", "in.conllu"])
    parse, load = _params(Parser.parse), _params(Parser.load)
    assert cli["algorithm"] == parse["algorithm"] and cli["refine_steps"] is None  # None: the model's own
    assert cli["treebank"] is parse["treebank"] is None
    assert cli["model"] == load["name_or_path"] and cli["dtype"] == load["dtype"]
    assert cli["batch_tokens"] is None is parse["batch_tokens"]  # None: the device's default, in one place
    from g2gt.core.batch import CPU_BATCH_TOKENS, inference_batch_tokens

    assert inference_batch_tokens("cpu") == CPU_BATCH_TOKENS == 1000


RECIPES = [("g2gt.ud.parse.config", "PARSER_TRAIN"), ("g2gt.ud.enhance.config", "ENHANCER_TRAIN"),
           ("g2gt.ud.coref.train", "COREF_TRAIN")]


@pytest.mark.parametrize("module, name", RECIPES)
def test_recipes_are_instances(module, name):
    """A recipe is a TrainConfig instance (one config system), no dict of fields."""
    import importlib

    from g2gt.core.config import recipe_overrides

    mod = importlib.import_module(module)
    recipe = getattr(mod, name)
    assert isinstance(recipe, TrainConfig) and recipe.metric_mode == "max" and recipe.metric != "loss"
    assert "lr" in recipe_overrides(recipe) and not hasattr(mod, f"{name}_DEFAULTS")
    assert not any(isinstance(v, dict) and "lr" in v for v in vars(mod).values())  # no recipe dict left


def test_train_seq2seq_defaults_are_the_config_dataclasses():
    """Every option of ``g2gt train seq2seq`` has the default of its field of :class:`Seq2SeqConfig` or of the
    recipe's :class:`TrainConfig` (:func:`seq2seq_train_config`), under TrainConfig's names; none escapes."""
    from g2gt.seq2seq.config import Seq2SeqConfig, seq2seq_train_config

    cli = _cli_defaults(["train", "seq2seq", "--out", "o"])
    model, train = _fields(Seq2SeqConfig), _fields(seq2seq_train_config())
    assert not set(model) & set(train)  # no TrainConfig field declared again
    assert {"num_layers", "num_heads", "batch_tokens"} <= set(cli) & set(model)
    assert {"lr", "max_minutes", "metric", "average_last", "eval_every"} <= set(cli) & set(train)
    data = {"src_train", "tgt_train", "src_dev", "tgt_dev", "src_graphs", "src_dev_graphs", "preset"}
    assert set(cli) - set(model) - set(train) - data == set()
    assert cli.pop("batch_tokens") is None  # sized to the device: Seq2SeqConfig's on the CPU (test above)
    for name in set(cli) - data:
        lib = model[name] if name in model else train[name]
        value = tuple(cli[name]) if isinstance(cli[name], list) else cli[name]
        assert value == lib, f"g2gt train seq2seq --{name.replace('_', '-')}: {value!r} != {lib!r}"
