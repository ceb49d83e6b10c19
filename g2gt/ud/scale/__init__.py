"""Corpus scale: the pipeline over many inputs, in worker processes or on a Ray cluster, with the same bytes
as one process.

* :mod:`~g2gt.ud.scale.parallel` — :class:`ParallelPipeline` (``g2gt parse --workers N``): raw text or CoNLL-U
  cut into the very segment and batch jobs one process runs, put back in input order; :class:`Recipe`, what a
  worker loads; :func:`enhance_parallel`;
* :mod:`~g2gt.ud.scale.corpus` — many input files to one CoNLL-U file each: :func:`output_name`,
  :func:`plan_files` (atomic outputs, resume) and :class:`FilesReport` (done, skipped, failed);
* :mod:`~g2gt.ud.scale.ray_data` — the same on a Ray Data actor pool (``g2gt parse --ray``):
  :func:`parse_dataset`, :func:`parse_files` (needs ``pip install "g2gt[ray]"``).

Example::

    from g2gt.ud.scale import ParallelPipeline

    with ParallelPipeline("en_combined", workers=4) as nlp:  # 4 processes, one thread each
        nlp.parse_file("story.txt", "story.conllu", kind="raw")

For many short texts inside one program, :meth:`g2gt.ud.pipeline.Pipeline.pipe` with ``n_process=N`` uses the
same worker pool (:class:`g2gt.core.pool.ProcessPool`). Names load their module on first use (no torch, no Ray at import).
"""

from ..._lazy import lazy_exports

_EXPORTS = {
    "ParallelPipeline": "parallel", "Recipe": "parallel", "EnhanceRecipe": "parallel",
    "enhance_parallel": "parallel",
    "output_name": "corpus", "plan_files": "corpus", "FilesReport": "corpus",
    "PipelineActor": "ray_data", "parse_dataset": "ray_data", "parse_files": "ray_data", "init_ray": "ray_data",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
