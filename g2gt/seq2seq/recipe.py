"""Training a translation model: :func:`train_seq2seq` runs the recipe of a
:class:`~g2gt.seq2seq.config.Seq2SeqConfig` and a :class:`~g2gt.core.config.TrainConfig`
(:func:`~g2gt.seq2seq.config.seq2seq_train_config`) on sentence pairs through the one training runner, for
Python users and ``g2gt train seq2seq`` alike.
"""

from __future__ import annotations

import logging
import functools
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ..core.config import TrainConfig
from ..core.graph import LabelVocab
from ..core.run import training_run
from ..core.train import Trainer
from ..nn.transformer import G2GTConfig, G2GTransformer
from .subword import SubwordTokenizer
from .config import Seq2SeqConfig, check_metric, seq2seq_train_config
from .data import check_aligned
from .metrics import mt_scores
from .task import SUBWORD_LABEL, Seq2SeqTask, load_seq2seq

_log = logging.getLogger("g2gt")

__all__ = ["Seq2SeqRun", "final_evaluation", "train_seq2seq"]


def _say(line: str) -> None:
    """One line on stderr, above a progress bar if one is drawn."""
    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stderr)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


class _ReportingTrainer(Trainer):
    """The :class:`Trainer`, also writing each ``log.jsonl`` entry as a line a person reads on stderr: at every
    evaluation (step, training loss and learning rate, tokens/s, the dev scores, whether it is the new best)
    and, without a progress bar, every ``train_every`` updates (step, loss, lr, tokens/s)."""

    def __init__(self, *args, train_every: int = 0, **kw) -> None:
        super().__init__(*args, **kw)
        self._train_every = train_every
        self._speeds: list[float] = []
        self._elapsed = 0.0

    def _log(self, entry: dict) -> None:
        super()._log(entry)
        if not self.is_main:
            return
        step = entry.get("step", self.step)
        total = f"/{round(self.total_steps)}" if self.total_steps else ""
        if entry.get("kind") == "train":
            self._speeds.append(entry["tokens_per_s"])
            self._elapsed = entry["elapsed_s"]
            if self._train_every and step % self._train_every == 0:
                _say(f"step {step}{total}  loss {entry['loss']:.3f}  lr {entry['lr']:.2e}  "
                     f"{entry['tokens_per_s']:,.0f} tok/s  {_minutes(entry['elapsed_s'])}")
        elif entry.get("kind") == "eval":
            speed = sum(self._speeds) / len(self._speeds) if self._speeds else 0.0
            self._speeds = []
            train = f"train loss {entry['train_loss']:.3f}  " if "train_loss" in entry else ""
            best = "  (best)" if entry.get(self.cfg.metric) == self.best else ""
            _say(f"step {step}{total}  {train}lr {entry['lr']:.2e}  {speed:,.0f} tok/s  {_minutes(self._elapsed)}"
                 f"  | dev loss {entry['dev_loss']:.3f}  BLEU {entry['bleu']:.2f}  chrF {entry['chrf']:.2f}{best}")


@dataclass
class Seq2SeqRun:
    """What :func:`train_seq2seq` returns.

    The best model (``best.pt``) with its task, the evaluation history, the final beam-search scores on the whole dev
    set (``None`` when skipped) and the updates.

    Args:
        model: the best model (``best.pt``).
        task: its task.
        history: the evaluation history.
        final: the final beam-search scores on the whole dev set (``None`` when skipped).
        steps: the number of updates.
    """

    model: G2GTransformer
    task: Seq2SeqTask
    history: list[dict]
    final: dict | None
    steps: int


def _is_graph(sources: Sequence) -> bool:
    return bool(len(sources)) and not isinstance(sources[0], str)


def _new_task(src_train: Sequence, tgt_train: Sequence[str], graph: bool, cfg: Seq2SeqConfig,
              seed: int) -> Seq2SeqTask:
    """Train the BPE tokenizer(s) and, with source parses, the dependency label vocabulary."""
    src_text = [" ".join(s.forms) for s in src_train] if graph else list(src_train)
    if cfg.joint_vocab:
        src_tok = tgt_tok = SubwordTokenizer.train(src_text + list(tgt_train), cfg.bpe_vocab)
    else:
        src_tok = SubwordTokenizer.train(src_text, cfg.bpe_vocab)
        tgt_tok = SubwordTokenizer.train(tgt_train, cfg.bpe_vocab)
    rel_vocab = None
    if graph:
        rel_vocab = LabelVocab.for_dependencies(sorted({r for s in src_train for r in s.deprels if r is not None}))
        rel_vocab.add(SUBWORD_LABEL)
    return Seq2SeqTask(src_tok, tgt_tok, cfg.settings(graph), rel_vocab=rel_vocab, seed=seed)


def _device(name: str) -> torch.device:
    """The device the Trainer will pick for ``name`` (``"auto"``: CUDA when available, else CPU)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@training_run
def train_seq2seq(src_train: Sequence, tgt_train: Sequence[str], src_dev: Sequence, tgt_dev: Sequence[str],
                  out_dir: str | os.PathLike, config: Seq2SeqConfig | None = None,
                  train_config: TrainConfig | None = None, resume: bool = False,
                  overwrite: bool = False) -> Seq2SeqRun:
    """Train a translation model; return the best one.

    It runs through the one training runner (:func:`g2gt.core.run.run_training`).

    ``out_dir`` receives ``best.pt``, ``last.pt`` (resumable), ``log.jsonl``, ``config.json``
    (``model_config``, ``train_config``, ``task``: the recipe and the data settings, ``data``, ``parameters``,
    then ``steps``, ``train_seconds``, ``best_dev``) and, with ``final_beam > 0``, ``dev.hyp`` + ``final.json``
    (whole dev set, beam search). With ``train_config.average_last = K > 0`` the weights of the last ``K``
    evaluations are also averaged into ``averaged.pt``, scored on dev (greedy, in ``config.json``) and, with
    ``final_beam > 0``, decoded into ``dev.averaged.hyp`` + ``final.averaged.json``. The folder is locked for
    the whole call; one that holds a run is refused unless ``resume`` or ``overwrite``
    (:class:`g2gt.core.run.RunExists`). With ``resume=True`` and an ``out_dir/last.pt``, the tokenizers, data
    settings and model size come from the checkpoint (``batch_tokens``, ``eval_sentences`` and
    ``length_penalty`` from ``config``), and the budget is the run's total.

    On stderr, each evaluation prints one line (update, training loss, learning rate, tokens/s, dev loss,
    BLEU, chrF, whether it is the best so far); without progress bars (``train_config.progress=False``) a line
    of the training loss comes every ``eval_every / 4`` updates too; the final decoding of the dev set is
    announced, then its scores printed.

    Args:
        src_train: training sources as strings, or :class:`g2gt.ud.io.sentence.Sentence` objects (one parse per
            target line) for graph to sequence (see :func:`read_training_data`).
        tgt_train: training target sentences, one per source.
        src_dev: dev sources, as ``src_train``.
        tgt_dev: dev target sentences, one per source.
        out_dir: the run's folder.
        config: the model, subwords and data settings (``None``: :class:`Seq2SeqConfig`'s defaults).
        train_config: the optimisation settings; its ``metric`` (``dev_loss`` or ``bleu``) selects ``best.pt``
            (``None``: :func:`seq2seq_train_config`).
        resume: continue the run in ``out_dir``.
        overwrite: replace the run in ``out_dir``.

    Returns:
        A :class:`Seq2SeqRun`: the best model, its task, the history and the final scores.

    Raises:
        g2gt.core.run.RunExists: ``out_dir`` holds a run and neither ``resume`` nor ``overwrite`` is set.
    """
    from ..core.run import resume_checkpoint, run_training
    from ..core.runtime import autocast_dtype

    cfg = config or Seq2SeqConfig()
    tc = check_metric(train_config or seq2seq_train_config())
    graph = _is_graph(src_train)
    if graph != _is_graph(src_dev) and len(src_dev):
        raise ValueError("training and dev sources must both be text or both be parsed sentences")
    check_aligned(len(src_train), "training sources", len(tgt_train), "training targets")
    check_aligned(len(src_dev), "dev sources", len(tgt_dev), "dev targets")
    if not len(tgt_train) or not len(tgt_dev):
        raise ValueError(f"need training and dev sentences (got {len(tgt_train)} and {len(tgt_dev)})")
    out = Path(out_dir)
    main = int(os.environ.get("RANK", "0")) == 0
    t0 = time.time()
    ck = resume_checkpoint(out, resume)
    if ck is not None:
        task = Seq2SeqTask.from_checkpoint_extra(ck.get("task", {}))
        if task.settings.graph != graph:
            raise ValueError(f"{out / 'last.pt'} was trained {'with' if task.settings.graph else 'without'} "
                             "source parses; resume it with the same kind of source")
        task.settings.batch_tokens, task.settings.eval_sentences = cfg.batch_tokens, cfg.eval_sentences
        task.settings.length_penalty, task.seed = cfg.length_penalty, tc.seed
        model_config = G2GTConfig.from_dict(ck["model_config"])
        if tc.progress:
            _log.info(f"resuming {out / 'last.pt'} at update {ck['step']}: tokenizers, data settings and model size "
                  "come from the checkpoint")
    else:
        task = _new_task(src_train, tgt_train, graph, cfg, tc.seed)
        model_config = task.model_config(**cfg.model_kwargs())
    task.train = task.encode_pairs(src_train, tgt_train, "train")
    task.dev = task.encode_pairs(src_dev, tgt_dev, "dev")
    torch.manual_seed(tc.seed)
    model = G2GTransformer(model_config)
    params = sum(p.numel() for p in model.parameters())
    data = {"train_pairs": len(task.train), "dev_pairs": len(task.dev),
            "train_source_subwords": sum(map(len, task.train.src)),
            "train_target_subwords": sum(map(len, task.train.tgt)) + len(task.train.tgt),
            "vocab": task.src_tok.vocab_size,
            "target_vocab": None if task.tgt_tok is task.src_tok else task.tgt_tok.vocab_size,
            "channels": task.channels, "prepare_seconds": round(time.time() - t0, 1)}
    if tc.progress and main:
        _log.info(f"data: {data['train_pairs']} train / {data['dev_pairs']} dev pairs, {data['train_source_subwords']} "
              f"source / {data['train_target_subwords']} target subwords (vocab {data['vocab']}), prepared in "
              f"{data['prepare_seconds']:.0f}s; model: {params / 1e6:.2f}M parameters, channels "
              f"{task.channels}")
    amp = autocast_dtype(_device(tc.device), tc.amp)
    task_info = {"kind": "seq2seq", "recipe": cfg.to_dict(), "settings": task.settings.to_dict()}
    trainer_class = functools.partial(_ReportingTrainer,
                                      train_every=0 if tc.progress else max(1, tc.eval_every // 4))
    trainer, history = run_training(
        model, task, tc, out, model_config.to_dict(), task_info=task_info, data_info=data,
        more_info={"autocast": str(amp).removeprefix("torch.") if amp else "off"}, resume=resume,
        overwrite=overwrite, trainer_class=trainer_class)
    final = None
    if main:
        if cfg.final_beam > 0:
            final = final_evaluation(out, src_dev, tgt_dev, cfg.final_beam, cfg.length_penalty, trainer.device,
                                     progress=tc.progress)
            if (out / "averaged.pt").exists() and tc.average_last:
                final_evaluation(out, src_dev, tgt_dev, cfg.final_beam, cfg.length_penalty, trainer.device,
                                 progress=tc.progress, checkpoint="averaged.pt")
        model, task = load_seq2seq(out, trainer.device, "float32")  # the best checkpoint
    return Seq2SeqRun(model, task, history, final, trainer.step)


def _write_json(path: Path, obj: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def final_evaluation(out_dir: str | os.PathLike, src_dev: Sequence, tgt_dev: Sequence[str], beam: int = 5,
                     length_penalty: float = 1.0, device: str | torch.device = "cpu", progress: bool = False,
                     checkpoint: str = "best.pt") -> dict:
    """Translate the whole dev set with ``out_dir``'s best checkpoint; write ``dev.hyp`` and ``final.json``.

    Args:
        out_dir: the training folder.
        src_dev: dev sources.
        tgt_dev: dev references.
        beam: beam size.
        length_penalty: length penalty exponent.
        device: where to decode.
        progress: show a progress bar.
        checkpoint: the checkpoint file of the folder to decode with (default ``"best.pt"``); another one, e.g.
            ``averaged.pt``, writes ``dev.averaged.hyp`` and ``final.averaged.json`` instead.

    Returns:
        The :func:`mt_scores` of the cased output (``bleu``, ``chrf``, signatures), plus ``bleu_lowercase`` /
            ``chrf_lowercase``, ``beam``, ``length_penalty`` and ``translate_seconds``.
    """
    out = Path(out_dir)
    model, task = load_seq2seq(out / checkpoint, device, "float32")
    stem = "" if checkpoint == "best.pt" else "." + Path(checkpoint).stem
    what = "the best checkpoint" if checkpoint == "best.pt" else checkpoint
    _say(f"decoding the dev set ({len(src_dev):,} sentences) with beam {beam} and {what} ...")
    t = time.time()
    hyps = task.translate(model, src_dev, beam=beam, length_penalty=length_penalty, batch_size=32, progress=progress)
    secs = time.time() - t
    (out / f"dev{stem}.hyp").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    cased, lower = mt_scores(tgt_dev, hyps), mt_scores(tgt_dev, hyps, lowercase=True)
    final = {**cased, "bleu_lowercase": lower["bleu"], "chrf_lowercase": lower["chrf"], "beam": beam,
             "length_penalty": length_penalty, "translate_seconds": round(secs, 1)}
    _write_json(out / f"final{stem}.json", final)
    _say(f"dev BLEU {final['bleu']:.2f}  chrF {final['chrf']:.2f}  (beam {beam}, {len(hyps):,} sentences in "
         f"{secs:.0f}s): {out / f'dev{stem}.hyp'}, {out / f'final{stem}.json'}")
    return final
