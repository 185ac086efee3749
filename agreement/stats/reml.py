"""REML variance components of the crossed random-effects model
value ~ 1 + (1|item) + (1|rater), as lme4::lmer fits it (psych::ICC's default route).

The criterion is profiled over the residual variance and the intercept (lme4's formulation,
:class:`CrossedReml`) and minimised over the two variance ratios psi = (s2_item / s2_e,
s2_rater / s2_e) >= 0. In lme4's relative SDs theta = sqrt(psi) the criterion is even, so
theta = 0 is a stationary point a gradient method never leaves (a small component came back
as exactly 0); in psi the slope at 0 says whether the optimum is on the boundary. L-BFGS-B
runs from several starts (one-way moment estimates, the best grid point, a small interior
point), the lowest deviance is Newton-polished in log psi, and ``converged`` is a check of
the optimality conditions at the result, not the optimiser's own flag. Components on the
boundary (zero) are allowed, as in lme4. All ratings equal: NaN components, not converged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import linalg, optimize, sparse

from .long_codes import Codes, codes_from_long

#: Above this many items and raters, the dense s x s Schur complement is too large.
MAX_SMALLER_FACTOR = 3000
#: Up to this many item x rater cells the incidence matrix is held dense.
DENSE_INCIDENCE_CELLS = 200_000


@dataclass(frozen=True)
class VarianceComponents:
    """REML estimates for value ~ 1 + (1|item) + (1|rater)."""

    item: float
    rater: float
    residual: float
    intercept: float
    reml_deviance: float  # -2 REML log-likelihood at the optimum (lme4's REML criterion)
    n_ratings: int
    n_items: int
    n_raters: int
    converged: bool
    message: str


class CrossedReml:
    """Profiled REML deviance of y = mu + a_item + b_rater + e as a function of the relative
    standard deviations theta = (sd_item / sd_e, sd_rater / sd_e), lme4's parameterisation
    (Bates, Maechler, Bolker & Walker 2015, J. Stat. Softw. 67(1), sec. 3.4):

        -2 l_R(theta) = (N - 1) (1 + log(2 pi rss / (N - 1))) + log|M| + log(1' H^-1 1)

    with H = I + Z Lambda Lambda' Z', M = I + Lambda' Z'Z Lambda and, by Woodbury,
    v' H^-1 u = v'u - (Lambda' Z'v)' M^-1 (Lambda' Z'u). Z'Z is block [[diag(n_i), N],
    [N', diag(m_r)]] with N the item x rater incidence, so M is solved by eliminating the
    diagonal block of the factor with more levels and factorising the dense Schur complement
    of the factor with fewer levels (size s = min(n_items, n_raters)).
    """

    def __init__(self, c: Codes) -> None:
        y = c.values
        self.mean = float(y.mean())
        self.scale = float(y.std()) or 1.0
        # Standardised response: theta near 1 and no loss of precision in the sums.
        self.y = (y - self.mean) / self.scale
        self.n = y.size
        n_items, n_raters = len(c.items), len(c.raters)
        # Put the factor with more levels first ("big"): its block of M is diagonal.
        self.swapped = n_raters > n_items
        big, small = (
            (c.rater_codes, c.item_codes) if self.swapped else (c.item_codes, c.rater_codes)
        )
        n_big, n_small = (n_raters, n_items) if self.swapped else (n_items, n_raters)
        self.big, self.small = big, small
        self.n_big = n_big
        self.n_small = n_small
        self.count_big = np.bincount(big, minlength=n_big).astype(np.float64)
        self.count_small = np.bincount(small, minlength=n_small).astype(np.float64)
        self.incidence = sparse.csr_matrix((np.ones(self.n), (big, small)), shape=(n_big, n_small))
        if n_big * n_small <= DENSE_INCIDENCE_CELLS:  # numpy beats scipy.sparse's overhead
            self.incidence = self.incidence.toarray()
        rhs = np.column_stack([self.y, np.ones(self.n)])
        self.zb = np.column_stack(
            [np.bincount(big, weights=rhs[:, j], minlength=n_big) for j in range(2)]
        )
        self.zs = np.column_stack(
            [np.bincount(small, weights=rhs[:, j], minlength=n_small) for j in range(2)]
        )
        self.vtv = rhs.T @ rhs

    def _theta_big_small(self, theta: np.ndarray) -> tuple[float, float]:
        t_item, t_rater = float(theta[0]), float(theta[1])
        return (t_rater, t_item) if self.swapped else (t_item, t_rater)

    def parts(self, theta: np.ndarray) -> tuple[float, float, float]:
        """(deviance, rss, 1'H^-1 y / 1'H^-1 1) at theta."""
        tb, ts = self._theta_big_small(theta)
        d_big = 1.0 + tb * tb * self.count_big
        inv_big = 1.0 / d_big
        cross = tb * ts
        schur = np.diag(1.0 + ts * ts * self.count_small)
        if cross != 0.0:
            inc = self.incidence
            gram = (
                inc.T @ (inc * inv_big[:, None])
                if isinstance(inc, np.ndarray)
                else ((inc.T @ (sparse.diags(inv_big) @ inc)).toarray())
            )
            schur -= cross * cross * gram
        chol = linalg.cho_factor(schur, lower=True, check_finite=False)
        logdet = float(np.sum(np.log(d_big)) + 2.0 * np.sum(np.log(np.diag(chol[0]))))
        f_big = tb * self.zb
        f_small = ts * self.zs
        x_small = linalg.cho_solve(
            chol,
            f_small - cross * (self.incidence.T @ (f_big * inv_big[:, None])),
            check_finite=False,
        )
        x_big = (f_big - cross * (self.incidence @ x_small)) * inv_big[:, None]
        q = self.vtv - (f_big.T @ x_big + f_small.T @ x_small)
        q_yy, q_1y, q_11 = q[0, 0], q[1, 0], q[1, 1]
        rss = max(q_yy - q_1y * q_1y / q_11, 1e-300)
        dof = self.n - 1
        dev = dof * (1.0 + np.log(2.0 * np.pi * rss / dof)) + logdet + np.log(q_11)
        return float(dev), float(rss), float(q_1y / q_11)

    def deviance(self, theta: np.ndarray) -> float:
        return self.parts(theta)[0]


def _log_derivatives(
    fun: Callable[[np.ndarray], float], x: np.ndarray, free: np.ndarray, f0: float, h: float
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient (fourth-order central differences: its truncation error, not rounding, would
    otherwise set where the polish stops) and Hessian (second-order) of u -> fun(exp(u)) over
    the ``free`` coordinates of x (all > 0), at u = log x, with step h in u."""

    def at(shift: np.ndarray) -> float:
        y = x.copy()
        y[free] = x[free] * np.exp(shift)
        return fun(y)

    m = free.size
    grad, hess = np.zeros(m), np.zeros((m, m))
    for a in range(m):
        ea = np.zeros(m)
        ea[a] = h
        fp, fm = at(ea), at(-ea)
        grad[a] = (8 * (fp - fm) - at(2 * ea) + at(-2 * ea)) / (12 * h)
        hess[a, a] = (fp - 2 * f0 + fm) / h**2
        for b in range(a):
            eb = np.zeros(m)
            eb[b] = h
            hess[a, b] = hess[b, a] = (at(ea + eb) - at(ea - eb) - at(eb - ea) + at(-ea - eb)) / (
                4 * h * h
            )
    return grad, hess


def newton_polish(
    fun: Callable[[np.ndarray], float], x: np.ndarray, *, max_steps: int = 8
) -> tuple[np.ndarray, int]:
    """Newton steps on a smooth function of a few non-negative parameters, taken in the logs of
    the positive ones (a small component and a large one are then polished to the same
    relative precision); parameters at 0 stay there (the bounded optimiser decides those). A
    step is kept only if it does not increase fun beyond rounding noise."""
    x = np.asarray(x, dtype=np.float64).copy()
    f0 = fun(x)
    taken = 0
    noise = 16 * np.finfo(np.float64).eps
    for _ in range(max_steps):
        free = np.flatnonzero(x > 1e-12)
        if free.size == 0:
            break
        grad, hess = _log_derivatives(fun, x, free, f0, 1e-3)
        if not np.all(np.isfinite(hess)) or np.any(np.linalg.eigvalsh(hess) <= 0):
            break
        step = np.clip(-np.linalg.solve(hess, grad), -1.0, 1.0)
        trial = x.copy()
        trial[free] = x[free] * np.exp(step)
        f_trial = fun(trial)
        # Near the optimum the function is flat to rounding: a correct step can come back a
        # few ulps higher, so only an increase beyond that noise rejects a step.
        if not f_trial <= f0 + noise * max(1.0, abs(f0)):
            break
        x, f0 = trial, f_trial
        taken += 1
        if np.max(np.abs(step)) < 1e-8:
            break
    return x, taken


def stationary(fun: Callable[[np.ndarray], float], x: np.ndarray) -> tuple[bool, str]:
    """Whether x >= 0 is a minimum of fun over the non-negative orthant to working precision:
    slope in the log of each positive parameter below 1e-3 (deviance units per e-fold), and
    no descent into the interior from a parameter at 0. Returns (ok, what was measured)."""
    x = np.asarray(x, dtype=np.float64)
    f0 = fun(x)
    free = np.flatnonzero(x > 1e-12)
    slopes = []
    if free.size:
        grad, _ = _log_derivatives(fun, x, free, f0, 1e-3)
        slopes = [float(abs(g)) for g in grad]
    ok = all(g < 1e-3 for g in slopes)
    edge = []
    for i in np.flatnonzero(x <= 1e-12):
        y = x.copy()
        y[i] = 1e-5
        edge.append((fun(y) - f0) / 1e-5)
    ok = ok and all(e > -1e-3 for e in edge)
    return (
        ok,
        f"log-slopes {', '.join(f'{g:.1e}' for g in slopes) or '-'}; "
        f"slopes at 0 {', '.join(f'{e:.1e}' for e in edge) or '-'}",
    )


def _check_design(c: Codes) -> None:
    if len(c.items) < 2 or len(c.raters) < 2:
        raise ValueError("need at least 2 items and 2 raters")
    if min(len(c.items), len(c.raters)) > MAX_SMALLER_FACTOR:
        raise ValueError(
            "more than 3,000 items and 3,000 raters: the dense Schur complement used by this "
            "REML implementation would be too large"
        )


def _one_way_component(codes: np.ndarray, y: np.ndarray) -> float:
    """Moment (one-way ANOVA) estimate of the variance between the levels of one factor,
    ignoring the other, floored at 0: (MSB - MSW) / n0 with n0 the unbalanced group size.
    ``codes`` are factorised, so every level 0..G-1 occurs."""
    counts = np.bincount(codes).astype(np.float64)
    groups, n = counts.size, y.size
    if groups < 2 or n <= groups:
        return 0.0
    means = np.bincount(codes, weights=y) / counts
    ssb = float(np.sum(counts * (means - y.mean()) ** 2))
    ssw = float(np.sum((y - means[codes]) ** 2))
    n0 = (n - np.sum(counts**2) / n) / (groups - 1)
    return max((ssb / (groups - 1) - ssw / (n - groups)) / n0, 0.0)


def moment_start(model: CrossedReml) -> np.ndarray:
    """Variance ratios (item / residual, rater / residual) from one-way moment estimates of
    each factor, a start close to the optimum on near-balanced designs."""
    s_big = _one_way_component(model.big, model.y)
    s_small = _one_way_component(model.small, model.y)
    total = float(model.y.var())
    s_e = max(total - s_big - s_small, 0.05 * total)
    s_item, s_rater = (s_small, s_big) if model.swapped else (s_big, s_small)
    return np.array([s_item / s_e, s_rater / s_e])


def _ratio_deviance(model: CrossedReml) -> Callable[[np.ndarray], float]:
    """The deviance as a function of the variance ratios psi = theta^2 >= 0. In theta the
    deviance is even, so theta = 0 is always a stationary point and a gradient method started
    there never leaves it; in psi the slope at 0 is generally not zero."""
    return lambda psi: model.deviance(np.sqrt(np.maximum(psi, 0.0)))


def _minimise(model: CrossedReml) -> tuple[np.ndarray, optimize.OptimizeResult, int]:
    """(theta at the optimum, the L-BFGS-B result, Newton polish steps taken). L-BFGS-B on
    the variance ratios, bounded below by 0, runs from several starts (the one-way moment
    estimates, the best point of a coarse grid, a small interior point); the run with the
    lowest deviance is Newton-polished."""
    fun = _ratio_deviance(model)
    grid = np.array([0.0, 0.01, 0.1, 0.5, 1.0, 4.0, 16.0])
    grid_best = min(((a, b) for a in grid for b in grid), key=lambda t: fun(np.array(t)))
    moments = moment_start(model)
    # L-BFGS-B works on psi / scale: ratios of very different sizes would slow it down.
    scale = np.maximum(moments, 1.0)
    starts = [moments, np.array(grid_best, dtype=float), np.array([0.05, 0.05])]
    runs = []
    for start in starts:
        res = optimize.minimize(
            lambda v: fun(v * scale),
            start / scale,
            method="L-BFGS-B",
            bounds=[(0.0, None), (0.0, None)],
            options={"ftol": 1e-13, "gtol": 1e-9, "maxiter": 500},
        )
        res.x = res.x * scale
        runs.append(res)
    best = min(runs, key=lambda r: r.fun)
    psi, n_newton = newton_polish(fun, np.maximum(best.x, 0.0))
    psi[psi <= 1e-12] = 0.0  # below the optimiser's resolution: on the boundary
    return np.sqrt(psi), best, n_newton


def reml_crossed_components(
    table: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    value: str = "value",
) -> VarianceComponents:
    """REML variance components of value ~ 1 + (1|item) + (1|rater) (see the module
    docstring).

    Memory O(N + s^2) and time per evaluation O(N + sum_i c_i^2 + s^3), where
    s = min(n_items, n_raters) and c_i is the number of raters of item i (or items of rater i
    when there are more raters than items); a few hundred evaluations per fit (three starts).
    Designs with s > 3,000 (a dense s x s Cholesky per evaluation) are refused.
    """
    c = codes_from_long(table, item, rater, value)
    _check_design(c)
    if c.values.size < 3:
        raise ValueError("need at least 3 ratings")
    if np.ptp(c.values) == 0:
        return _not_identifiable(c)
    model = CrossedReml(c)
    theta, res, n_newton = _minimise(model)
    dev, rss, mu = model.parts(theta)
    ok, measured = stationary(_ratio_deviance(model), theta**2)
    s2_e = rss / (model.n - 1) * model.scale**2
    return VarianceComponents(
        item=float(theta[0] ** 2 * s2_e),
        rater=float(theta[1] ** 2 * s2_e),
        residual=float(s2_e),
        intercept=float(model.mean + mu * model.scale),
        # Deviance of the standardised response; add the Jacobian term for the raw scale.
        reml_deviance=float(dev + 2 * (model.n - 1) * np.log(model.scale)),
        n_ratings=int(model.n),
        n_items=len(c.items),
        n_raters=len(c.raters),
        converged=ok,
        message=(
            f"{'converged' if ok else 'NOT at a minimum'}: {measured}; "
            f"L-BFGS-B: {res.message}; Newton polish steps: {n_newton}"
        ),
    )


def _not_identifiable(c: Codes) -> VarianceComponents:
    """Every rating equal: no variance to split, so every component (and any ICC) is NaN."""
    nan = float("nan")
    return VarianceComponents(
        item=nan,
        rater=nan,
        residual=nan,
        intercept=float(c.values[0]),
        reml_deviance=nan,
        n_ratings=int(c.values.size),
        n_items=len(c.items),
        n_raters=len(c.raters),
        converged=False,
        message=(
            f"all {c.values.size} ratings equal {c.values[0] + 0.0:g}: the variance components "
            "are not identifiable (NaN)"
        ),
    )
