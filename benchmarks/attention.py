"""Speed and memory of :class:`g2gt.nn.GraphAttention` against baselines.

For each sequence length ``n`` (B=8, H=8, d=512, L=80 labels, one channel,
uniformly random labels) this times forward + backward of

    (a) ``keys``      GraphAttention, keys-only label term (the default path: on CPU the C++ kernel, on CUDA
                      the Triton kernel when it applies)
    (b) ``keys+vals`` GraphAttention, key and value label terms (the default path)
    (a', b') ``keys-triton``, ``keys+vals-triton``: ``backend="triton"`` (the fused Triton kernel; CUDA only),
                      ``keys-flex``: ``backend="flex"`` (FlexAttention, keys-only), ``keys-blocked`` /
                      ``keys+vals-blocked``: the blocked kernels (``$G2GT_CUDA_LABEL_BACKEND=blocked`` for them)
    (c) ``material``  a naive implementation that expands the label embeddings to
                      ``[B, n, n, d_head]`` (keys and values), as the public RNGTr code does
    (d) ``sdpa``      plain ``F.scaled_dot_product_attention`` with q/k/v/out
                      projections and no graph -- the baseline
    (e) ``pyg``       ``torch_geometric.nn.TransformerConv`` on the fully connected
                      graph (``B * n * n`` edges, ``edge_dim`` label embeddings)

``--dtype bfloat16`` (or ``float16``) casts the modules and the input to that dtype (the label kernels still
accumulate in float32). The note column names the label path each GraphAttention took (``path=triton`` ...).

All methods run interleaved in one process (repeat r runs every method once), so
machine load hits them alike; the table shows median milliseconds and the ratio
to (d).

Memory is reported as follows and named in the table header:

* CUDA: ``torch.cuda.max_memory_allocated`` during forward + backward, minus the
  memory held before the step (inputs and weights), in MiB.
* CPU, ``saved``: the bytes of all distinct tensors that autograd saves for backward
  (counted through ``torch.autograd.graph.saved_tensors_hooks``, deduplicated by
  storage), in MiB. This is the activation memory a training step keeps alive
  between forward and backward.
* CPU, ``peak``: the highest total of torch's CPU allocations during forward + backward
  minus what was allocated before the step (from the allocation events that
  ``torch.profiler`` with ``profile_memory=True`` writes into its trace), in MiB. Transient tensors count; scratch
  buffers a kernel takes from ``malloc`` itself do not (the label kernel's are one
  ``[rows, n]`` block per thread, under 1 MiB).

``--label-kind parser`` gives the labels the UD parser feeds its encoder instead of uniformly random ones:
two channels, the relative position ``clip(j - i, -8, 8)`` (17 labels) and a random dependency tree
(``1 + 2 * 54`` labels: "no edge", each relation upwards and downwards), mostly long runs of one label per
row; only ``sdpa``, ``keys`` and ``keys+vals`` run with them. ``--inference`` times the forward pass alone
(``torch.inference_mode``, modules in eval mode), as parsing runs it.

Examples (``--sizes 256,512,2048`` adds the long case)::

    OMP_NUM_THREADS=1 python benchmarks/attention.py --sizes 512 --repeats 7 --threads 1 --methods sdpa,keys,keys+vals
    # CUDA: the Triton kernel against SDPA, float32 and bfloat16
    python benchmarks/attention.py --device cuda --sizes 128,512,2048,8192 --methods sdpa,keys,keys+vals,keys-flex \
        --dtype bfloat16 --max-gb 40 --markdown
    # the parser's shapes: d_head 32, parser labels, a batch of sentences of 40 words
    OMP_NUM_THREADS=1 python benchmarks/attention.py --sizes 40 --batch 32 --dim 256 --heads 8 --label-kind parser \
        --repeats 50 --threads 1 --methods sdpa,keys,keys+vals [--inference]
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from g2gt.nn import GraphAttention


class PlainSDPA(nn.Module):
    """(d) Baseline: q/k/v/out projections around ``F.scaled_dot_product_attention``."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.h = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: Tensor, labels: Tensor) -> Tensor:  # labels ignored
        B, n, d = x.shape
        sp = lambda t: t.view(B, n, self.h, d // self.h).transpose(1, 2)  # noqa: E731
        out = F.scaled_dot_product_attention(sp(self.q(x)), sp(self.k(x)), sp(self.v(x)))
        return self.o(out.transpose(1, 2).reshape(B, n, d))


class Materialized(nn.Module):
    """(c) Naive relation-aware attention: label embeddings expanded to ``[B, n, n, d_head]``.

    ``e_ij = q_i . (k_j + a^K[l_ij])``, ``o_i = sum_j p_ij (v_j + a^V[l_ij])`` with the
    per-pair embeddings built explicitly (shared by heads), as in the public RNGTr code.
    """

    def __init__(self, d: int, heads: int, num_labels: int) -> None:
        super().__init__()
        self.h = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ak = nn.Embedding(num_labels, d // heads)
        self.av = nn.Embedding(num_labels, d // heads)

    def forward(self, x: Tensor, labels: Tensor) -> Tensor:
        B, n, d = x.shape
        dh = d // self.h
        sp = lambda t: t.view(B, n, self.h, dh).transpose(1, 2)  # noqa: E731
        q, k, v = sp(self.q(x)), sp(self.k(x)), sp(self.v(x))
        ek, ev = self.ak(labels), self.av(labels)  # [B, n, n, dh] each
        s = (q @ k.transpose(-1, -2) + torch.einsum("bhid,bijd->bhij", q, ek)) / math.sqrt(dh)
        p = s.softmax(-1)
        out = p @ v + torch.einsum("bhij,bijd->bhid", p, ev)
        return self.o(out.transpose(1, 2).reshape(B, n, d))


class PygTransformerConv(nn.Module):
    """(e) ``TransformerConv`` over the complete directed graph (with self-loops) of each example."""

    def __init__(self, d: int, heads: int, num_labels: int) -> None:
        super().__init__()
        from torch_geometric.nn import TransformerConv

        self.emb = nn.Embedding(num_labels, d // heads)
        self.conv = TransformerConv(d, d // heads, heads=heads, edge_dim=d // heads, root_weight=False)
        self._ei: dict[tuple[int, int, str], Tensor] = {}

    def edge_index(self, B: int, n: int, device: torch.device) -> Tensor:
        key = (B, n, str(device))
        if key not in self._ei:
            i = torch.arange(n, device=device)
            src = i.repeat(n)  # j (key) varies fastest
            dst = i.repeat_interleave(n)  # i (query)
            off = (torch.arange(B, device=device) * n).repeat_interleave(n * n)
            self._ei[key] = torch.stack([src.repeat(B) + off, dst.repeat(B) + off])
        return self._ei[key]

    def forward(self, x: Tensor, labels: Tensor) -> Tensor:
        B, n, d = x.shape
        ei = self.edge_index(B, n, x.device)
        # edge (src=j -> dst=i) carries label l_ij; labels[b, i, j] flattened with j fastest.
        out = self.conv(x.reshape(B * n, d), ei, self.emb(labels.reshape(-1)))
        return out.view(B, n, d)


PARSER_LABELS = [17, 109]  # clip(j - i, -8, 8); "no edge" + 54 relations up and down


def parser_labels(B: int, n: int, device: torch.device) -> Tensor:
    """``[B, 2, n, n]`` labels as the UD parser builds them: channel 0 the relative position
    ``clip(j - i, -8, 8) + 8``, channel 1 a random tree (each word's head drawn at random, relation ``r`` in
    1..54 on (dependent, head) and ``r + 54`` on (head, dependent), 0 elsewhere)."""
    i = torch.arange(n, device=device)
    pos = ((i[None, :] - i[:, None]).clamp(-8, 8) + 8).expand(B, n, n)
    dep = torch.zeros(B, n, n, dtype=torch.long, device=device)
    heads = torch.randint(0, n, (B, n), device=device)
    rel = torch.randint(1, 55, (B, n), device=device)
    b = torch.arange(B, device=device)[:, None]
    dep[b, heads, i[None, :]] = rel + 54
    dep[b, i[None, :], heads] = rel
    return torch.stack([pos, dep], 1)


class Blocked(nn.Module):
    """GraphAttention on the blocked label kernels whatever the device (``$G2GT_CUDA_LABEL_BACKEND=blocked`` around
    each call): the baseline the Triton kernel replaces on CUDA."""

    def __init__(self, d: int, heads: int, num_labels, value_labels: bool) -> None:
        super().__init__()
        self.attn = GraphAttention(d, heads, num_labels, value_labels=value_labels)

    def forward(self, x: Tensor, labels: Tensor) -> Tensor:
        import os

        before = os.environ.get("G2GT_CUDA_LABEL_BACKEND")
        os.environ["G2GT_CUDA_LABEL_BACKEND"] = "blocked"
        try:
            return self.attn(x, labels)
        finally:
            if before is None:
                del os.environ["G2GT_CUDA_LABEL_BACKEND"]
            else:
                os.environ["G2GT_CUDA_LABEL_BACKEND"] = before

    @property
    def last_label_path(self) -> str | None:
        return getattr(self.attn, "last_label_path", None)


def saved_bytes(fn: Callable[[], Tensor]) -> int:
    """Bytes of distinct tensors saved for backward while running ``fn`` (forward only)."""
    seen: dict[tuple, int] = {}

    def pack(t: Tensor) -> Tensor:
        try:
            st = t.untyped_storage()
            seen[(st.data_ptr(), t.device.type)] = st.nbytes()
        except Exception:  # pragma: no cover - exotic tensor subclasses
            seen[(id(t), "?")] = t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    del out
    return sum(seen.values())


def peak_bytes(fn: Callable[[], None]) -> int:
    """Peak of torch's CPU allocations while ``fn`` runs, above the level at its start: the largest
    "Total Allocated" of the allocation events ``torch.profiler`` (``profile_memory=True``) writes into its
    trace, which counts from zero at the start of profiling."""
    import json
    import os
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    return max([0] + [e["args"]["Total Allocated"] for e in events if e.get("name") == "[memory]"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Time forward+backward of GraphAttention against plain SDPA, a materialized "
        "[B,n,n,d_head] implementation and PyG TransformerConv (interleaved, medians, ratios to SDPA).",
    )
    ap.add_argument("--sizes", default="64,128,256,512", help="comma-separated node counts n (default: %(default)s)")
    ap.add_argument("--batch", type=int, default=8, help="batch size B (default: %(default)s)")
    ap.add_argument("--heads", type=int, default=8, help="heads H (default: %(default)s)")
    ap.add_argument("--dim", type=int, default=512, help="model width d (default: %(default)s)")
    ap.add_argument("--labels", type=int, default=80, help="label-table size L (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats per method and size (default: %(default)s)")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: leave as is)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cpu or cuda")
    ap.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                    help="dtype of the modules and the input (default: %(default)s)")
    ap.add_argument(
        "--methods", default="keys,keys+vals,material,sdpa,pyg", help="subset of methods to run (default: all)"
    )
    ap.add_argument(
        "--max-gb", type=float, default=3.0,
        help="skip a method at a size whose estimated working set exceeds this many GiB (default: %(default)s)",
    )
    ap.add_argument("--markdown", action="store_true", help="print a README-ready markdown table")
    ap.add_argument(
        "--label-kind", choices=("random", "parser"), default="random",
        help="random: uniformly random ids in one channel of --labels (default); parser: the UD parser's two "
        "channels (clipped relative position, a random dependency tree), --labels ignored",
    )
    ap.add_argument("--inference", action="store_true",
                    help="time the forward pass alone (inference mode, eval mode) instead of forward + backward")
    ap.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall",
        help="wall: elapsed time (default); cpu: this process's CPU time, which time-slicing by other processes on "
        "a shared machine does not inflate (meaningful with --threads 1)",
    )
    args = ap.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    sizes = [int(s) for s in args.sizes.split(",") if s]
    B, H, d, L = args.batch, args.heads, args.dim, args.labels
    dh = d // H
    parser = args.label_kind == "parser"
    label_sizes = PARSER_LABELS if parser else L
    torch.manual_seed(0)
    builders: dict[str, Callable[[], nn.Module]] = {
        "keys": lambda: GraphAttention(d, H, label_sizes, value_labels=False),
        "keys+vals": lambda: GraphAttention(d, H, label_sizes, value_labels=True),
        "keys-triton": lambda: GraphAttention(d, H, label_sizes, value_labels=False, backend="triton"),
        "keys+vals-triton": lambda: GraphAttention(d, H, label_sizes, value_labels=True, backend="triton"),
        "keys-flex": lambda: GraphAttention(d, H, label_sizes, value_labels=False, backend="flex"),
        "keys-blocked": lambda: Blocked(d, H, label_sizes, value_labels=False),
        "keys+vals-blocked": lambda: Blocked(d, H, label_sizes, value_labels=True),
        "material": lambda: Materialized(d, H, L),
        "sdpa": lambda: PlainSDPA(d, H),
        "pyg": lambda: PygTransformerConv(d, H, L),
    }
    names = [m for m in args.methods.split(",") if m]
    for m in names:
        if m not in builders:
            ap.error(f"unknown method {m!r}; choose from {', '.join(builders)}")
        if parser and m in ("material", "pyg"):
            ap.error(f"--label-kind parser runs sdpa, keys and keys+vals only, not {m!r}")
    dtype = getattr(torch, args.dtype)
    mods = {m: builders[m]().to(dev, dtype) for m in names}
    if args.inference:
        for mod in mods.values():
            mod.eval()

    def estimate_gib(m: str, n: int) -> float:
        f = 4 / 2**30
        if m == "material":
            return B * n * n * dh * 6 * f + B * H * n * n * 6 * f
        if m == "pyg":
            return B * n * n * d * 6 * f
        # sdpa / keys / keys+vals: activations linear in n, plus the int64 labels and their compact copy
        return B * n * d * 24 * f + B * n * n * 9 / 2**30

    mem_name = ("peak MiB (CUDA max_memory_allocated)" if dev.type == "cuda"
                else "MiB saved for backward / peak MiB of forward + backward")
    rows = []
    for n in sizes:
        x = torch.randn(B, n, d, device=dev, dtype=dtype, requires_grad=True)
        labels = parser_labels(B, n, dev) if parser else torch.randint(0, L, (B, n, n), device=dev)
        g = torch.randn(B, n, d, device=dev, dtype=dtype)
        active = [m for m in names if estimate_gib(m, n) <= args.max_gb]
        skipped = [m for m in names if m not in active]

        def step(m: str, x=x, labels=labels, g=g) -> None:
            if args.inference:
                with torch.inference_mode():
                    mods[m](x, labels)
                return
            out = mods[m](x, labels)
            (out * g).sum().backward()
            x.grad = None
            for p in mods[m].parameters():
                p.grad = None

        def sync() -> None:
            if dev.type == "cuda":
                torch.cuda.synchronize()

        mem: dict[str, float] = {}
        peak: dict[str, float | None] = {m: None for m in active}
        for m in active:  # warm-up + memory
            step(m)
            sync()
            gc.collect()
            if dev.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
                step(m)
                sync()
                mem[m] = (torch.cuda.max_memory_allocated() - base) / 2**20
            else:
                saved = 0 if args.inference else saved_bytes(lambda m=m, x=x, labels=labels: mods[m](x, labels))
                mem[m] = saved / 2**20
                gc.collect()
                peak[m] = peak_bytes(lambda m=m: step(m)) / 2**20
        times: dict[str, list[float]] = {m: [] for m in active}
        for _ in range(args.repeats):
            for m in active:
                sync()
                t0 = clock()
                step(m)
                sync()
                times[m].append(clock() - t0)
        med = {m: statistics.median(ts) * 1000 for m, ts in times.items()}
        base_t = med.get("sdpa")
        for m in names:
            if m in skipped:
                rows.append((n, m, None, None, None, None, f"skipped: est. {estimate_gib(m, n):.1f} GiB > --max-gb"))
            else:
                ratio = med[m] / base_t if base_t else None
                path = getattr(mods[m], "last_label_path", None)
                rows.append((n, m, med[m], ratio, mem[m], peak[m], f"path={path}" if path else ""))
        if not args.markdown:
            for r in rows[-len(names):]:
                print(_fmt_row(r, markdown=False), flush=True)

    header = (
        f"B={B}, H={H}, d={d}, L={'+'.join(map(str, PARSER_LABELS)) + ' (parser labels)' if parser else L}, "
        f"device={dev.type}, dtype={args.dtype}, threads={torch.get_num_threads()}, repeats={args.repeats}, torch {torch.__version__}; "
        f"time = median {'forward (inference)' if args.inference else 'forward+backward'} ({args.clock} clock); "
        f"memory = {mem_name}"
    )
    print()
    print(header)
    if args.markdown:
        print()
        print("| n | method | ms (median) | x SDPA | memory MiB | peak MiB | note |")
        print("|---:|---|---:|---:|---:|---:|---|")
    for r in rows:
        print(_fmt_row(r, markdown=args.markdown))
    return 0


def _fmt_row(r: tuple, markdown: bool) -> str:
    n, m, ms, ratio, mem, peak, note = r
    cells = [
        str(n), m,
        "-" if ms is None else f"{ms:.1f}",
        "-" if ratio is None else f"{ratio:.2f}",
        "-" if mem is None else f"{mem:.0f}",
        "-" if peak is None else f"{peak:.0f}",
        note,
    ]
    if markdown:
        return "| " + " | ".join(cells) + " |"
    return (f"n={cells[0]:>4} {cells[1]:<17} {cells[2]:>9} ms  x{cells[3]:>5}  mem {cells[4]:>7}  peak {cells[5]:>7}  "
            f"{note}")


if __name__ == "__main__":
    sys.exit(main())
