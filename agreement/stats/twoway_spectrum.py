"""The spectrum of the two-way model's items matrix C = diag(n_i) - M diag(1/N_j) M' (M the
items x raters 0/1 design, n_i ratings of item i, N_j of rater j) that Henderson III and Wald's
interval read (:mod:`.icc_twoway_incomplete`), found in rater space instead of by an
items x items eigendecomposition (several seconds at 3,000 items, for each design of a report).

With B = M diag(N_j)^-1/2 (items x raters), C = D - B B', D = diag(n_i). Let P_t keep the items
rated t times and V = sum_t span(P_t B) (at most raters x distinct t dimensions). V is invariant
under C (D maps each P_t B into itself, B B' maps anything into span(B), inside V), and on its
orthogonal complement B' vanishes, so there C = D: every vector of span(P_t) orthogonal to
P_t B is an eigenvector with eigenvalue t. So the spectrum is that of C on V (a small
symmetric eigenproblem in an orthonormal basis of V) and the eigenvalue t once for each
dimension of span(P_t) outside P_t B. The items sum of squares along a repeated eigenvalue
t, w_t = |P_t c|^2 - |projection of P_t c on P_t B|^2 over t, is what Wald's pivot reads for the
whole eigenspace (its eigenvectors enter only as the sum of their w's)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Eigenvalues of C below this share of the largest are zero (the design's rank deficiency).
RANK_TOL = 1e-9


@dataclass(frozen=True)
class DesignSpectrum:
    """C's positive eigenvalues, each with the number of eigenvectors it stands for, and what
    :meth:`split` needs to divide a vector of item sums along them."""

    d: np.ndarray  # (g,) positive eigenvalues: the rater-space ones, then each repeated t
    count: np.ndarray  # (g,) eigenvectors per entry (1 for rater space, the multiplicity of t)
    blocks: tuple[np.ndarray, ...]  # items rated t times, per t
    bases: tuple[np.ndarray, ...]  # orthonormal basis of P_t B, per t (items of t x rank)
    vectors: np.ndarray  # (dim V, rater-space entries): their eigenvectors in the bases
    repeated: np.ndarray  # (blocks,) bool: the block's t is an entry (it has a multiplicity)

    @property
    def rank(self) -> int:
        """rank(C): the number of positive eigenvalues, with multiplicity."""
        return int(self.count.sum())

    @property
    def trace(self) -> float:
        return float((self.d * self.count).sum())

    def split(self, c: np.ndarray) -> np.ndarray:
        """(g,) the sum over each entry's eigenvectors v of (v'c)^2 / d: c's sum of squares
        along C's spectrum, weighted as Henderson III's R = c' C^+ c splits it."""
        parts = [u.T @ c[rows] for rows, u in zip(self.blocks, self.bases, strict=True)]
        inside = (self.vectors.T @ np.concatenate(parts)) ** 2
        outside = [
            max(float(c[rows] @ c[rows]) - float(p @ p), 0.0)
            for rows, p, rep in zip(self.blocks, parts, self.repeated, strict=True)
            if rep
        ]
        return np.concatenate([inside, np.asarray(outside)]) / self.d


def design_spectrum(m: np.ndarray) -> DesignSpectrum:
    """The positive spectrum of C for the items x raters 0/1 design ``m`` (every item and
    every rater with at least one rating), see the module docstring."""
    n_i, n_j = m.sum(axis=1), m.sum(axis=0)
    b = m / np.sqrt(n_j)
    levels = np.unique(n_i)
    blocks = tuple(np.flatnonzero(n_i == t) for t in levels)
    bases = tuple(_orthonormal_columns(b[rows]) for rows in blocks)
    # C on V in the basis of the blocks: diag(t) - G'G with G = B'Q
    g = np.hstack([b[rows].T @ u for rows, u in zip(blocks, bases, strict=True)])
    on_v = np.diag(
        np.concatenate([np.full(u.shape[1], t) for t, u in zip(levels, bases, strict=True)])
    )
    h, vectors = np.linalg.eigh(on_v - g.T @ g)
    multiplicity = np.array([rows.size - u.shape[1] for rows, u in zip(blocks, bases, strict=True)])
    repeated = multiplicity > 0
    top = max(float(h.max()) if h.size else 0.0, float(levels[repeated].max(initial=0.0)))
    keep = h > RANK_TOL * max(top, 1.0)
    return DesignSpectrum(
        d=np.concatenate([h[keep], levels[repeated]]),
        count=np.concatenate([np.ones(int(keep.sum()), dtype=np.int64), multiplicity[repeated]]),
        blocks=blocks,
        bases=bases,
        vectors=vectors[:, keep],
        repeated=repeated,
    )


def _orthonormal_columns(a: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the column space of ``a`` (its left singular vectors with a
    singular value above numpy's rank tolerance). A direction kept at rounding level is
    harmless: B' nearly vanishes on it, so C maps it to t times itself either way."""
    u, s, _ = np.linalg.svd(a, full_matrices=False)
    if not s.size or s[0] == 0:
        return u[:, :0]
    return u[:, s > s[0] * max(a.shape) * np.finfo(np.float64).eps]
