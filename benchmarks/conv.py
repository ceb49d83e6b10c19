"""Speed and memory of :class:`g2gt.nn.G2GConv` against PyG's ``TransformerConv``.

For each edge count ``E`` a random sparse graph is drawn (``N = E / degree``
nodes, uniformly random ``edge_index``, uniformly random edge types in
``[0, L)``) and forward + backward (``(out * w).sum().backward()``, input ``x``
requiring grad) is timed for

    ``g2g``          G2GConv (fused edge kernels, label tables ``[L, d_head]`` shared by heads)
    ``g2g-unfused``  G2GConv(fused=False): the same math through ``MessagePassing.propagate``
    ``tconv``        ``torch_geometric.nn.TransformerConv(edge_dim=L)`` fed the one-hot edge
                     types (the same function class: ``lin_edge`` is a per-head label table)

with the same ``in_channels``, ``heads``, ``out_channels`` and skip connection.
Methods run interleaved in one process (each repeat runs every method once, in
rotating order) and the table shows the median time and the ratio to ``tconv``.

Memory (the header says which):

* CUDA: ``torch.cuda.max_memory_allocated()`` during one forward + backward minus
  the bytes allocated before it (inputs, weights), in MiB.
* CPU: the peak of the allocator's running total over one forward + backward,
  read from ``torch.profiler`` allocation events (``profile_memory=True``; each
  event carries the running ``total_allocated``), minus the value at the start.
  This counts every tensor allocated by the step (activations kept for backward,
  transient buffers, gradients) but not memory held before it.

Neither figure counts the inputs: TransformerConv's one-hot ``edge_attr``
(``E x L`` floats, shown in the last column) exists before the step, G2GConv
takes ``[E]`` integer types instead.

Example (the README table)::

    OMP_NUM_THREADS=1 python benchmarks/conv.py --edges 10000,100000,1000000 --repeats 5 --markdown
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from typing import Callable

import torch
import torch.nn.functional as F


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def cpu_peak_bytes(fn: Callable[[], None]) -> int:
    """Peak bytes allocated on the CPU while ``fn`` runs, from profiler allocation events."""
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events: list[tuple[int, int]] = []
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        e = stack.pop()
        if e.tag == _EventType.Allocation and e.extra_fields.device.type == "cpu":
            events.append((e.start_time_ns, e.extra_fields.alloc_size))
        stack.extend(e.children)
    events.sort()
    total = peak = 0
    for _, size in events:
        total += size
        peak = max(peak, total)
    return peak


def cuda_peak_bytes(fn: Callable[[], None], dev: torch.device) -> int:
    _sync(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    base = torch.cuda.memory_allocated(dev)
    fn()
    _sync(dev)
    return torch.cuda.max_memory_allocated(dev) - base


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="G2GConv vs torch_geometric TransformerConv: forward+backward median time and peak memory "
        "on random sparse graphs, interleaved in one process, printed as ratios to TransformerConv.",
    )
    ap.add_argument("--edges", default="10000,100000,1000000", help="comma-separated edge counts (default: %(default)s)")
    ap.add_argument("--degree", type=int, default=10, help="average in-degree; N = E / degree (default: %(default)s)")
    ap.add_argument("--in-channels", type=int, default=64, help="input width (default: %(default)s)")
    ap.add_argument("--heads", type=int, default=4, help="attention heads (default: %(default)s)")
    ap.add_argument("--out-channels", type=int, default=16, help="width per head (default: %(default)s)")
    ap.add_argument("--labels", type=int, default=32, help="edge-type vocabulary L (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=5, help="timed repeats per method and size (default: %(default)s)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                    help="device (default: cuda if available, else cpu)")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    ap.add_argument("--no-unfused", action="store_true", help="skip the G2GConv(fused=False) row")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args(argv)

    from torch_geometric.nn import TransformerConv

    from g2gt.nn import G2GConv

    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    sizes = [int(s) for s in args.edges.split(",") if s.strip()]
    H, d, L, D = args.heads, args.out_channels, args.labels, args.in_channels
    torch.manual_seed(0)
    tconv = TransformerConv(D, d, heads=H, edge_dim=L).to(dev)
    g2g = G2GConv(D, d, heads=H, num_edge_labels=L).to(dev)
    g2g_unfused = G2GConv(D, d, heads=H, num_edge_labels=L, fused=False).to(dev)
    mem_name = "CUDA max_memory_allocated" if dev.type == "cuda" else "CPU profiler peak"

    rows = []
    for E in sizes:
        N = max(2, E // args.degree)
        g = torch.Generator().manual_seed(E)
        x = torch.randn(N, D, generator=g).to(dev).requires_grad_()
        ei = torch.randint(0, N, (2, E), generator=g).to(dev)
        et = torch.randint(0, L, (E,), generator=g).to(dev)
        onehot = F.one_hot(et, L).float()
        w = torch.randn(N, H * d, generator=g).to(dev)

        def step(module, *inputs, x=x, ei=ei, w=w) -> Callable[[], None]:
            def run() -> None:
                module.zero_grad(set_to_none=True)
                x.grad = None
                out = module(x, ei, *inputs)
                (out * w).sum().backward()

            return run

        methods = {"g2g": step(g2g, et), "tconv": step(tconv, onehot)}
        if not args.no_unfused:
            methods["g2g-unfused"] = step(g2g_unfused, et)
        mem: dict[str, float] = {}
        times: dict[str, list[float]] = {m: [] for m in methods}
        for m, fn in methods.items():  # warm-up + memory
            fn()
            gc.collect()
            peak = cuda_peak_bytes(fn, dev) if dev.type == "cuda" else cpu_peak_bytes(fn)
            mem[m] = peak / 2**20
        order = list(methods)
        for r in range(args.repeats):
            for m in order[r % len(order):] + order[: r % len(order)]:
                _sync(dev)
                t0 = time.perf_counter()
                methods[m]()
                _sync(dev)
                times[m].append(time.perf_counter() - t0)
        med = {m: statistics.median(t) * 1e3 for m, t in times.items()}
        for m in methods:
            rows.append((E, N, m, med[m], med[m] / med["tconv"], mem[m], mem[m] / mem["tconv"],
                         onehot.numel() * onehot.element_size() / 2**20 if m == "tconv" else 0.0))
        print(f"E={E}: " + ", ".join(f"{m} {med[m]:.1f} ms / {mem[m]:.1f} MiB" for m in methods),
              file=sys.stderr, flush=True)
        del x, ei, et, onehot, w, methods
        gc.collect()

    thr = torch.get_num_threads() if dev.type == "cpu" else "-"
    head = (f"device={dev} ({torch.cuda.get_device_name(dev) if dev.type == 'cuda' else f'{thr} thread(s)'}), "
            f"in={D}, heads={H}, d_head={d}, L={L}, degree={args.degree}, repeats={args.repeats}, "
            f"torch {torch.__version__}; time = median forward+backward; memory = {mem_name}")
    if args.markdown:
        print(head + "\n")
        print("| edges | nodes | method | ms (median) | time / tconv | peak MiB | mem / tconv | one-hot input MiB |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|")
        for E, N, m, t, tr, mm, mr, inp in rows:
            print(f"| {E:,} | {N:,} | {m} | {t:.1f} | {tr:.2f} | {mm:.1f} | {mr:.2f} | {inp:.1f} |")
    else:
        print(head)
        for E, N, m, t, tr, mm, mr, _inp in rows:
            print(f"E={E:>9} N={N:>8} {m:<12} {t:9.1f} ms  x{tr:5.2f}   {mm:9.1f} MiB  x{mr:5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
