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
  ``sigmoid(Z) - Y`` is ``1/4``-Lipschitz) and adaptive restart; ``F`` never increases. The
  projection onto the nuclear-norm ball soft-thresholds the singular values so that they sum
  to ``radius`` (the l1-ball projection of Duchi et al. 2008 applied to the spectrum;
  :mod:`atrec.propensity.spectrum`). Its
  singular pairs come exactly from ``eigh`` of the smaller Gram matrix below
  :data:`~atrec.propensity.spectrum.KRYLOV_MIN_SIZE` rows of that matrix (Coat); from there
  (ML-100K) the leading pairs come from block Krylov iteration on the matrix itself,
  warm-started at the previous iterate's (:class:`~atrec.propensity.spectrum.LeadingSpectrum`),
  which reaches the same objective by the same stopping rule. When an iteration lowers ``F``
  by less than ``tol * F`` (and every 25 iterations) it computes the Frank-Wolfe duality gap
  ``<grad, Z> + radius * sigma_max(grad)``, an upper bound on ``F(Z) - min F``, and stops when
  that gap is at most ``tol * F``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from atrec.propensity.spectrum import (
    LeadingSpectrum,
    gram_spectrum,
    keep_needed,
    project_with,
)


def observation_matrix(num_users: int, num_items: int, user: np.ndarray,
                       item: np.ndarray) -> np.ndarray:
    """``Y``: float64 ``(num_users, num_items)``, 1 at the given cells, 0 elsewhere."""
    y = np.zeros((num_users, num_items))
    y[np.asarray(user, dtype=np.int64), np.asarray(item, dtype=np.int64)] = 1.0
    return y


def sigmoid(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-z))`` without overflow."""
    return np.exp(-np.logaddexp(0.0, -z))


_EXP_SAFE = 700.0   # exp(z) is finite below about 709.78


def bernoulli_nll(z: np.ndarray, y: np.ndarray, out: np.ndarray | None = None) -> float:
    """``F(Z) = sum softplus(Z) - Y * Z`` (see the module docstring); ``out``: scratch space
    of ``z``'s shape (a whole-matrix temporary fewer)."""
    return _nll_keeping_exp(z, y, out, out)[0]


def _nll_keeping_exp(z: np.ndarray, y: np.ndarray, out: np.ndarray | None,
                     exp_out: np.ndarray | None) -> tuple[float, np.ndarray | None]:
    """``(F(Z), exp(Z))``; ``exp(Z)`` is ``None`` where it would overflow (``logaddexp`` then)."""
    if np.max(z) < _EXP_SAFE:       # log1p(exp(z)): two passes, faster than logaddexp
        exp_z = np.exp(z, out=exp_out)
        soft = np.log1p(exp_z, out=out)
    else:
        exp_z, soft = None, np.logaddexp(0.0, z, out=out)
    return float(np.sum(soft) - np.vdot(y, z)), exp_z


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


def default_radius(num_users: int, num_items: int, n_observed: int, scale: float = 1.5) -> float:
    """``scale * |logit(rho)| * sqrt(m n)``: ``scale`` times the nuclear norm of the constant
    (MCAR) fit ``Z = logit(rho)``, ``rho = n_observed / (m n)`` (the default 1.5 is discussed
    in :mod:`atrec.propensity.models`)."""
    rho = n_observed / (num_users * num_items)
    return scale * abs(np.log(rho / (1.0 - rho))) * np.sqrt(num_users * num_items)


def duality_gap(z: np.ndarray, y: np.ndarray, radius: float,
                spectrum: LeadingSpectrum | None = None, above: float | None = None,
                out: np.ndarray | None = None, exp_z: np.ndarray | None = None) -> float:
    """``<grad F(Z), Z> + radius * sigma_max(grad F(Z))``: the Frank-Wolfe gap, an upper bound
    on ``F(Z) - min F`` over the ball (``min_{|S|_* <= r} <g, S> = -r sigma_max(g)``).
    ``spectrum``: where ``sigma_max`` comes from (default: a full ``eigh``). ``above``: the
    caller only needs to know that the gap exceeds it, so a lower bound above it is returned
    as soon as the iteration finds one (Ritz values never exceed ``sigma_max``; the factor
    ``1 - 1e-12`` covers their rounding). ``out``: scratch space of ``z``'s shape. ``exp_z``:
    ``exp(z)`` where the caller has it (the logistic is then ``e / (1 + e)``, no ``exp``)."""
    from scipy.special import expit  # SciPy: loaded by a 1-bit fit only, not by 'import atrec'

    if exp_z is None:
        grad = expit(z, out=out)
    else:
        grad = np.add(exp_z, 1.0, out=out)
        np.divide(exp_z, grad, out=grad)
    grad -= y
    inner = float(np.vdot(grad, z))
    if spectrum is None:
        return inner + radius * float(gram_spectrum(grad)[0][0])
    enough = None if above is None else (
        lambda values: inner + radius * values[0] * (1.0 - 1e-12) > above)
    return inner + radius * float(spectrum.pairs(grad, lambda values: 1, enough)[0][0])


def fit_onebit_mc(y: np.ndarray, radius: float, tol: float = 1e-5, max_iter: int = 500,
                  step: float = 4.0) -> OneBitFit:
    """Monotone accelerated projected gradient (MFISTA, Beck and Teboulle 2009) for
    ``min F(Z)`` s.t. ``|Z|_* <= radius`` (module docstring).

    Each iteration takes the projected gradient step ``c = P(x' - step * grad F(x'))`` from the
    extrapolated point ``x'`` and keeps the better of ``c`` and the current ``x``, so ``F(x)``
    never increases. The momentum restarts (``t = 1``) when ``c`` did not lower ``F`` or when
    the step turns against the last move (``<x' - c, c - x_prev> > 0``, the gradient scheme of
    O'Donoghue and Candes 2015): the fit is well conditioned away from the constraint, where
    plain acceleration overshoots, and restarting reaches the same gap in less than half the
    iterations (docs/baselines.md, "1bit-mc fit time"). It stops at the first iteration whose
    duality gap is at most ``tol * F(x)`` (the gap is computed when ``F`` moved by less than
    ``tol * F``, and every 25 iterations), or after ``max_iter``. Starts from the constant
    ``Z = logit(mean y)`` projected onto the ball; deterministic.
    """
    from scipy.special import expit  # SciPy: loaded by a 1-bit fit only, not by 'import atrec'

    start = time.perf_counter()
    rho = float(np.clip(y.mean(), 1e-12, 1 - 1e-12))
    # the constant matrix c has one singular value, |c| sqrt(m n): its projection is itself,
    # or that constant scaled down to the ball's radius
    const = np.log(rho / (1 - rho))
    const *= min(1.0, radius / (abs(const) * np.sqrt(y.size)))
    x, rank = np.full(y.shape, const), 1
    # whole m x n arrays reused by every iteration: the gradient step, the extrapolated point
    # (never x or c themselves), scratch for the objective and the gap, and exp(c), which the
    # objective computes and the gap reuses while x is c
    point, extra, scratch, exp_c = (np.empty_like(y), x.copy(), np.empty_like(y),
                                    np.empty_like(y))
    objectives, exp_x = [bernoulli_nll(x, y, scratch)], None
    t, gap, converged, it = 1.0, float("inf"), False, 0
    steps, needed = LeadingSpectrum(), keep_needed(radius)
    grads = LeadingSpectrum(margin=32, tol=1e-12, values_only=True)
    for it in range(1, max_iter + 1):
        # x' - step * (sigmoid(x') - Y), in place
        expit(extra, out=point)
        point -= y
        point *= step
        np.subtract(extra, point, out=point)
        cand, cand_rank = project_with(point, radius, *steps.pairs(point, needed))
        value, exp_cand = _nll_keeping_exp(cand, y, scratch, exp_c)
        prev = x
        if value <= objectives[-1]:
            x, rank, exp_x = cand, cand_rank, exp_cand
        elif exp_x is exp_c:       # exp(c) overwrote the buffer that held exp(x)
            exp_x = None
        objectives.append(min(value, objectives[-1]))
        # adaptive restart (O'Donoghue and Candes 2015): momentum off when the step did not
        # lower F, or when it points against the last move, <x' - c, c - x_prev> > 0
        np.subtract(extra, cand, out=scratch)
        if value > objectives[-2] or np.vdot(scratch, cand) > np.vdot(scratch, prev):
            t = 1.0
        t_next = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        # x + (t / t_next)(c - x) + ((t - 1) / t_next)(x - prev), same order, in place
        np.subtract(cand, x, out=extra)
        extra *= t / t_next
        extra += x
        if prev is not x:          # else x - prev is 0 (adding it could only turn -0.0 to 0.0)
            momentum = np.subtract(x, prev, out=scratch)
            momentum *= (t - 1.0) / t_next
            extra += momentum
        t = t_next
        small = objectives[-2] - objectives[-1] <= tol * abs(objectives[-1])
        if small or it % 25 == 0:
            if grads.basis is None and steps.basis is not None:
                # -grad F shares its leading singular vectors with Z at the optimum (KKT), so
                # the iterates' basis starts the gradients' iteration (no first eigh)
                grads.basis = steps.basis
            gap = duality_gap(x, y, radius, grads, tol * abs(objectives[-1]), scratch,
                              exp_x)
            if gap <= tol * abs(objectives[-1]):
                converged = True
                break
    if not converged:
        gap = duality_gap(x, y, radius)
    return OneBitFit(x, float(radius), it, converged, objectives, gap, rank,
                     time.perf_counter() - start)
