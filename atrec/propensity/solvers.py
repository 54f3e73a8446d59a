"""Numpy solvers of the observation models behind ``logistic`` and ``1bit-mc``.

Both model the observation matrix ``Y`` (``Y[u, i] = 1`` for a training rating, 0 for every other
cell) by independent Bernoulli variables ``Y[u, i] ~ Bernoulli(sigmoid(Z[u, i]))`` and minimise
the negative log-likelihood over all ``num_users x num_items`` cells (a sum, not a mean)::

    F(Z) = sum_{u,i} [ softplus(Z[u, i]) - Y[u, i] * Z[u, i] ],   softplus(z) = log(1 + e^z)

* :func:`fit_feature_logistic`: ``Z[u, i] = b + x_u . w + x_i . v`` with user / item feature
  rows ``x_u``, ``x_i``, plus ``(lam / 2)(|w|^2 + |v|^2)`` (the intercept is not penalised).
  Newton's method on the exact gradient and Hessian, whose blocks are sums over the cell grid
  (``X_u^T W X_i`` and diagonal forms; no ``cells x features`` design is ever built), with a
  backtracking (Armijo) line search; it stops when the Newton decrement ``g^T H^-1 g / 2``, an
  estimate of the distance to the optimum in objective units, is below ``tol``.
* :func:`fit_onebit_mc`: 1-bit matrix completion (Davenport et al. 2014; used for missingness
  by Ma and Chen, NeurIPS 2019): ``min F(Z)`` subject to ``|Z|_* <= radius`` (nuclear norm).
  Monotone accelerated projected gradient (MFISTA) with the step ``1 / L = 4`` (the gradient
  ``sigmoid(Z) - Y`` is ``1/4``-Lipschitz); ``F`` never increases. The projection onto the nuclear-norm ball
  soft-thresholds the singular values so that they sum to ``radius`` (the l1-ball projection
  of Duchi et al. 2008 applied to the spectrum). Singular pairs come exactly from ``eigh`` of
  the smaller Gram matrix, so one iteration costs ``O(m n min(m, n))``; from
  :data:`SUBSPACE_MIN_SIZE` rows of that matrix (ML-100K) the leading pairs come instead from
  subspace iteration warm-started at the previous iterate's (:class:`LeadingSpectrum`), which
  reaches the same objective by the same stopping rule. It stops when an iteration
  lowers ``F`` by less than ``tol * F`` and reports the Frank-Wolfe duality gap
  ``<grad, Z> + radius * sigma_max(grad)``, an upper bound on ``F(Z) - min F``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np


def observation_matrix(num_users: int, num_items: int, user: np.ndarray,
                       item: np.ndarray) -> np.ndarray:
    """``Y``: float64 ``(num_users, num_items)``, 1 at the given cells, 0 elsewhere."""
    y = np.zeros((num_users, num_items))
    y[np.asarray(user, dtype=np.int64), np.asarray(item, dtype=np.int64)] = 1.0
    return y


def sigmoid(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-z))`` without overflow."""
    return np.exp(-np.logaddexp(0.0, -z))


def bernoulli_nll(z: np.ndarray, y: np.ndarray) -> float:
    """``F(Z) = sum softplus(Z) - Y * Z`` (see the module docstring)."""
    return float(np.sum(np.logaddexp(0.0, z)) - np.sum(y * z))


@dataclass
class LogisticFit:
    """``intercept``, ``w`` (user features), ``v`` (item features); ``logits()`` gives ``Z``."""

    intercept: float
    w: np.ndarray
    v: np.ndarray
    user_x: np.ndarray
    item_x: np.ndarray
    iterations: int
    converged: bool
    objective: float
    decrement: float
    objectives: list = field(default_factory=list)

    def logits(self) -> np.ndarray:
        return self.intercept + (self.user_x @ self.w)[:, None] + (self.item_x @ self.v)[None, :]


def _penalised(z, y, w, v, lam) -> float:
    return bernoulli_nll(z, y) + 0.5 * lam * (float(w @ w) + float(v @ v))


def fit_feature_logistic(y: np.ndarray, user_x: np.ndarray, item_x: np.ndarray, lam: float = 1.0,
                         tol: float = 1e-10, max_iter: int = 100) -> LogisticFit:
    """Newton's method for the penalised logistic regression of ``y`` on the features.

    ``y``: ``(m, n)`` 0/1; ``user_x``: ``(m, d_u)``; ``item_x``: ``(n, d_i)``. Starts from
    ``Z = logit(mean y)``; deterministic (no randomness, fixed operation order).
    """
    m, n = y.shape
    xu, xi = np.asarray(user_x, np.float64), np.asarray(item_x, np.float64)
    du, di = xu.shape[1], xi.shape[1]
    rho = float(np.clip(y.mean(), 1e-12, 1 - 1e-12))
    theta = np.zeros(1 + du + di)
    theta[0] = np.log(rho / (1 - rho))

    def unpack(t):
        return t[0], t[1:1 + du], t[1 + du:]

    def logits(t):
        b, w, v = unpack(t)
        return b + (xu @ w)[:, None] + (xi @ v)[None, :]

    reg = np.r_[0.0, np.full(du + di, lam)]
    z = logits(theta)
    obj = _penalised(z, y, *unpack(theta)[1:], lam)
    objectives, decrement, converged, it = [obj], np.inf, False, 0
    for it in range(1, max_iter + 1):
        s = sigmoid(z)
        r, wgt = s - y, s * (1.0 - s)
        ru, ri, wu, wi = r.sum(1), r.sum(0), wgt.sum(1), wgt.sum(0)
        grad = np.r_[r.sum(), xu.T @ ru, xi.T @ ri] + reg * theta
        hess = np.empty((1 + du + di,) * 2)
        hess[0, 0] = wgt.sum()
        hess[0, 1:1 + du] = hess[1:1 + du, 0] = xu.T @ wu
        hess[0, 1 + du:] = hess[1 + du:, 0] = xi.T @ wi
        hess[1:1 + du, 1:1 + du] = (xu * wu[:, None]).T @ xu
        hess[1 + du:, 1 + du:] = (xi * wi[:, None]).T @ xi
        cross = xu.T @ (wgt @ xi)
        hess[1:1 + du, 1 + du:], hess[1 + du:, 1:1 + du] = cross, cross.T
        hess += np.diag(reg)
        step = np.linalg.solve(hess, grad)
        decrement = 0.5 * float(grad @ step)
        if decrement <= tol:
            converged = True
            it -= 1
            break
        t = 1.0
        while True:  # Armijo backtracking on the penalised objective
            cand = theta - t * step
            z_new = logits(cand)
            new = _penalised(z_new, y, *unpack(cand)[1:], lam)
            if new <= obj - 0.25 * t * 2 * decrement or t < 1e-10:
                break
            t *= 0.5
        theta, z, obj = cand, z_new, new
        objectives.append(obj)
    b, w, v = unpack(theta)
    return LogisticFit(float(b), w, v, xu, xi, it, converged, obj, decrement, objectives)


@dataclass
class OneBitFit:
    """The solution ``z`` and how it was reached (``objectives[t]`` is ``F`` after ``t``
    iterations; ``objectives[0]`` at the start)."""

    z: np.ndarray
    radius: float
    iterations: int
    converged: bool
    objectives: list
    duality_gap: float
    rank: int
    seconds: float

    @property
    def objective(self) -> float:
        return self.objectives[-1]


def _gram_spectrum(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Singular values (descending) and right singular vectors of ``a`` or of ``a.T`` (the
    smaller Gram matrix); the flag says whether ``a`` was transposed."""
    flip = a.shape[0] < a.shape[1]
    tall = a.T if flip else a
    evals, evecs = np.linalg.eigh(tall.T @ tall)
    order = np.argsort(evals)[::-1]
    return np.sqrt(np.maximum(evals[order], 0.0)), evecs[:, order], flip


def _threshold(s: np.ndarray, radius: float) -> tuple[int, float]:
    """``(keep, theta)``: soft-thresholding ``s`` (descending) at ``theta`` leaves ``keep``
    values summing to ``radius`` (Duchi et al. 2008)."""
    csum = np.cumsum(s)
    active = np.flatnonzero(s - (csum - radius) / np.arange(1, len(s) + 1) > 0)
    keep = int(active[-1]) + 1
    return keep, float((csum[keep - 1] - radius) / keep)


def _project_with(a: np.ndarray, radius: float, s: np.ndarray, vecs: np.ndarray,
                  flip: bool) -> tuple[np.ndarray, int]:
    """The projection of ``a`` from its leading singular values ``s`` (descending) and right
    singular vectors ``vecs`` (of ``a.T`` when ``flip``); ``s`` must reach below the
    threshold unless ``a`` is inside the ball."""
    if s.sum() <= radius:
        return a, int(np.count_nonzero(s > s[0] * 1e-12)) if s.size and s[0] > 0 else 0
    keep, theta = _threshold(s, radius)
    tall = a.T if flip else a
    v = vecs[:, :keep]
    out = ((tall @ v) * ((s[:keep] - theta) / s[:keep])) @ v.T
    return (out.T if flip else out), keep


def project_nuclear_ball(a: np.ndarray, radius: float) -> tuple[np.ndarray, int]:
    """The Frobenius-nearest matrix to ``a`` with nuclear norm at most ``radius``, and its rank
    (exact: singular pairs from ``eigh`` of the smaller Gram matrix)."""
    return _project_with(a, radius, *_gram_spectrum(a))


# Below this many rows of the smaller Gram matrix a full ``eigh`` is cheaper than subspace
# iteration (Coat, 290: 1.0 s CPU for a whole fit with eigh, 1.6 s with subspace iteration);
# above it subspace iteration wins (ML-100K, 943: one eigh 0.26 s CPU, ten block steps 0.06 s).
SUBSPACE_MIN_SIZE = 400


class LeadingSpectrum:
    """Leading singular pairs of a sequence of slowly changing matrices (the iterates of
    :func:`fit_onebit_mc`), each found from the previous one's by subspace iteration.

    :meth:`pairs` takes the smaller Gram matrix ``G`` of ``a`` and iterates ``V <- orth(G V)``
    with a Rayleigh-Ritz step, from the last call's basis, until the residual
    ``|G v - lambda v|`` of every pair that ``needed(values)`` asks for is at most
    ``tol * lambda_max``; ``needed`` returns ``None`` when the block cannot decide (too few
    values). ``values_only``: only the values are used (the duality gap's ``sigma_max``), so
    the test is instead that no needed Ritz value moved by more than ``tol * lambda_max`` in
    the last step (vectors of a cluster of nearly equal values converge slowly, its values
    do not). The first call, a block that cannot decide, or no convergence within
    ``max_iter`` steps falls back to the full ``eigh`` (exact), whose leading ``needed + margin``
    vectors seed the next call. One step costs ``O(n^2 b)`` against ``eigh``'s ``O(n^3)``.
    """

    def __init__(self, margin: int = 16, tol: float = 1e-9, max_iter: int = 60,
                 values_only: bool = False) -> None:
        self.margin, self.tol, self.max_iter = margin, tol, max_iter
        self.values_only = values_only
        self.basis: np.ndarray | None = None
        self.fallbacks = 0

    def pairs(self, a: np.ndarray, needed) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(s, vecs, flip)`` as :func:`_gram_spectrum` gives them, leading pairs only."""
        flip = a.shape[0] < a.shape[1]
        tall = a.T if flip else a
        gram = tall.T @ tall
        if (self.basis is not None and self.basis.shape[0] == gram.shape[0]
                and gram.shape[0] >= SUBSPACE_MIN_SIZE):
            found = self._iterate(gram, needed)
            if found is not None:
                return (*found, flip)
        self.fallbacks += 1
        evals, evecs = np.linalg.eigh(gram)
        evals, evecs = evals[::-1], evecs[:, ::-1]
        s = np.sqrt(np.maximum(evals, 0.0))
        k = needed(s) or 1
        self.basis = evecs[:, :min(len(s), k + self.margin)]
        return s, evecs, flip

    def _iterate(self, gram: np.ndarray, needed):
        gv = gram @ self.basis
        last = None
        for _ in range(self.max_iter):
            q, _ = np.linalg.qr(gv)
            gq = gram @ q
            evals, y = np.linalg.eigh(q.T @ gq)
            evals, y = evals[::-1], y[:, ::-1]
            v, gv = q @ y, gq @ y
            s = np.sqrt(np.maximum(evals, 0.0))
            k = needed(s)
            if k is None or k >= len(s):
                return None
            scale = self.tol * max(evals[0], np.finfo(float).tiny)
            if self.values_only:
                done = last is not None and np.all(np.abs(evals[:k] - last[:k]) <= scale)
                last = evals
            else:
                done = np.all(np.linalg.norm(gv[:, :k] - v[:, :k] * evals[:k], axis=0) <= scale)
            if done:
                self.basis = v[:, :min(len(s), max(k + self.margin, v.shape[1]))]
                return s, v
        return None


def default_radius(num_users: int, num_items: int, n_observed: int, scale: float = 1.5) -> float:
    """``scale * |logit(rho)| * sqrt(m n)``: ``scale`` times the nuclear norm of the constant
    (MCAR) fit ``Z = logit(rho)``, ``rho = n_observed / (m n)`` (the default 1.5 is discussed
    in :mod:`atrec.propensity.models`)."""
    rho = n_observed / (num_users * num_items)
    return scale * abs(np.log(rho / (1.0 - rho))) * np.sqrt(num_users * num_items)


def duality_gap(z: np.ndarray, y: np.ndarray, radius: float,
                spectrum: LeadingSpectrum | None = None) -> float:
    """``<grad F(Z), Z> + radius * sigma_max(grad F(Z))``: the Frank-Wolfe gap, an upper bound
    on ``F(Z) - min F`` over the ball (``min_{|S|_* <= r} <g, S> = -r sigma_max(g)``).
    ``spectrum``: where ``sigma_max`` comes from (default: a full ``eigh``)."""
    from scipy.special import expit  # SciPy: loaded by a 1-bit fit only, not by 'import atrec'

    grad = expit(z)
    grad -= y
    if spectrum is None:
        s = _gram_spectrum(grad)[0]
    else:
        s = spectrum.pairs(grad, lambda values: 1)[0]
    return float(np.sum(grad * z) + radius * s[0])


def _keep_needed(radius: float):
    """How many leading pairs the projection onto the ball of ``radius`` needs given the
    leading singular values found so far: those kept plus the first one left out (which shows
    the threshold is exact); ``None`` when the values found do not decide it."""
    def needed(s: np.ndarray) -> int | None:
        if s.sum() <= radius:
            return None            # maybe inside the ball: only the whole spectrum tells
        keep, _ = _threshold(s, radius)
        return keep + 1 if keep < len(s) else None
    return needed


def fit_onebit_mc(y: np.ndarray, radius: float, tol: float = 1e-5, max_iter: int = 500,
                  step: float = 4.0) -> OneBitFit:
    """Monotone accelerated projected gradient (MFISTA, Beck and Teboulle 2009) for
    ``min F(Z)`` s.t. ``|Z|_* <= radius`` (module docstring).

    Each iteration takes the projected gradient step ``c = P(x' - step * grad F(x'))`` from the
    extrapolated point ``x'`` and keeps the better of ``c`` and the current ``x``, so ``F(x)``
    never increases. It stops at the first iteration whose duality gap is at most
    ``tol * F(x)`` (the gap is computed when ``F`` moved by less than ``tol * F``, and every
    25 iterations), or after ``max_iter``. Starts from the constant
    ``Z = logit(mean y)`` projected onto the ball; deterministic.
    """
    from scipy.special import expit  # SciPy: loaded by a 1-bit fit only, not by 'import atrec'

    start = time.perf_counter()
    rho = float(np.clip(y.mean(), 1e-12, 1 - 1e-12))
    x, rank = project_nuclear_ball(np.full(y.shape, np.log(rho / (1 - rho))), radius)
    objectives = [bernoulli_nll(x, y)]
    extra, t, gap, converged, it = x, 1.0, float("inf"), False, 0
    steps, grads, needed = LeadingSpectrum(), LeadingSpectrum(margin=32, tol=1e-12, values_only=True), _keep_needed(radius)
    for it in range(1, max_iter + 1):
        # x' - step * (sigmoid(x') - Y), in place: each temporary is a whole m x n array
        point = expit(extra)
        point -= y
        point *= step
        np.subtract(extra, point, out=point)
        cand, cand_rank = _project_with(point, radius, *steps.pairs(point, needed))
        value = bernoulli_nll(cand, y)
        prev = x
        if value <= objectives[-1]:
            x, rank = cand, cand_rank
        objectives.append(min(value, objectives[-1]))
        t_next = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        # x + (t / t_next)(c - x) + ((t - 1) / t_next)(x - prev), same order, in place
        extra = cand - x
        extra *= t / t_next
        extra += x
        if prev is not x:          # else x - prev is 0 (adding it could only turn -0.0 to 0.0)
            momentum = x - prev
            momentum *= (t - 1.0) / t_next
            extra += momentum
        t = t_next
        small = objectives[-2] - objectives[-1] <= tol * abs(objectives[-1])
        if small or it % 25 == 0:
            gap = duality_gap(x, y, radius, grads)
            if gap <= tol * abs(objectives[-1]):
                converged = True
                break
    if not converged:
        gap = duality_gap(x, y, radius)
    return OneBitFit(x, float(radius), it, converged, objectives, gap, rank,
                     time.perf_counter() - start)
