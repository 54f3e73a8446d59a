"""Leading singular pairs for the nuclear-norm projection of :func:`~atrec.propensity.solvers.fit_onebit_mc`.

The projection of ``a`` onto the ball ``|Z|_* <= radius`` soft-thresholds its singular values
so that they sum to ``radius`` (Duchi et al. 2008's l1-ball projection applied to the
spectrum); it needs only the pairs it keeps, plus the first one left out to show that the
threshold is exact. Pairs are those of the smaller Gram matrix ``G = T^T T`` (``T`` is ``a`` or
``a.T``, whichever has more rows): eigenvalues ``sigma^2`` and right singular vectors of ``T``.

* :func:`project_nuclear_ball`: exact, from ``eigh`` of ``G`` (``O(m n min(m, n))``).
* :class:`LeadingSpectrum`: the leading pairs of a sequence of slowly changing matrices (the
  solver's iterates) by block Krylov iteration warm-started at the previous matrix's basis,
  without forming ``G``: each step multiplies the block by ``T`` and ``T^T``
  (``O(m n b)``); it falls back to the exact ``eigh`` when it cannot decide.
"""

from __future__ import annotations

import numpy as np


def gram_spectrum(a: np.ndarray, values_only: bool = False
                  ) -> tuple[np.ndarray, np.ndarray | None, bool]:
    """Singular values (descending) and right singular vectors of ``a`` or of ``a.T`` (the
    smaller Gram matrix); the flag says whether ``a`` was transposed. ``values_only``: no
    vectors (``None``; ``eigvalsh``, a third of ``eigh``'s time)."""
    flip = a.shape[0] < a.shape[1]
    tall = a.T if flip else a
    if values_only:
        evals, evecs = np.linalg.eigvalsh(tall.T @ tall), None
    else:
        evals, evecs = np.linalg.eigh(tall.T @ tall)
    order = np.argsort(evals)[::-1]
    return (np.sqrt(np.maximum(evals[order], 0.0)), None if evecs is None else evecs[:, order],
            flip)


def threshold(s: np.ndarray, radius: float) -> tuple[int, float]:
    """``(keep, theta)``: soft-thresholding ``s`` (descending) at ``theta`` leaves ``keep``
    values summing to ``radius`` (Duchi et al. 2008)."""
    csum = np.cumsum(s)
    active = np.flatnonzero(s - (csum - radius) / np.arange(1, len(s) + 1) > 0)
    keep = int(active[-1]) + 1
    return keep, float((csum[keep - 1] - radius) / keep)


def project_with(a: np.ndarray, radius: float, s: np.ndarray, vecs: np.ndarray,
                 flip: bool) -> tuple[np.ndarray, int]:
    """The projection of ``a`` from its leading singular values ``s`` (descending) and right
    singular vectors ``vecs`` (of ``a.T`` when ``flip``); ``s`` must reach below the
    threshold unless ``a`` is inside the ball."""
    if s.sum() <= radius:
        return a, int(np.count_nonzero(s > s[0] * 1e-12)) if s.size and s[0] > 0 else 0
    keep, theta = threshold(s, radius)
    tall = a.T if flip else a
    v = vecs[:, :keep]
    left = (tall @ v) * ((s[:keep] - theta) / s[:keep])
    return (v @ left.T if flip else left @ v.T), keep     # laid out as ``a`` (C order)


def project_nuclear_ball(a: np.ndarray, radius: float) -> tuple[np.ndarray, int]:
    """The Frobenius-nearest matrix to ``a`` with nuclear norm at most ``radius``, and its rank
    (exact: singular pairs from ``eigh`` of the smaller Gram matrix)."""
    return project_with(a, radius, *gram_spectrum(a))


def keep_needed(radius: float):
    """How many leading pairs the projection onto the ball of ``radius`` needs given the
    leading singular values found so far: those kept plus the first one left out (which shows
    the threshold is exact); ``None`` when the values found do not decide it."""
    def needed(s: np.ndarray) -> int | None:
        if s.sum() <= radius:
            return None            # maybe inside the ball: only the whole spectrum tells
        keep, _ = threshold(s, radius)
        return keep + 1 if keep < len(s) else None
    return needed


# Below this many rows of the smaller Gram matrix a full ``eigh`` is cheaper than the Krylov
# iteration (Coat, 290: 0.8 CPU-s for a whole fit with eigh, 1.1 with Krylov; ML-100K, 943:
# one eigh 0.2 s, the Krylov iteration 30-50 ms a call; benchmarks/bench_onebit.py).
KRYLOV_MIN_SIZE = 400


def _extend(block: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """Orthonormal directions of ``block`` outside the orthonormal columns of ``basis``
    (classical Gram-Schmidt twice, then QR); directions already inside it are dropped, so that
    the space stays orthonormal when it becomes (numerically) invariant."""
    size = np.linalg.norm(block, axis=0).max()
    for _ in range(2):
        block = block - basis @ (basis.T @ block)
    q, r = np.linalg.qr(block)
    q = q[:, np.abs(np.diag(r)) > 1e-10 * max(size, np.finfo(float).tiny)]
    return np.linalg.qr(q - basis @ (basis.T @ q))[0]


class LeadingSpectrum:
    """Leading singular pairs of a sequence of slowly changing matrices (the iterates of
    :func:`~atrec.propensity.solvers.fit_onebit_mc`), each found from the previous one's.

    :meth:`pairs` grows the block Krylov space ``[Q, G Q, G^2 Q, ...]`` of the smaller Gram
    matrix ``G`` from the last call's basis ``Q``, multiplying by ``T`` and ``T^T`` (``G`` is
    never formed), with a Rayleigh-Ritz step on the whole space after each block, until the
    residual ``|G v - lambda v|`` of every pair that ``needed(values)`` asks for is at most
    ``tol * lambda_max`` (the test the exact path meets to rounding); ``needed`` returns
    ``None`` when the block cannot decide (too few values). ``values_only``: only the values are
    used (the duality gap's ``sigma_max``), so the test is instead that no needed Ritz value
    moved by more than ``tol * lambda_max`` in the last step (vectors of a cluster of nearly
    equal values converge slowly, its values do not; Ritz values only grow as the space
    grows). The first call, a matrix smaller than :data:`KRYLOV_MIN_SIZE`, a block that cannot
    decide, or no convergence within ``max_depth`` blocks falls back to the full ``eigh``
    (exact); the leading ``needed + margin`` vectors seed the next call. ``fallbacks`` counts
    the ``eigh`` calls, ``products`` the block products with ``G``.
    """

    def __init__(self, margin: int = 8, tol: float = 1e-9, max_depth: int = 12,
                 values_only: bool = False) -> None:
        self.margin, self.tol, self.max_depth = margin, tol, max_depth
        self.values_only = values_only
        self.basis: np.ndarray | None = None
        self.fallbacks = self.products = 0

    def pairs(self, a: np.ndarray, needed, enough=None) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(s, vecs, flip)`` as :func:`gram_spectrum` gives them, leading pairs only.
        ``enough(values)`` (``values_only``): ``True`` when Ritz values, which are lower bounds
        of the true ones, already answer the caller's question; the iteration stops there."""
        flip = a.shape[0] < a.shape[1]
        size = min(a.shape)
        if (self.basis is not None and self.basis.shape[0] == size
                and size >= KRYLOV_MIN_SIZE):
            found = self._krylov(a.T if flip else a, needed, enough)
            if found is not None:
                return (*found, flip)
        self.fallbacks += 1
        # vectors: for the caller, or to seed the next call's iteration
        s, evecs, flip = gram_spectrum(a, self.values_only and size < KRYLOV_MIN_SIZE)
        if evecs is not None:
            self.basis = evecs[:, :min(len(s), (needed(s) or 1) + self.margin)]
        return s, evecs, flip

    def _krylov(self, tall: np.ndarray, needed, enough):
        def times_gram(block):
            self.products += 1
            return tall.T @ (tall @ block)

        space = np.linalg.qr(self.basis)[0]
        image = times_gram(space)
        width, last = space.shape[1], None
        for depth in range(self.max_depth):
            evals, y = np.linalg.eigh(space.T @ image)
            evals, y = evals[::-1], y[:, ::-1]
            s = np.sqrt(np.maximum(evals, 0.0))
            k = needed(s)
            if k is None or k >= len(s):
                return None
            scale = self.tol * max(evals[0], np.finfo(float).tiny)
            if self.values_only:
                done = ((last is not None and np.all(np.abs(evals[:k] - last[:k]) <= scale))
                        or (enough is not None and enough(s)))
                last = evals
                if done:
                    v = space @ y[:, :k + self.margin]
            else:
                v = space @ y
                gv = image @ y[:, :k]
                done = np.all(np.linalg.norm(gv - v[:, :k] * evals[:k], axis=0) <= scale)
            if done:
                self.basis = v[:, :min(len(s), k + self.margin)]
                return s, v
            if depth + 1 < self.max_depth:
                block = _extend(image[:, -width:], space)
                if block.shape[1] == 0:
                    return None
                width = block.shape[1]
                space = np.hstack([space, block])
                image = np.hstack([image, times_gram(block)])
        return None
