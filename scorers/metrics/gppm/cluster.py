"""GPPM's clustering estimator (GPPM paper App. C, Algorithm 2; the authors' new_clustering.py).

Judgments of past reports are embedded and clustered (K-means, 30 clusters, seed 100 in the
authors' code); a report becomes the binary vector "has a judgment in cluster c". From pairs of
reports of the same item, each cluster gets a 2x2 joint table p_{a,b}(c) of (agent has c, peer has
c); the score of agent report x_i against peer report x_j is

    Σ_c log p_{x_i[c], x_j[c]}(c) / (p_{x_i[c], 0}(c) + p_{x_i[c], 1}(c))
      = Σ_c log P(x_j[c] | x_i[c])

(in nats). As in the authors' code the joint is symmetrised: p_00 and p_11 are the frequencies of
"both absent" and "both present", each off-diagonal cell half of the rest. Unlike their code
(where an empty cell gives −inf) every cell gets ½ pseudo-count (add-½ smoothing), so the table of
N unordered pairs with counts n_00, n_11 and n_mixed is::

    p_00 = (n_00 + ½) / (N + 2),  p_11 = (n_11 + ½) / (N + 2),
    p_01 = p_10 = (n_mixed + 1) / (2 (N + 2)).

The embedder is this project's offline sentence embedder (MiniLM), not the authors' fine-tuned
ClusterLLM: a documented, non-faithful substitute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

__all__ = ["ClusterModel", "ClusterTable", "fit_cluster_model", "fit_clusters", "report_vector"]

N_CLUSTERS = 30
SEED = 100


@dataclass(frozen=True)
class ClusterTable:
    """Per cluster, the smoothed symmetric joint table ``joint[c] = [[p00, p01], [p10, p11]]``."""

    joint: np.ndarray
    pairs: int

    @classmethod
    def from_reports(cls, items: Sequence[Sequence[Sequence[bool]]]) -> ClusterTable:
        """``items``: per item, its reports as binary cluster vectors (all the same length).
        Every unordered pair of reports of one item counts once."""
        vectors = [np.asarray(v, dtype=bool) for reports in items for v in reports]
        if not vectors:
            raise ValueError("the clustering estimator needs at least one report")
        width = len(vectors[0])
        n00 = np.zeros(width)
        n11 = np.zeros(width)
        mixed = np.zeros(width)
        pairs = 0
        for reports in items:
            for a, b in combinations([np.asarray(v, dtype=bool) for v in reports], 2):
                if len(a) != width or len(b) != width:
                    raise ValueError("every report vector must have one entry per cluster")
                n00 += ~a & ~b
                n11 += a & b
                mixed += a ^ b
                pairs += 1
        if pairs == 0:
            raise ValueError("the clustering estimator needs an item with two reports")
        total = pairs + 2.0
        p00 = (n00 + 0.5) / total
        p11 = (n11 + 0.5) / total
        p01 = (mixed + 1.0) / (2.0 * total)
        joint = np.stack([np.stack([p00, p01], -1), np.stack([p01, p11], -1)], -2)
        return cls(joint=joint, pairs=pairs)

    def score(self, agent: Sequence[bool], peer: Sequence[bool]) -> float:
        """Σ_c log P(peer[c] | agent[c]) in nats."""
        a = np.asarray(agent, dtype=int)
        b = np.asarray(peer, dtype=int)
        if a.shape != b.shape or a.shape[0] != self.joint.shape[0]:
            raise ValueError(f"report vectors must have {self.joint.shape[0]} entries")
        total = 0.0
        for c in range(len(a)):
            row = self.joint[c, a[c]]
            total += math.log(row[b[c]] / row.sum())
        return total


def report_vector(labels: Sequence[int], n_clusters: int) -> list[bool]:
    """The binary vector of a report whose judgments fall in clusters ``labels``."""
    present = [False] * n_clusters
    for label in labels:
        present[int(label)] = True
    return present


def fit_clusters(
    embeddings: np.ndarray, *, n_clusters: int = N_CLUSTERS, seed: int = SEED
) -> object:
    """MiniBatch K-means over judgment embeddings (App. C; the authors' settings). Returns the
    fitted scikit-learn model (``predict`` gives each new judgment's cluster)."""
    from sklearn.cluster import MiniBatchKMeans

    if len(embeddings) < n_clusters:
        raise ValueError(f"{len(embeddings)} judgments cannot make {n_clusters} clusters")
    return MiniBatchKMeans(n_clusters=n_clusters, random_state=seed, n_init=3).fit(embeddings)


@dataclass(frozen=True)
class ClusterModel:
    """A fitted clustering estimator: the K-means model, the joint tables and what it was fit on."""

    kmeans: object
    table: ClusterTable
    n_clusters: int
    judgments: int
    embedder: str
    source: str

    def vector(self, embeddings: np.ndarray) -> list[bool]:
        """A report's binary cluster vector from its judgments' embeddings."""
        if len(embeddings) == 0:
            return [False] * self.n_clusters
        return report_vector(self.kmeans.predict(embeddings), self.n_clusters)


def fit_cluster_model(
    reports_per_item: Sequence[Sequence[Sequence[str]]],
    encode,
    *,
    embedder: str,
    source: str,
    n_clusters: int = N_CLUSTERS,
    seed: int = SEED,
) -> ClusterModel:
    """Fit on ``reports_per_item`` (per item, its reports, each a list of judgment lines):
    embed every judgment with ``encode`` (texts -> rows), cluster, and tabulate same-item pairs."""
    lines = [line for reports in reports_per_item for report in reports for line in report]
    if not lines:
        raise ValueError(f"no judgment lines to fit the clustering estimator on ({source})")
    embeddings = np.asarray(encode(lines))
    kmeans = fit_clusters(embeddings, n_clusters=n_clusters, seed=seed)
    labels = iter(kmeans.predict(embeddings))
    items = []
    for reports in reports_per_item:
        items.append(
            [report_vector([next(labels) for _ in report], n_clusters) for report in reports]
        )
    return ClusterModel(
        kmeans, ClusterTable.from_reports(items), n_clusters, len(lines), embedder, source
    )
