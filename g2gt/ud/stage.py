"""What every pipeline stage shares: the stage protocol, the one place dtype names are read, and saving.

A **stage** maps sentences to sentences (the first stage maps raw text to sentences):

==========  =====================================  ================  ===============================
name        class                                  file              does
==========  =====================================  ================  ===============================
tokenize    :class:`g2gt.ud.tokenize.Segmenter`    ``segmenter.pt``  text -> sentences, words, MWTs
parse       :class:`g2gt.ud.parse.Parser`          ``parser.pt``     tags, lemmas, features, trees
enhance     :class:`g2gt.ud.enhance.Enhancer`      ``enhancer.pt``   enhanced graphs (DEPS)
==========  =====================================  ================  ===============================

Each class has the same protocol:

* ``Cls.load(name_or_path, device="auto", dtype="auto")``: a shipped model's name, a model folder (its stage
  file), a training folder (``best.pt``, else ``last.pt``) or a checkpoint file; ``weights_only=True``,
  ``strict=True``;
* ``stage.save(path, storage_dtype="float16")``: one checkpoint file that ``load`` reads back (weights, the
  model's config dataclass as a dict, the task's vocabularies, the training record and ``kind``);
* ``stage(x)``: sentences in, new sentences out.

**Your own stage.** A stage of your own is a callable ``list[Sentence] -> list[Sentence]`` (it may edit the
sentences in place and return them). Add one to one pipeline with :meth:`g2gt.ud.pipeline.Pipeline.add_stage`, or
register a factory so that every :func:`g2gt.load` adds it::

    from g2gt.ud.stage import register_stage

    @register_stage("sentiment", after="parse")         # runs right after the parser
    def make_sentiment(context, lexicon="default"):      # context: StageContext; options from load(config=...)
        return SentimentTagger(lexicon)                  # or None: this model has no such stage, skip it

    nlp = g2gt.load(config={"sentiment": {"lexicon": "mine"}})   # exclude=("sentiment",) leaves it out

A stage that ships with a model (a ``coref`` stage after ``parse`` reading ``coref.pt`` from the model folder)
is registered the same way, in the module that defines it, with ``file="coref.pt"``: its factory gets the
folder in ``context.folder`` and returns None when the file is not there; ``lazy=True`` loads it on first use
(``nlp.stages`` never loads anything), with ``cls_name`` naming its class in ``repr(nlp)`` until then.
The module must be imported before :func:`g2gt.load` (worker processes of ``nlp.pipe(n_process=N)`` import
it again from its name, so it cannot be a script's ``__main__``).

``device`` and ``dtype`` are read by :func:`g2gt.core.runtime.resolve_device` and
:func:`g2gt.core.runtime.resolve_dtype`, the one reading of both: ``"auto"`` picks the fastest precision for the
device that keeps the stage's accuracy (int8 only for stages measured with it: the parser), ``"float32"`` /
``"bfloat16"`` / ``"int8"`` or a ``torch.dtype`` force one, ``None`` keeps the stored weights' dtype cast to
float32.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn


__all__ = ["StageContext", "StageSpec", "LazyStage", "StageList", "register_stage", "registered_stages",
           "unregister_stage", "prepare_for_inference", "configured_stage",
           "PART_FILES", "stage_checkpoint", "read_stage", "save_stage", "checkpoint_record", "RECORD_KEYS"]

#: stage -> its file in a model folder
PART_FILES = {"parser": "parser.pt", "segmenter": "segmenter.pt", "enhancer": "enhancer.pt"}
STORAGE_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def prepare_for_inference(model: nn.Module, dtype: torch.dtype, device: str | torch.device) -> nn.Module:
    """``model`` on ``device`` in eval mode with weights in ``dtype`` (a float dtype, or ``torch.qint8``:
    int8 dynamic quantization of the linear layers through :func:`g2gt.core._compat.int8_linear_quantizer`);
    ``device`` is a resolved one (:func:`g2gt.core.runtime.resolve_device`)."""
    device = torch.device(device)
    if dtype is not torch.qint8:
        return model.to(device=device, dtype=dtype).eval()
    from ..core._compat import int8_linear_quantizer

    quantize = int8_linear_quantizer()
    if quantize is None:
        raise ValueError(f"dtype='int8' needs torch's dynamic int8 quantization, which torch {torch.__version__} "
                         "does not provide on this machine; use float32")
    return quantize(model.to(device=device).eval())


def stage_checkpoint(name_or_path: str | os.PathLike, stage: str) -> Path:
    """The checkpoint file of ``stage`` (a key of :data:`PART_FILES`, the one table of stage files:
    ``"segmenter"``, ``"parser"``, ``"enhancer"``) for a model's name (:func:`g2gt.core.registry.find_model`),
    a model folder (its stage file), a training folder (``best.pt``, else ``last.pt``) or a checkpoint file.

    Raises ``FileNotFoundError`` when a model folder lacks the stage or a training folder has no checkpoint."""
    from ..core.checkpoint import resolve_checkpoint
    from ..core.registry import find_model, is_model_folder

    where = find_model(name_or_path)
    if not is_model_folder(where):
        return resolve_checkpoint(where)
    file = where / PART_FILES[stage]
    if not file.is_file():
        raise FileNotFoundError(f"{name_or_path}: this model folder has no {PART_FILES[stage]}")
    return file


def read_stage(name_or_path: str | os.PathLike, stage: str, kind: str, device: str | torch.device,
               dtype: torch.dtype | str | None, *, int8: bool = False) -> tuple[Path, dict, torch.device, torch.dtype]:
    """What every stage loader does first: read the device and precision once, find the stage's checkpoint file
    and load it, checking its kind.

    Args:
        name_or_path: a model's name, a model folder, a training folder or a checkpoint file.
        stage: a key of :data:`PART_FILES` (``"parser"``, ``"segmenter"``, ``"enhancer"``).
        kind: the checkpoint kind the file must hold.
        device: as :func:`g2gt.core.runtime.resolve_device`.
        dtype: as :func:`g2gt.core.runtime.resolve_dtype`.
        int8: whether ``"auto"`` may pick int8 for this stage.

    Returns:
        ``(file, checkpoint, device, dtype)``: the file read, its contents (``weights_only=True``), the resolved
        ``torch.device`` and ``torch.dtype``.
    """
    from ..core.checkpoint import expect_kind, load_checkpoint
    from ..core.runtime import resolve_device, resolve_dtype

    device = resolve_device(device)
    dt = resolve_dtype(dtype, device, int8=int8)
    file = stage_checkpoint(name_or_path, stage)
    ck = load_checkpoint(file, device)
    expect_kind(ck, file, kind)
    return file, ck, device, dt


def save_stage(path: str | os.PathLike, model: nn.Module, record: dict[str, Any], source: Path | None,
               quantized: bool = False, storage_dtype: str | torch.dtype = "float16") -> Path:
    """Write one stage checkpoint: ``record`` (``model_config``, ``task`` with ``kind`` and vocabularies,
    ``train_config``) plus the weights, floating-point ones stored as ``storage_dtype``.

    A ``quantized`` model (int8 linear layers for inference) has no float weights to store; its weights are
    read again from ``source``, the file it was loaded from."""
    from ..core.checkpoint import load_checkpoint, save_atomic

    dt = storage_dtype if isinstance(storage_dtype, torch.dtype) else STORAGE_DTYPES.get(str(storage_dtype))
    if dt is None:
        raise ValueError(f"storage_dtype must be one of {', '.join(STORAGE_DTYPES)}, got {storage_dtype!r}")
    if quantized:
        if source is None:
            raise ValueError("an int8-quantized stage can be saved only when it was loaded from a file")
        state = load_checkpoint(source, "cpu")["model"]
    else:
        state = model.state_dict()
    state = {k: (v.detach().to("cpu", dt) if v.is_floating_point() else v.detach().cpu()).contiguous()
             for k, v in state.items()}
    out = Path(path)
    save_atomic({**record, "model": state, "source": {"dtype": str(dt).removeprefix("torch.")}}, out)
    return out


#: the checkpoint keys a stage keeps besides its weights (what ``load`` reads and the training record)
RECORD_KEYS = ("model_config", "task", "train_config", "step", "best")


def checkpoint_record(ck: dict) -> dict:
    """The non-weight part of a loaded checkpoint that a stage keeps for :func:`save_stage`."""
    return {k: ck[k] for k in RECORD_KEYS if k in ck}


# --------------------------------------------------------------------------- the stage registry
@dataclass(frozen=True)
class StageContext:
    """What a stage factory gets: the model ``folder`` (None for a parser checkpoint or training folder),
    the ``name_or_path`` given to ``load``, the resolved ``device``, ``dtype`` and the model ``card``."""

    folder: Path | None
    name_or_path: str
    device: torch.device
    dtype: torch.dtype
    card: dict = field(default_factory=dict)


@dataclass(frozen=True)
class StageSpec:
    """A registered stage: its ``name``, ``factory(context, **options) -> stage | None``, where it goes
    (``after`` a stage name), whether it is built on first use (``lazy``), its class name for ``repr``
    (``cls_name``) and the model-folder ``file`` it reads, if any."""

    name: str
    factory: Callable[..., Any]
    after: str = "parse"
    lazy: bool = False
    cls_name: str | None = None
    file: str | None = None


_REGISTRY: dict[str, StageSpec] = {}
BUILTIN_STAGES = ("tokenize", "parse", "enhance")


def register_stage(name: str, *, after: str = "parse", lazy: bool = False, cls_name: str | None = None,
                   file: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator: register a stage factory as stage ``name``.

    The factory is ``factory(context: StageContext, **options)``; the stage is placed right after the stage ``after``
    (``tokenize``, ``parse``, ``enhance`` or another registered one) in every pipeline
    :meth:`~g2gt.ud.pipeline.Pipeline.load` builds (see the module docstring). Registering a name again replaces the
    earlier factory.

    Args:
        name: the stage's name (new; not a built-in stage).
        after: the stage it follows (default ``"parse"``).
        lazy: build the stage on first use instead of at load time.
        cls_name: its class name for the pipeline's ``repr`` (``None``: the built object's).
        file: the model-folder file it reads, if any (``None``: none).

    Returns:
        The decorator; it returns the factory unchanged.

    Raises:
        ValueError: ``name`` is empty or a built-in stage's.
    """
    if not name or not isinstance(name, str) or name in BUILTIN_STAGES:
        raise ValueError(f"register_stage: the name must be a new non-empty string, not one of "
                         f"{', '.join(BUILTIN_STAGES)} (got {name!r})")

    def deco(factory: Callable) -> Callable:
        if not callable(factory):
            raise TypeError(f"register_stage({name!r}) decorates a factory function, got {factory!r}")
        _REGISTRY[name] = StageSpec(name, factory, after, lazy, cls_name, file)
        return factory

    return deco


def unregister_stage(name: str) -> None:
    """Forget a registered stage (pipelines already built keep it)."""
    _REGISTRY.pop(name, None)


def registered_stages() -> dict[str, StageSpec]:
    """Name -> :class:`StageSpec` of the registered stages, in registration order."""
    return dict(_REGISTRY)


class LazyStage:
    """A stage built on first use: ``loader()`` is called once by :meth:`get`; until then ``repr`` names
    ``cls_name`` and says it is not loaded (so listing a pipeline's stages loads nothing)."""

    def __init__(self, loader: Callable[[], Any], cls_name: str, file: str | os.PathLike | None = None) -> None:
        self.loader, self.cls_name, self.file = loader, cls_name, file
        self._stage: Any = None
        self._loaded = False

    @property
    def loaded(self) -> bool:
        return self._loaded

    def get(self) -> Any:
        if not self._loaded:
            self._stage, self._loaded = self.loader(), True
        return self._stage

    def __repr__(self) -> str:
        if self._loaded:
            return repr(self._stage)
        return f"{self.cls_name}(not loaded yet" + (f": {Path(self.file).name})" if self.file else ")")


# --------------------------------------------------------------------------- a pipeline's stages
class StageList:
    """The ordered, named stages of a pipeline (``self._stages``, ``tokenize`` first) and the ways to list,
    add and remove them; :class:`g2gt.ud.pipeline.Pipeline` runs them."""

    _stages: dict[str, Any]
    _added: set[str]

    @property
    def stages(self) -> dict[str, Any]:
        """Name -> stage, in the order they run. Loads nothing: a stage loaded on first use (the enhancer)
        is listed as its :class:`~g2gt.ud.stage.LazyStage` until then."""
        return dict(self._stages)

    def _get(self, name: str) -> Any:
        stage = self._stages.get(name)
        return stage.get() if isinstance(stage, LazyStage) else stage

    def _set(self, name: str, value: Any) -> None:
        if value is None:
            self._stages.pop(name, None)
        elif name in self._stages:
            self._stages[name] = value
        else:
            self._insert(name, value, {"parse": "tokenize", "enhance": "parse"}.get(name))

    def add_stage(self, name: str, stage: Callable[[list], list], *, after: str | None = None,
                  before: str | None = None) -> "StageList":
        """Add ``stage`` (``list[Sentence] -> list[Sentence]``) under ``name``: right after the stage ``after``
        or right before ``before`` (default: last). It runs on every call, after the stages before it (with
        ``enhanced=False`` the enhancer is skipped, the stages after it still run). Returns the pipeline."""
        if name in self._stages:
            raise ValueError(f"add_stage: there is already a stage {name!r}; remove_stage({name!r}) first")
        if not callable(stage) and not isinstance(stage, LazyStage):
            raise TypeError(f"add_stage({name!r}): a stage is a callable list[Sentence] -> list[Sentence], "
                            f"got {type(stage).__name__}")
        if after is not None and before is not None:
            raise ValueError("add_stage: give after= or before=, not both")
        self._insert(name, stage, after, before)
        self._added.add(name)
        return self

    def remove_stage(self, name: str) -> Any:
        """Take stage ``name`` out (``tokenize`` cannot be removed); returns it."""
        if name == "tokenize" or name not in self._stages:
            raise ValueError(f"remove_stage: no removable stage {name!r}; the stages are {', '.join(self._stages)}")
        self._added.discard(name)
        return self._stages.pop(name)

    def _insert(self, name: str, stage: Any, after: str | None, before: str | None = None) -> None:
        """Put ``stage`` right after ``after`` / right before ``before`` (neither: last). A built-in stage the
        pipeline lacks stands for the nearest one before it (``after="enhance"`` on a model without an
        enhancer: after ``parse``)."""
        anchor = after if after is not None else before
        if after in BUILTIN_STAGES and after not in self._stages:
            anchor = next(s for s in reversed(BUILTIN_STAGES[:BUILTIN_STAGES.index(after)]) if s in self._stages)
        if anchor is not None and anchor not in self._stages:
            raise ValueError(f"stage {name!r}: no stage {anchor!r} to go {'after' if after else 'before'}; the "
                             f"stages are {', '.join(self._stages)}")
        if before == "tokenize":
            raise ValueError(f"stage {name!r}: nothing runs before tokenize")
        items = list(self._stages.items())
        at = len(items) if anchor is None else [k for k, _ in items].index(anchor) + (after is not None)
        items.insert(at, (name, stage))
        self._stages = dict(items)

    def stages_repr(self) -> str:
        """``name=Class, ...`` of every stage (a function by its name, a stage not loaded yet by its class)."""
        return ", ".join(f"{k}={_stage_name(v)}" for k, v in self._stages.items())


def _stage_name(stage: Any) -> str:
    """A stage's class for ``repr`` (a function by its name; a lazy stage by the class it will load)."""
    if isinstance(stage, LazyStage):
        return stage.cls_name + ("" if stage.loaded else " (not loaded yet)")
    if inspect.isfunction(stage) or inspect.ismethod(stage):
        return f"{stage.__qualname__}()"
    return type(stage).__name__


def configured_stage(stage: Any, options: dict | None, name: str) -> Any:
    """``stage`` with the ``config`` options of ``name`` set as attributes (each must exist)."""
    for key, value in (options or {}).items():
        if key.startswith("_") or not hasattr(stage, key):
            public = sorted(k for k, v in vars(stage).items() if not k.startswith("_") and
                            isinstance(v, (int, float, str, bool, type(None))))
            raise ValueError(f"config[{name!r}]: {type(stage).__name__} has no option {key!r}; it has "
                             f"{', '.join(public) or 'none'}")
        setattr(stage, key, value)
    return stage
