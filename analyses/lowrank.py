"""Low-rank truncation (LASER, Sharma et al. 2024; Chen et al. 2025 §3.8/§6): sweeps and spectra.

One intervention is ``(layer, matrix, rho)``: matrix ``(layer, matrix)`` (see ``hooks.weights`` for the
names and their HF/LASER equivalents) replaced by its best rank-``floor(rho * min(m, n))``
approximation, from an SVD exact to float64 rounding (``hooks.weights.svd``); ``rho = 0`` zeroes it.
``laser_sweep`` evaluates a user metric over layers x matrices x rhos, computing **one SVD per matrix** and
restoring the weights bit-exact after every evaluation (also when the metric raises). The single-intervention
context manager is ``hooks.low_rank``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch

from analyses.plotting import heatmap
from hooks import weights
from hooks.weights import MATRICES, edit_matrix, get_matrix, matrix_params, rank_for, truncation
from mechrecall._tl import HookedTransformer
from mechrecall.progress import progress_bar
from pretrained.loading import require_raw

#: ``metric(model)``, or with ``from_layer=True`` ``metric(model, layer)``: a float or a dict of floats.
Metric = Callable[..., "float | Mapping[str, float]"]
DEFAULT_RHOS = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass
class SweepResult:
    """A LASER sweep: ``table`` has one tidy row per ``(layer, matrix, head, rho, metric)``.

    Columns: ``layer, matrix, head`` (-1 unless ``attn_ov``), ``rho, rank, full_rank, metric, value``.
    ``baseline`` holds the unedited model's metrics; ``n_svd`` the number of SVDs computed.
    """

    table: pd.DataFrame
    baseline: dict[str, float]
    n_svd: int
    config: dict = field(default_factory=dict)

    def best(self, metric: str | None = None, *, maximize: bool = True) -> dict:
        """The row with the best ``metric`` (default: the only one) as a dict, with the baseline beside it."""
        metric = self._metric(metric)
        part = self.table[self.table["metric"] == metric]
        row = part.loc[part["value"].idxmax() if maximize else part["value"].idxmin()].to_dict()
        row["baseline"] = self.baseline[metric]
        return row

    def figure(self, metric: str | None = None, *, title: str | None = None) -> Figure:
        """Heatmap per matrix: layers x rho, coloured by ``metric``."""
        metric = self._metric(metric)
        part = self.table[self.table["metric"] == metric]
        return heatmap(
            part,
            row="layer",
            col="rho",
            panel="matrix",
            title=title or f"{metric} (baseline {self.baseline[metric]:.3g})",
        )

    def _metric(self, metric: str | None) -> str:
        names = list(self.baseline)
        if metric is None:
            if len(names) != 1:
                raise ValueError(f"several metrics {names}; pass metric=")
            return names[0]
        if metric not in self.baseline:
            raise ValueError(f"metric {metric!r} not in the sweep; it has {names}")
        return metric


def _as_metrics(value: Any) -> dict[str, float]:
    if isinstance(value, Mapping):
        return {str(k): float(v) for k, v in value.items()}
    return {"metric": float(value)}


def singular_values(model: HookedTransformer, layer: int, matrix: str, head: int | None = None) -> torch.Tensor:
    """Singular values (descending, float64) of ``(layer, matrix)``."""
    return weights.svd(get_matrix(model, layer, matrix, head)).S


@torch.no_grad()
def laser_sweep(
    model: HookedTransformer,
    metric: Metric,
    *,
    layers: Iterable[int] | None = None,
    matrices: Sequence[str] = ("mlp_in", "mlp_out"),
    rhos: Sequence[float] = DEFAULT_RHOS,
    heads: Iterable[int] | None = None,
    allow_processed: bool = False,
    dtype: torch.dtype = torch.float64,
    progress: bool = False,
    from_layer: bool = False,
) -> SweepResult:
    """Evaluate ``metric(model)`` with each matrix of ``layers x matrices`` truncated to each ``rho``.

    ``metric`` returns a float or a dict of floats (several metrics from one forward pass). ``from_layer=True``:
    it is called as ``metric(model, layer)``, ``layer`` the first block whose weights differ from the unedited
    model's (0 for the baseline), so that it may resume its forward pass there (``PromptBatch.probs`` in
    ``analyses.papers.distributional.pretrained``). ``progress``: a bar over the evaluations with an ETA (a line
    every half minute when stderr is not a terminal).
    ``heads`` selects the heads for ``attn_ov`` (default all). A rho whose rank is the full rank is not
    re-evaluated: its value is the baseline. Refuses a TL-processed pretrained model unless
    ``allow_processed=True`` (see ``hooks.weights``). All arguments are checked before any work.
    """
    layers = list(range(model.cfg.n_layers)) if layers is None else [int(l) for l in layers]
    matrices = list(matrices)
    rhos = [float(r) for r in rhos]
    bad = [m for m in matrices if m not in MATRICES]
    if bad or not matrices:
        raise ValueError(f"matrices={matrices!r}; expected a non-empty subset of {MATRICES}")
    if not rhos:
        raise ValueError("rhos is empty; expected kept-rank fractions in [0, 1]")
    for rho in rhos:
        rank_for(rho, (1, 1))
    heads = list(range(model.cfg.n_heads)) if heads is None else [int(h) for h in heads]
    targets = [(l, m, h) for l, m in itertools.product(layers, matrices) for h in (heads if m == "attn_ov" else [None])]
    for l, m, h in targets:
        matrix_params(model, l, m, h)  # validates layer, matrix, head
    if not allow_processed:
        require_raw(model, "laser_sweep")

    def evaluate(first: int) -> dict[str, float]:
        return _as_metrics(metric(model, first) if from_layer else metric(model))

    baseline = evaluate(0)
    rows, n_svd = [], 0
    bar = progress_bar(
        total=len(targets) * len(rhos), enabled=progress, desc="LASER sweep", unit="eval", log_every=30.0
    )
    for layer, matrix, head in targets:
        bar.set_postfix_str(f"SVD of layer {layer} {matrix}", refresh=True)
        W = get_matrix(model, layer, matrix, head).clone()
        factors = weights.svd(W, dtype)
        n_svd += 1
        full = min(W.shape)
        bar.set_postfix_str(f"layer {layer} {matrix}", refresh=False)
        for rho in rhos:
            k = rank_for(rho, tuple(W.shape))
            if k == full:
                values = baseline
            else:
                new, parts = truncation(factors, k, W)
                with edit_matrix(model, layer, matrix, new, head=head, factors=parts):
                    values = evaluate(layer)
            bar.update(1)
            for name, value in values.items():
                rows.append(
                    {
                        "layer": layer,
                        "matrix": matrix,
                        "head": -1 if head is None else head,
                        "rho": rho,
                        "rank": k,
                        "full_rank": full,
                        "metric": name,
                        "value": value,
                    }
                )
    bar.close()
    table = pd.DataFrame(rows, columns=["layer", "matrix", "head", "rho", "rank", "full_rank", "metric", "value"])
    config = {"layers": layers, "matrices": matrices, "rhos": rhos, "heads": heads, "svd_dtype": str(dtype)}
    return SweepResult(table=table, baseline=baseline, n_svd=n_svd, config=config)
