"""REML variance components of the crossed random-effects model
value ~ 1 + (1|item) + (1|rater), as lme4::lmer fits it (psych::ICC's default route).

The criterion is profiled over the residual variance and the intercept (lme4's formulation,
:class:`CrossedReml`) and minimised over the two relative SDs with L-BFGS-B on [0, inf)^2,
started from the best point of a small grid, then polished by a few Newton steps (L-BFGS-B
alone stops at ~1e-7 relative; the polish reaches ~1e-9, the noise floor of its
finite-difference gradient). Components on the boundary (zero) are allowed, as in lme4.
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
        weighted = sparse.diags(inv_big) @ self.incidence
        schur = np.diag(1.0 + ts * ts * self.count_small)
        if cross != 0.0:
            schur -= cross * cross * (self.incidence.T @ weighted).toarray()
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


def newton_polish(
    fun: Callable[[np.ndarray], float], x: np.ndarray, *, max_steps: int = 6
) -> tuple[np.ndarray, int]:
    """Newton steps on a smooth 2-parameter function with a central-difference gradient and
    Hessian. Parameters at 0 stay there (the REML deviance is even in each theta, so 0 is a
    stationary point in that coordinate). A step is kept only if it does not increase fun
    beyond rounding noise."""
    x = np.asarray(x, dtype=np.float64).copy()
    f0 = fun(x)
    taken = 0
    for _ in range(max_steps):
        free = np.flatnonzero(x > 1e-8)
        if free.size == 0:
            break
        h = 1e-5 * np.maximum(1.0, x)
        grad = np.zeros(free.size)
        hess = np.zeros((free.size, free.size))
        for a, i in enumerate(free):
            ei = np.zeros_like(x)
            ei[i] = h[i]
            fp, fm = fun(x + ei), fun(x - ei)
            grad[a] = (fp - fm) / (2 * h[i])
            hess[a, a] = (fp - 2 * f0 + fm) / h[i] ** 2
            for b in range(a):
                j = free[b]
                ej = np.zeros_like(x)
                ej[j] = h[j]
                hess[a, b] = hess[b, a] = (
                    fun(x + ei + ej) - fun(x + ei - ej) - fun(x - ei + ej) + fun(x - ei - ej)
                ) / (4 * h[i] * h[j])
        try:
            step = -np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)) or np.any(np.linalg.eigvalsh(hess) <= 0):
            break
        trial = x.copy()
        trial[free] = np.abs(x[free] + step)
        f_trial = fun(trial)
        # Near the optimum the function is flat to rounding: a correct step can come back a
        # few ulps higher, so only an increase beyond that noise rejects a step.
        if f_trial > f0 + 16 * np.finfo(np.float64).eps * max(1.0, abs(f0)):
            break
        x, f0 = trial, f_trial
        taken += 1
        if np.max(np.abs(step) / np.maximum(1.0, x[free])) < 1e-9:  # the gradient's noise floor
            break
    return x, taken


def _check_design(c: Codes) -> None:
    if len(c.items) < 2 or len(c.raters) < 2:
        raise ValueError("need at least 2 items and 2 raters")
    if min(len(c.items), len(c.raters)) > MAX_SMALLER_FACTOR:
        raise ValueError(
            "more than 3,000 items and 3,000 raters: the dense Schur complement used by this "
            "REML implementation would be too large"
        )


def _minimise(model: CrossedReml) -> tuple[np.ndarray, optimize.OptimizeResult, int]:
    """(theta at the optimum, the L-BFGS-B result, Newton polish steps taken)."""
    # Starting point: best of a coarse grid (the criterion can be flat near the boundary).
    grid = np.array([0.0, 0.25, 0.5, 1.0, 2.0, 4.0])
    best = min(((a, b) for a in grid for b in grid), key=lambda t: model.deviance(np.array(t)))
    res = optimize.minimize(
        model.deviance,
        np.array(best, dtype=float),
        method="L-BFGS-B",
        bounds=[(0.0, None), (0.0, None)],
        options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 500},
    )
    theta, n_newton = newton_polish(model.deviance, np.abs(res.x))
    return np.abs(theta), res, n_newton


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
    when there are more raters than items); about 50-100 evaluations per fit. Designs with
    s > 3,000 (a dense s x s Cholesky per evaluation) are refused.
    """
    c = codes_from_long(table, item, rater, value)
    _check_design(c)
    model = CrossedReml(c)
    if c.values.size < 3:
        raise ValueError("need at least 3 ratings")
    theta, res, n_newton = _minimise(model)
    dev, rss, mu = model.parts(theta)
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
        converged=bool(res.success or n_newton > 0),
        message=f"L-BFGS-B: {res.message}; Newton polish steps: {n_newton}",
    )
