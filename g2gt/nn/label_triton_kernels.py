r"""The Triton kernels of :mod:`g2gt.nn.label_triton` (forward, and the two backward passes of FlashAttention-2).

Imported only when the Triton path runs (it needs ``triton``); with ``TRITON_INTERPRET=1`` set before the import
the kernels run on CPU tensors under Triton's interpreter (the tests do that), elsewhere they compile for the GPU.

One program owns a tile of ``BM`` query rows (forward, ``dq``) or ``BN`` keys (``dk, dv``) of one (batch, head)
and walks the other axis tile by tile. In a (query tile, key tile) pair, with channel ``c``'s labels ``l^c``
(offset ``o_c`` into the concatenated tables) and ``qa = s\,q\,a_K^\top`` (``[BM, LP]``, loaded once per query
tile: ``L`` is small):

.. math::

    S_{ij} = s\,q_i\cdot k_j + \sum_c qa_{i,\,o_c + l^c_{ij}} + m_{ij}
    \qquad\text{(the label term: a gather of the loaded } qa \text{ tile, never } [n, n, d]).

Forward: online softmax (running max ``m``, sum ``l``), ``acc += P v`` and, with value labels, ``per +=
scatter_l P`` (``[BM, LP]``: ``per_{i, o_c + l} = \sum_j [l^c_{ij} = l] P_{ij}``), both rescaled when ``m``
grows; it writes ``acc / l``, ``per / l`` and ``lse = m + log l`` (``-inf`` for a row with no visible key, whose
output is 0). The caller adds ``per @ a_V``. Backward, with ``P = exp(S - lse)``, ``dP_{ij} = dO_i\cdot v_j +
\sum_c doa_{i,\,o_c + l^c_{ij}}`` (``doa = dO\,a_V^\top``), ``dS = P\,(dP - \delta)``, ``\delta_i = dO_i\cdot O_i``:
``_bwd_kv`` gives ``dk = s\,dS^\top q`` and ``dv = P^\top dO`` per key tile; ``_bwd_q`` gives ``dq = s\,dS\,k``
and ``dqa = scatter_l dS`` per query tile (the caller turns ``dqa`` into ``dq += s\,dqa\,a_K`` and ``da_K = s\,
dqa^\top q``). The scatter has no register primitive in Triton: it loops over the label ids present in the tile
(with a non-zero weight), one masked row sum per id.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _label_sum(src, lab_ptr, slc, slm, sln, off_ptr, offs_m, offs_n, valid, C: tl.constexpr):
    """``sum_c src[i, o_c + l^c_ij]`` -> ``[BM, BN]`` (``src [BM, LP]`` in registers, one gather per channel). Label
    rows are read with unit stride (``sln`` is 1: the wrapper makes it so), which lets the loads vectorise."""
    out = tl.zeros(valid.shape, dtype=tl.float32)
    for c in tl.static_range(C):
        lab = tl.load(lab_ptr + c * slc + offs_m[:, None] * slm + offs_n[None, :], mask=valid, other=0)
        out += tl.gather(src, lab.to(tl.int32) + tl.load(off_ptr + c), 1)
    return out


@triton.jit
def _scatter(acc, x, lab_ptr, slc, slm, sln, off_ptr, offs_m, offs_n, valid, C: tl.constexpr,
             LP: tl.constexpr):
    """``acc [BM, LP] += scatter_l x``: ``acc[i, o_c + l] += sum_j [l^c_ij = l] x_ij``. One masked row sum per label
    id present in the tile (where ``x != 0``), visited in increasing order (each step finds the next id present),
    so a tile with a few distinct labels (relative positions far from the diagonal, a tree's sparse edges) costs a
    few steps whatever ``L``."""
    cols = tl.arange(0, LP)[None, :]
    live = valid & (x != 0.0)
    for c in tl.static_range(C):
        lab = tl.load(lab_ptr + c * slc + offs_m[:, None] * slm + offs_n[None, :], mask=valid, other=0).to(tl.int32)
        base = tl.load(off_ptr + c)
        lid = tl.min(tl.where(live, lab, 1 << 30))
        while lid < (1 << 30):
            col = tl.sum(tl.where(live & (lab == lid), x, 0.0), 1)
            acc = tl.where(cols == base + lid, acc + col[:, None], acc)
            lid = tl.min(tl.where(live & (lab > lid), lab, 1 << 30))
    return acc


@triton.jit
def _scores(q, k, qa, lab_ptr, slc, slm, sln, off_ptr, kpm_ptr, skn, al_ptr, sam, san, add_ptr, sdm, sdn,
            offs_m, offs_n, nq, nk, shift, scale, C: tl.constexpr, HAS_KPM: tl.constexpr, HAS_AL: tl.constexpr,
            HAS_ADD: tl.constexpr, CAUSAL: tl.constexpr, PREC: tl.constexpr):
    """``S [BM, BN]`` in float32, ``-inf`` where masked (padding, ``allowed`` False, causal, outside ``nq x nk``),
    and the in-range mask ``valid``."""
    valid = (offs_m[:, None] < nq) & (offs_n[None, :] < nk)
    s = tl.dot(q, tl.trans(k), input_precision=PREC) * scale
    s += _label_sum(qa, lab_ptr, slc, slm, sln, off_ptr, offs_m, offs_n, valid, C)
    keep = valid
    if HAS_ADD:
        s += tl.load(add_ptr + offs_m[:, None] * sdm + offs_n[None, :] * sdn, mask=valid, other=0.0).to(tl.float32)
    if HAS_KPM:
        pad = tl.load(kpm_ptr + offs_n * skn, mask=offs_n < nk, other=1)
        keep = keep & (pad == 0)[None, :]
    if HAS_AL:
        keep = keep & (tl.load(al_ptr + offs_m[:, None] * sam + offs_n[None, :] * san, mask=valid, other=0) != 0)
    if CAUSAL:
        keep = keep & (offs_n[None, :] <= offs_m[:, None] + shift)
    return tl.where(keep, s, float("-inf")), valid


@triton.jit
def _fwd(Q, K, V, QA, LAB, OFF, KPM, AL, ADD, O, LSE, PER,
         sqb, sqh, sqm, sqd, skb, skh, skn_, skd, svb, svh, svn, svd,
         slb, slc, slm, sln, spb, spn, sab, sah, sam, san, sdb, sdh, sdm, sdn,
         H, nq, nk, shift, scale, LT,
         C: tl.constexpr, D: tl.constexpr, DP: tl.constexpr, LP: tl.constexpr, BM: tl.constexpr,
         BN: tl.constexpr, VALUES: tl.constexpr, HAS_KPM: tl.constexpr, HAS_AL: tl.constexpr,
         HAS_ADD: tl.constexpr, CAUSAL: tl.constexpr, PREC: tl.constexpr):
    """One query tile: ``O [B*H, nq, DP]`` (float32, ``acc / l``), ``LSE [B*H, nq]``, ``PER [B*H, nq, LP]``
    (``per / l``, with ``VALUES``)."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)  # 64-bit offsets: B * H * nq * nk passes 2^31 at long n
    h = (bh % H).to(tl.int64)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_d = tl.arange(0, DP)
    offs_l = tl.arange(0, LP)
    row_ok = offs_m < nq
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd,
                mask=row_ok[:, None] & (offs_d[None, :] < D), other=0.0)
    qa = tl.load(QA + (bh * nq + offs_m[:, None]) * LT + offs_l[None, :],
                 mask=row_ok[:, None] & (offs_l[None, :] < LT), other=0.0)
    lab_ptr = LAB + b * slb
    kpm_ptr = KPM + b * spb
    al_ptr = AL + b * sab + h * sah
    add_ptr = ADD + b * sdb + h * sdh
    m_i = tl.full([BM], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BM], dtype=tl.float32)
    acc = tl.zeros([BM, DP], dtype=tl.float32)
    per = tl.zeros([BM, LP], dtype=tl.float32)
    hi = nk
    if CAUSAL:  # key j is visible to query i iff j <= i + shift
        hi = tl.minimum(nk, (pid_m + 1) * BM + shift)
    for start_n in range(0, hi, BN):
        offs_n = start_n + tl.arange(0, BN)
        col_ok = (offs_n[:, None] < nk) & (offs_d[None, :] < D)
        k = tl.load(K + b * skb + h * skh + offs_n[:, None] * skn_ + offs_d[None, :] * skd, mask=col_ok, other=0.0)
        v = tl.load(V + b * svb + h * svh + offs_n[:, None] * svn + offs_d[None, :] * svd, mask=col_ok, other=0.0)
        s, valid = _scores(q, k, qa, lab_ptr, slc, slm, sln, OFF, kpm_ptr, spn, al_ptr, sam, san, add_ptr, sdm, sdn,
                           offs_m, offs_n, nq, nk, shift, scale, C, HAS_KPM, HAS_AL, HAS_ADD, CAUSAL, PREC)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # nothing visible yet: exp(-inf - 0) = 0, no NaN
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PREC)
        if VALUES:
            per = _scatter(per * alpha[:, None], p, lab_ptr, slc, slm, sln, OFF, offs_m, offs_n, valid, C, LP)
        m_i = m_new
    alive = l_i > 0.0
    inv = tl.where(alive, 1.0 / tl.where(alive, l_i, 1.0), 0.0)
    tl.store(O + (bh * nq + offs_m[:, None]) * DP + offs_d[None, :], acc * inv[:, None], mask=row_ok[:, None])
    tl.store(LSE + bh * nq + offs_m, tl.where(alive, m_i + tl.log(tl.where(alive, l_i, 1.0)), float("-inf")),
             mask=row_ok)
    if VALUES:
        tl.store(PER + (bh * nq + offs_m[:, None]) * LP + offs_l[None, :], per * inv[:, None], mask=row_ok[:, None])


@triton.jit
def _probs_and_ds(q, k, v, do, qa, doa, lse, delta, lab_ptr, slc, slm, sln, OFF, kpm_ptr, spn, al_ptr, sam, san,
                  add_ptr, sdm, sdn, offs_m, offs_n, nq, nk, shift, scale, C: tl.constexpr, VALUES: tl.constexpr,
                  HAS_KPM: tl.constexpr, HAS_AL: tl.constexpr, HAS_ADD: tl.constexpr, CAUSAL: tl.constexpr,
                  PREC: tl.constexpr):
    """``P = exp(S - lse)`` and ``dS = P (dP - delta)`` of one (query tile, key tile) pair, and ``valid``."""
    s, valid = _scores(q, k, qa, lab_ptr, slc, slm, sln, OFF, kpm_ptr, spn, al_ptr, sam, san, add_ptr, sdm, sdn,
                       offs_m, offs_n, nq, nk, shift, scale, C, HAS_KPM, HAS_AL, HAS_ADD, CAUSAL, PREC)
    p = tl.exp(s - tl.where(lse == float("-inf"), 0.0, lse)[:, None])  # a dead row: S = -inf, P = 0
    dp = tl.dot(do, tl.trans(v), input_precision=PREC)
    if VALUES:
        dp += _label_sum(doa, lab_ptr, slc, slm, sln, OFF, offs_m, offs_n, valid, C)
    return p, p * (dp - delta[:, None]), valid


@triton.jit
def _bwd_kv(Q, K, V, DO, QA, DOA, LSE, DELTA, LAB, OFF, KPM, AL, ADD, DK, DV,
            sqb, sqh, sqm, sqd, skb, skh, skn_, skd, svb, svh, svn, svd, sob, soh, som, sod,
            slb, slc, slm, sln, spb, spn, sab, sah, sam, san, sdb, sdh, sdm, sdn,
            H, nq, nk, shift, scale, LT,
            C: tl.constexpr, D: tl.constexpr, DP: tl.constexpr, LP: tl.constexpr, BM: tl.constexpr,
            BN: tl.constexpr, VALUES: tl.constexpr, HAS_KPM: tl.constexpr, HAS_AL: tl.constexpr,
            HAS_ADD: tl.constexpr, CAUSAL: tl.constexpr, PREC: tl.constexpr):
    """One key tile: ``DK, DV [B*H, nk, DP]`` float32, over all query tiles that can see it."""
    pid_n = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)  # 64-bit offsets: B * H * nq * nk passes 2^31 at long n
    h = (bh % H).to(tl.int64)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_d = tl.arange(0, DP)
    offs_l = tl.arange(0, LP)
    col_ok = (offs_n[:, None] < nk) & (offs_d[None, :] < D)
    k = tl.load(K + b * skb + h * skh + offs_n[:, None] * skn_ + offs_d[None, :] * skd, mask=col_ok, other=0.0)
    v = tl.load(V + b * svb + h * svh + offs_n[:, None] * svn + offs_d[None, :] * svd, mask=col_ok, other=0.0)
    lab_ptr = LAB + b * slb
    kpm_ptr = KPM + b * spb
    al_ptr = AL + b * sab + h * sah
    add_ptr = ADD + b * sdb + h * sdh
    dk = tl.zeros([BN, DP], dtype=tl.float32)
    dv = tl.zeros([BN, DP], dtype=tl.float32)
    lo = 0
    if CAUSAL:  # queries i < j - shift do not see this tile's first key j
        lo = (tl.maximum(pid_n * BN - shift, 0) // BM) * BM
    for start_m in range(lo, nq, BM):
        offs_m = start_m + tl.arange(0, BM)
        row_ok = offs_m < nq
        rmask = row_ok[:, None] & (offs_d[None, :] < D)
        q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd, mask=rmask, other=0.0)
        do = tl.load(DO + b * sob + h * soh + offs_m[:, None] * som + offs_d[None, :] * sod, mask=rmask, other=0.0)
        lmask = row_ok[:, None] & (offs_l[None, :] < LT)
        qa = tl.load(QA + (bh * nq + offs_m[:, None]) * LT + offs_l[None, :], mask=lmask, other=0.0)
        doa = qa
        if VALUES:
            doa = tl.load(DOA + (bh * nq + offs_m[:, None]) * LT + offs_l[None, :], mask=lmask, other=0.0)
        lse = tl.load(LSE + bh * nq + offs_m, mask=row_ok, other=0.0)
        delta = tl.load(DELTA + bh * nq + offs_m, mask=row_ok, other=0.0)
        p, ds, valid = _probs_and_ds(q, k, v, do, qa, doa, lse, delta, lab_ptr, slc, slm, sln, OFF, kpm_ptr, spn,
                                     al_ptr, sam, san, add_ptr, sdm, sdn, offs_m, offs_n, nq, nk, shift, scale, C,
                                     VALUES, HAS_KPM, HAS_AL, HAS_ADD, CAUSAL, PREC)
        dv += tl.dot(tl.trans(p.to(do.dtype)), do, input_precision=PREC)
        dk += tl.dot(tl.trans(ds.to(q.dtype)), q, input_precision=PREC)
    out = (bh * nk + offs_n[:, None]) * DP + offs_d[None, :]
    tl.store(DK + out, dk * scale, mask=offs_n[:, None] < nk)
    tl.store(DV + out, dv, mask=offs_n[:, None] < nk)


@triton.jit
def _bwd_q(Q, K, V, DO, QA, DOA, LSE, DELTA, LAB, OFF, KPM, AL, ADD, DQ, DQA,
           sqb, sqh, sqm, sqd, skb, skh, skn_, skd, svb, svh, svn, svd, sob, soh, som, sod,
           slb, slc, slm, sln, spb, spn, sab, sah, sam, san, sdb, sdh, sdm, sdn,
           H, nq, nk, shift, scale, LT,
           C: tl.constexpr, D: tl.constexpr, DP: tl.constexpr, LP: tl.constexpr, BM: tl.constexpr,
           BN: tl.constexpr, VALUES: tl.constexpr, HAS_KPM: tl.constexpr, HAS_AL: tl.constexpr,
           HAS_ADD: tl.constexpr, CAUSAL: tl.constexpr, PREC: tl.constexpr):
    """One query tile: ``DQ [B*H, nq, DP]`` (``s dS k``) and ``DQA [B*H, nq, LP]`` (``scatter_l dS``), float32."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)  # 64-bit offsets: B * H * nq * nk passes 2^31 at long n
    h = (bh % H).to(tl.int64)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_d = tl.arange(0, DP)
    offs_l = tl.arange(0, LP)
    row_ok = offs_m < nq
    rmask = row_ok[:, None] & (offs_d[None, :] < D)
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd, mask=rmask, other=0.0)
    do = tl.load(DO + b * sob + h * soh + offs_m[:, None] * som + offs_d[None, :] * sod, mask=rmask, other=0.0)
    lmask = row_ok[:, None] & (offs_l[None, :] < LT)
    qa = tl.load(QA + (bh * nq + offs_m[:, None]) * LT + offs_l[None, :], mask=lmask, other=0.0)
    doa = qa
    if VALUES:
        doa = tl.load(DOA + (bh * nq + offs_m[:, None]) * LT + offs_l[None, :], mask=lmask, other=0.0)
    lse = tl.load(LSE + bh * nq + offs_m, mask=row_ok, other=0.0)
    delta = tl.load(DELTA + bh * nq + offs_m, mask=row_ok, other=0.0)
    lab_ptr = LAB + b * slb
    kpm_ptr = KPM + b * spb
    al_ptr = AL + b * sab + h * sah
    add_ptr = ADD + b * sdb + h * sdh
    dq = tl.zeros([BM, DP], dtype=tl.float32)
    dqa = tl.zeros([BM, LP], dtype=tl.float32)
    hi = nk
    if CAUSAL:
        hi = tl.minimum(nk, (pid_m + 1) * BM + shift)
    for start_n in range(0, hi, BN):
        offs_n = start_n + tl.arange(0, BN)
        col_ok = (offs_n[:, None] < nk) & (offs_d[None, :] < D)
        k = tl.load(K + b * skb + h * skh + offs_n[:, None] * skn_ + offs_d[None, :] * skd, mask=col_ok, other=0.0)
        v = tl.load(V + b * svb + h * svh + offs_n[:, None] * svn + offs_d[None, :] * svd, mask=col_ok, other=0.0)
        p, ds, valid = _probs_and_ds(q, k, v, do, qa, doa, lse, delta, lab_ptr, slc, slm, sln, OFF, kpm_ptr, spn,
                                     al_ptr, sam, san, add_ptr, sdm, sdn, offs_m, offs_n, nq, nk, shift, scale, C,
                                     VALUES, HAS_KPM, HAS_AL, HAS_ADD, CAUSAL, PREC)
        dq += tl.dot(ds.to(k.dtype), k, input_precision=PREC)
        dqa = _scatter(dqa, ds, lab_ptr, slc, slm, sln, OFF, offs_m, offs_n, valid, C, LP)
    tl.store(DQ + (bh * nq + offs_m[:, None]) * DP + offs_d[None, :], dq * scale, mask=row_ok[:, None])
    tl.store(DQA + (bh * nq + offs_m[:, None]) * LP + offs_l[None, :], dqa, mask=row_ok[:, None])
