"""Task vectors (function vectors) and the low-dimensional latent encoding of in-context tasks.

These are the tools for the "task vector" analyses (Hendel et al. 2023, *In-Context Learning Creates
Task Vectors*; Todd et al. 2024, *Function Vectors in Large Language Models*) and for the
"low-dimensional latent encoding" analysis of the in-context-recall papers. They take any
``HookedTransformer`` (a toy model from ``mechrecall.build_toy_model`` or a model from
``pretrained.load``)::

    vec = task_vector(model, icl_tokens, layer=1)                 # [d_model]: mean residual at the query
    out = inject_task_vector(model, zero_shot_tokens, vec, 1, targets=answers, coeff=1.0)
    out["mean_delta_logit"], out["mean_accuracy_injected"]
    geo = latent_geometry(residual_vectors(model, tokens, 1), task_labels)
    latent_geometry_figure(geo, task_labels, ["copy", "reverse"])

- **Extraction**: ``residual_vectors`` reads ``blocks.{layer}.hook_{site}`` at each prompt's query
  position; ``task_vector`` is its mean over the prompts.
- **Injection**: ``inject_task_vector`` adds ``coeff * vector`` at the same hook and query positions
  (``hooks.add_vector``, undone on exit) and compares the target token's probability, logit and
  argmax accuracy with the clean run; ``coeff_sweep`` tabulates that over coefficients.
- **Geometry**: ``pca``, ``silhouette_score`` and ``latent_geometry`` measure how well the residual
  vectors of prompts cluster by task (or latent variable), in the full space and in a few principal
  components; ``latent_geometry_figure`` draws the first two.

Query positions are an ``int`` (the same position in every prompt, negative from the end, ``-1`` =
last) or an int tensor ``[batch]`` (one per prompt, e.g. for prompts of different lengths padded on
the right). Everything is validated before the model runs; errors name the bad value and what was
expected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import torch
from jaxtyping import Float, Int

import hooks
from hooks.activations import check_hook_names
from mechrecall._tl import HookedTransformer, get_act_name
from mechrecall.checks import check_layer

__all__ = [
    "SITES",
    "class_cosine_matrix",
    "coeff_sweep",
    "cosine_silhouette_score",
    "inject_task_vector",
    "latent_geometry",
    "latent_geometry_figure",
    "pca",
    "query_positions",
    "replace_and_rank",
    "residual_vectors",
    "silhouette_score",
    "site_hook_name",
    "task_vector",
]

#: Residual-stream sites a task vector is read from / added to: ``blocks.{layer}.hook_{site}``.
SITES = ("resid_pre", "resid_mid", "resid_post", "attn_out", "mlp_out")

QueryPositions: TypeAlias = int | Int[torch.Tensor, " batch"]

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


# --------------------------------------------------------------------------------------- validation


def site_hook_name(model: HookedTransformer, layer: int, site: str) -> str:
    """``blocks.{layer}.hook_{site}``, after checking that the model has (and runs) that hook."""
    if site not in SITES:
        raise ValueError(f"site={site!r}; expected one of {SITES}")
    check_layer(model, layer)
    # TL creates hook_mlp_out in attention-only blocks too, but never calls it.
    if site in ("resid_mid", "mlp_out") and model.cfg.attn_only:
        raise ValueError(
            f"site={site!r}: an attention-only model has no MLPs; use 'resid_pre', 'resid_post' or 'attn_out'"
        )
    if site == "resid_mid" and model.cfg.parallel_attn_mlp:
        raise ValueError(
            "site='resid_mid': this model runs attention and MLP in parallel (e.g. GPT-NeoX), "
            "so it has no resid_mid; use 'resid_pre', 'resid_post', 'attn_out' or 'mlp_out'"
        )
    name = get_act_name(site, layer)
    check_hook_names(model, [name])
    return name


def query_positions(positions: QueryPositions, batch: int, seq_len: int) -> Int[torch.Tensor, " batch"]:
    """Each prompt's query position as non-negative ints ``[batch]``, from an int or an int tensor ``[batch]``."""
    if isinstance(positions, torch.Tensor) and positions.ndim == 0 and not positions.is_floating_point():
        positions = int(positions)
    if isinstance(positions, int) and not isinstance(positions, bool):
        index = torch.full((batch,), positions, dtype=torch.long)
    elif (
        isinstance(positions, torch.Tensor)
        and positions.shape == (batch,)
        and not positions.is_floating_point()
        and positions.dtype != torch.bool
    ):
        index = positions.detach().cpu().long()
    else:
        shown = (
            f"a tensor of shape {tuple(positions.shape)}, dtype {positions.dtype}"
            if isinstance(positions, torch.Tensor)
            else repr(positions)
        )
        raise ValueError(f"positions={shown}; expected an int or an int tensor [batch={batch}] of query positions")
    if index.numel() and (index.min() < -seq_len or index.max() >= seq_len):
        raise ValueError(
            f"positions {index.tolist()} out of range for prompts of length {seq_len}; "
            f"expected ints in [{-seq_len}, {seq_len - 1}]"
        )
    return index % seq_len


def _check_tokens(model: HookedTransformer, tokens: torch.Tensor) -> Int[torch.Tensor, "batch pos"]:
    if (
        not isinstance(tokens, torch.Tensor)
        or tokens.ndim != 2
        or tokens.is_floating_point()
        or tokens.dtype == torch.bool
    ):
        shown = (
            f"shape {tuple(tokens.shape)}, dtype {tokens.dtype}"
            if isinstance(tokens, torch.Tensor)
            else type(tokens).__name__
        )
        raise ValueError(f"tokens: got {shown}; expected an int tensor [batch, pos] of token ids")
    if tokens.numel() == 0:
        raise ValueError(f"tokens has shape {tuple(tokens.shape)}; expected at least one prompt and one position")
    if tokens.shape[1] > model.cfg.n_ctx:
        raise ValueError(f"tokens have {tokens.shape[1]} positions; the model's context is n_ctx={model.cfg.n_ctx}")
    if tokens.min() < 0 or tokens.max() >= model.cfg.d_vocab:
        raise ValueError(
            f"token ids in [{int(tokens.min())}, {int(tokens.max())}]; expected ids in [0, {model.cfg.d_vocab - 1}]"
        )
    return tokens.to(model.cfg.device)


def _check_vector(model: HookedTransformer, vector: torch.Tensor) -> Float[torch.Tensor, " d_model"]:
    vector = torch.as_tensor(vector)
    if vector.shape != (model.cfg.d_model,) or not vector.is_floating_point():
        raise ValueError(
            f"vector has shape {tuple(vector.shape)}, dtype {vector.dtype}; "
            f"expected a float tensor [d_model={model.cfg.d_model}]"
        )
    return vector


def _check_targets(model: HookedTransformer, targets: torch.Tensor, batch: int) -> Int[torch.Tensor, " batch"]:
    targets = torch.as_tensor(targets)
    if targets.shape != (batch,) or targets.is_floating_point() or targets.dtype == torch.bool:
        raise ValueError(
            f"targets has shape {tuple(targets.shape)}, dtype {targets.dtype}; "
            f"expected an int tensor [batch={batch}] of token ids"
        )
    if targets.min() < 0 or targets.max() >= model.cfg.d_vocab:
        raise ValueError(f"targets {targets.tolist()}; expected token ids in [0, {model.cfg.d_vocab - 1}]")
    return targets.long()


# --------------------------------------------------------------------------------------- extraction


@torch.no_grad()
def residual_vectors(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"],
    layer: int,
    *,
    site: str = "resid_pre",
    positions: QueryPositions = -1,
) -> Float[torch.Tensor, "batch d_model"]:
    """The activation at ``blocks.{layer}.hook_{site}`` at each prompt's query position.

    Args:
        model: any ``HookedTransformer``.
        tokens: int tensor ``[batch, pos]`` of prompts (right-padded if of different lengths).
        layer: in ``[0, n_layers)``.
        site: one of :data:`SITES` (``resid_mid``/``mlp_out`` need MLPs; ``resid_mid`` needs a
            sequential block, not GPT-NeoX's parallel one).
        positions: an int, or an int tensor ``[batch]`` of per-prompt query positions.

    Returns:
        ``[batch, d_model]``: row ``i`` is ``cache[hook][i, positions[i]]`` of
        ``model.run_with_cache(tokens)`` (the forward pass stops after ``layer``).
    """
    name = site_hook_name(model, layer, site)
    tokens = _check_tokens(model, tokens)
    index = query_positions(positions, *tokens.shape).to(tokens.device)
    _, cache = model.run_with_cache(tokens, names_filter=name, stop_at_layer=layer + 1)
    return cache[name][torch.arange(tokens.shape[0], device=tokens.device), index]


def task_vector(
    model: HookedTransformer, tokens: Int[torch.Tensor, "batch pos"], layer: int, **kwargs: Any
) -> Float[torch.Tensor, " d_model"]:
    """The task vector: the mean over prompts of ``residual_vectors(model, tokens, layer, **kwargs)``.

    With ``tokens`` in-context prompts of one task, this is the mean residual at the query position
    (Hendel et al.'s task vector at ``resid_pre``/``resid_post``; Todd et al.'s function vector is the
    analogous mean of selected heads' outputs). Returns ``[d_model]``.
    """
    return residual_vectors(model, tokens, layer, **kwargs).mean(0)


# --------------------------------------------------------------------------------------- injection


def _query_logits(
    model: HookedTransformer, tokens: torch.Tensor, index: torch.Tensor
) -> Float[torch.Tensor, "batch d_vocab"]:
    logits = model(tokens, return_type="logits")
    return logits[torch.arange(tokens.shape[0], device=logits.device), index.to(logits.device)]


def _target_stats(
    logits: Float[torch.Tensor, "batch d_vocab"], targets: Int[torch.Tensor, " batch"]
) -> dict[str, torch.Tensor]:
    targets = targets.to(logits.device)
    rows = torch.arange(len(targets), device=logits.device)
    return {
        "p_target": logits.softmax(-1)[rows, targets],
        "logit_target": logits[rows, targets],
        "accuracy": (logits.argmax(-1) == targets).to(logits.dtype),
    }


class _Injection:
    """Validated inputs of an injection, with the clean run done once (shared by the sweep)."""

    def __init__(self, model, tokens, vector, layer, targets, site, positions):
        self.name = site_hook_name(model, layer, site)
        self.tokens = _check_tokens(model, tokens)
        batch, seq_len = self.tokens.shape
        self.index = query_positions(positions, batch, seq_len)
        self.vector = _check_vector(model, vector)
        self.targets = _check_targets(model, targets, batch)
        self.mask = torch.zeros(batch, seq_len, dtype=torch.bool)
        self.mask[torch.arange(batch), self.index] = True
        self.model = model
        self.clean = _target_stats(_query_logits(model, self.tokens, self.index), self.targets)

    def run(self, coeff: float) -> dict[str, Any]:
        with hooks.add_vector(self.model, self.name, self.vector, coeff=coeff, positions=self.mask):
            injected = _target_stats(_query_logits(self.model, self.tokens, self.index), self.targets)
        out = {f"{k}_clean": v for k, v in self.clean.items()}
        out.update({f"{k}_injected": v for k, v in injected.items()})
        out["delta_logit"] = injected["logit_target"] - self.clean["logit_target"]
        out.update({f"mean_{k}": v.mean().item() for k, v in list(out.items())})
        return out


@torch.no_grad()
def inject_task_vector(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"],
    vector: Float[torch.Tensor, " d_model"],
    layer: int,
    *,
    targets: Int[torch.Tensor, " batch"],
    coeff: float = 1.0,
    site: str = "resid_pre",
    positions: QueryPositions = -1,
) -> dict[str, Any]:
    """Add ``coeff * vector`` at ``blocks.{layer}.hook_{site}`` at the query positions; compare with clean.

    Runs ``tokens`` clean and inside ``hooks.add_vector(...)`` (the vector is added at each prompt's
    query position only) and reads the logits ``[batch, d_vocab]`` at those same positions.

    Args:
        tokens: int tensor ``[batch, pos]``; vector: ``[d_model]`` (e.g. from :func:`task_vector`);
        layer, site, positions: as in :func:`residual_vectors`; targets: int tensor ``[batch]`` of
        target token ids; coeff: scale of the added vector.

    Returns:
        Per prompt, tensors ``[batch]``: ``p_target_clean``/``p_target_injected`` (softmax probability
        of the target), ``logit_target_clean``/``logit_target_injected``, ``delta_logit`` (injected -
        clean target logit), ``accuracy_clean``/``accuracy_injected`` (1.0 where argmax == target);
        and for each of those ``mean_<name>``, its mean over prompts as a float.
    """
    return _Injection(model, tokens, vector, layer, targets, site, positions).run(coeff)


@torch.no_grad()
def coeff_sweep(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"],
    vector: Float[torch.Tensor, " d_model"],
    layer: int,
    targets: Int[torch.Tensor, " batch"],
    coeffs: Sequence[float],
    *,
    site: str = "resid_pre",
    positions: QueryPositions = -1,
) -> pd.DataFrame:
    """:func:`inject_task_vector` for each of ``coeffs`` (the clean run done once), as a tidy table.

    Returns a pandas ``DataFrame`` with one row per coeff and columns ``coeff``, ``p_target``,
    ``logit_target``, ``accuracy`` (means over prompts of the injected run) and ``delta_logit``
    (mean injected - clean target logit).
    """
    import pandas as pd

    coeffs = [float(c) for c in coeffs]
    if not coeffs:
        raise ValueError("coeffs is empty; expected at least one coefficient")
    injection = _Injection(model, tokens, vector, layer, targets, site, positions)
    rows = []
    for coeff in coeffs:
        out = injection.run(coeff)
        rows.append(
            {
                "coeff": coeff,
                "p_target": out["mean_p_target_injected"],
                "logit_target": out["mean_logit_target_injected"],
                "accuracy": out["mean_accuracy_injected"],
                "delta_logit": out["mean_delta_logit"],
            }
        )
    return pd.DataFrame(rows, columns=["coeff", "p_target", "logit_target", "accuracy", "delta_logit"])


# --------------------------------------------------------------------------------------- geometry


def _check_points(points: torch.Tensor, min_n: int = 2) -> Float[torch.Tensor, "n d"]:
    points = torch.as_tensor(points)
    if points.ndim != 2 or points.shape[0] < min_n or points.shape[1] < 1:
        raise ValueError(f"points has shape {tuple(points.shape)}; expected [n, d] with n >= {min_n}, d >= 1")
    return points.detach().to(torch.float64 if points.dtype == torch.float64 else torch.float32)


def pca(
    points: Float[torch.Tensor, "n d"], n_components: int = 2
) -> tuple[Float[torch.Tensor, "n k"], Float[torch.Tensor, "k d"], Float[torch.Tensor, " k"]]:
    """Principal component analysis by ``torch.linalg.svd`` of the centred points.

    Returns ``(projected [n, k], components [k, d], explained_variance_ratio [k])``: the centred
    points' coordinates on the components, the orthonormal principal axes (largest variance first;
    sign fixed so that each component's largest-magnitude entry is positive) and the fraction of the
    total variance along each.
    """
    points = _check_points(points)
    k_max = min(points.shape)
    if isinstance(n_components, bool) or not isinstance(n_components, int) or not 1 <= n_components <= k_max:
        raise ValueError(f"n_components={n_components!r}; expected an int in [1, min(n, d)={k_max}]")
    centred = points - points.mean(0)
    _, s, vh = torch.linalg.svd(centred, full_matrices=False)
    variance = s**2
    if variance.sum() == 0:
        raise ValueError("all points are identical: no variance to explain")
    components = vh[:n_components]
    largest = components.gather(1, components.abs().argmax(1, keepdim=True))
    components = components * torch.where(largest < 0, -1.0, 1.0).to(components.dtype)
    return centred @ components.T, components, variance[:n_components] / variance.sum()


def _label_codes(labels: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(unique labels [K], codes [n] in [0, K))`` of a sequence / array / tensor of ``n`` labels."""
    array = np.asarray(labels.detach().cpu() if isinstance(labels, torch.Tensor) else labels)
    if array.shape != (n,):
        raise ValueError(f"labels has shape {array.shape}; expected one label per point, shape ({n},)")
    return np.unique(array, return_inverse=True)


def silhouette_score(points: Float[torch.Tensor, "n d"], labels: Any, metric: str = "euclidean") -> float:
    """Mean silhouette coefficient of a labelling, as scikit-learn's ``silhouette_score(points, labels, metric)``.

    For sample ``i``: ``a`` = mean distance to the other members of its cluster, ``b`` = smallest mean
    distance to the members of another cluster, ``s_i = (b - a) / max(a, b)`` (0 for a sample alone
    in its cluster, or where ``a = b = 0``). Returns the mean of ``s_i``: near 1 for compact,
    well-separated clusters, near 0 for labels unrelated to the geometry, negative for wrong ones.
    ``metric="cosine"`` (distance ``1 - cos(v, w)``, zero vectors at distance 1 from everything) is the
    clustering strength S̄ of the contextual-recall paper (Vasudeva et al., §3.4, Fig. 8).

    Args:
        points: ``[n, d]``. labels: ``n`` labels (ints, strings, ...) with ``2 <= #distinct <= n - 1``.
        metric: ``"euclidean"`` or ``"cosine"``.
    """
    points = _check_points(points).double()
    n = points.shape[0]
    unique, codes = _label_codes(labels, n)
    if not 2 <= len(unique) <= n - 1:
        raise ValueError(
            f"labels have {len(unique)} distinct value(s) for {n} points; expected 2 <= #labels <= n - 1 = {n - 1}"
        )
    distances = _distances(points, metric)  # [n, n]
    codes_t = torch.as_tensor(codes, device=points.device)
    member = torch.nn.functional.one_hot(codes_t, len(unique)).double()  # [n, K]
    sums = distances @ member  # [n, K]: summed distance from each point to each cluster
    sizes = member.sum(0)  # [K]
    own_size = sizes[codes_t]
    rows = torch.arange(n, device=points.device)
    a = sums[rows, codes_t] / (own_size - 1).clamp(min=1)  # self-distance is 0, so excluded
    b = (sums / sizes).masked_fill(member.bool(), float("inf")).min(1).values
    denom = torch.maximum(a, b)
    s = torch.where((own_size > 1) & (denom > 0), (b - a) / denom.clamp(min=torch.finfo(denom.dtype).tiny), 0.0)
    return s.mean().item()


def _distances(points: Float[torch.Tensor, "n d"], metric: str) -> Float[torch.Tensor, "n n"]:
    """Pairwise distances: Euclidean, or cosine ``1 - cos(v, w)`` (zero on the diagonal)."""
    if metric == "euclidean":
        return torch.cdist(points, points, compute_mode="donot_use_mm_for_euclid_dist")
    if metric == "cosine":
        unit = points / points.norm(dim=1, keepdim=True).clamp(min=1e-12)
        return (1 - unit @ unit.T).clamp(min=0).fill_diagonal_(0)
    raise ValueError(f"metric={metric!r}; expected 'euclidean' or 'cosine'")


def latent_geometry(vectors: Float[torch.Tensor, "n d_model"], labels: Any, n_components: int = 2) -> dict[str, Any]:
    """How well residual vectors (e.g. ``residual_vectors`` of prompts from several tasks) encode ``labels``.

    Returns a dict: ``projected`` ``[n, k]``, ``components`` ``[k, d_model]`` and
    ``explained_variance_ratio`` ``[k]`` from :func:`pca`; ``silhouette`` (float, in the full
    ``d_model`` space) and ``silhouette_pca`` (in the ``k`` principal components). A high silhouette
    in few components with a large explained variance is a low-dimensional latent encoding.
    """
    projected, components, ratio = pca(vectors, n_components)
    return {
        "projected": projected,
        "components": components,
        "explained_variance_ratio": ratio,
        "silhouette": silhouette_score(vectors, labels),
        "silhouette_pca": silhouette_score(projected, labels),
    }


def latent_geometry_figure(
    result: dict[str, Any], labels: Any, label_names: Mapping[Any, str] | Sequence[str] | None = None
) -> Figure:
    """A matplotlib ``Figure``: scatter of the first two principal components, coloured by label.

    ``result`` is :func:`latent_geometry`'s output (``n_components >= 2``); ``labels`` the same ``n``
    labels; ``label_names`` maps each label to a legend entry (a dict, or a sequence indexed by
    int labels); default ``str(label)``.
    """
    from analyses.plotting import subplots

    projected = result["projected"].detach().cpu()
    if projected.ndim != 2 or projected.shape[1] < 2:
        raise ValueError(
            f"result['projected'] has shape {tuple(projected.shape)}; "
            "expected [n, k] with k >= 2 (latent_geometry(..., n_components>=2))"
        )
    unique, codes = _label_codes(labels, projected.shape[0])
    ratio = result["explained_variance_ratio"]
    fig, ax = subplots(figsize=(4.5, 4))
    import matplotlib

    colours = matplotlib.colormaps.get_cmap("tab10" if len(unique) <= 10 else "tab20")
    for code, label in enumerate(unique):
        label = label.item()
        name = str(label) if label_names is None else label_names[label]
        points = projected[torch.as_tensor(codes == code)]
        ax.scatter(points[:, 0], points[:, 1], s=14, color=colours(code % colours.N), label=name, alpha=0.8)
    ax.set(
        xlabel=f"PC1 ({float(ratio[0]):.0%} of variance)",
        ylabel=f"PC2 ({float(ratio[1]):.0%} of variance)",
        title=f"silhouette {result['silhouette']:.2f} (full), {result['silhouette_pca']:.2f} (PCA)",
    )
    ax.legend(fontsize=7, markerscale=1.2)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------- cosine geometry, replacement


def cosine_silhouette_score(points: Float[torch.Tensor, "n d"], labels: Any) -> float:
    """:func:`silhouette_score` with the cosine distance (the contextual-recall paper's S̄, §3.4, Fig. 8)."""
    return silhouette_score(points, labels, metric="cosine")


def class_cosine_matrix(
    points: Float[torch.Tensor, "n d"], labels: Any
) -> tuple[Float[torch.Tensor, "K K"], np.ndarray]:
    """``C̄(k, k') = mean_{i in k, j in k'} cos(v_i, v_j)`` (diagonal blocks include ``i = j``), and the sorted
    labels ``[K]`` that index it: the inter/intra-task similarity matrix (Vasudeva et al., Figs. 8 and 17)."""
    points = _check_points(points, min_n=1).double()
    unique, codes = _label_codes(labels, points.shape[0])
    unit = points / points.norm(dim=1, keepdim=True).clamp(min=1e-12)
    member = torch.nn.functional.one_hot(torch.as_tensor(codes), len(unique)).double()  # [n, K]
    mean = member / member.sum(0, keepdim=True)
    return (mean.T @ (unit @ unit.T) @ mean).float(), unique


@torch.no_grad()
def replace_and_rank(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"],
    vectors: Float[torch.Tensor, "batch d_model"],
    layer: int,
    targets: Mapping[str, Int[torch.Tensor, " batch"]],
    *,
    site: str = "attn_out",
    positions: QueryPositions = -1,
) -> dict[str, Float[torch.Tensor, " batch"]]:
    """Replace ``blocks.{layer}.hook_{site}`` at each prompt's query position by ``vectors[i]`` and return,
    for each named target ``[batch]``, its rank under the patched next-token distribution
    (``1 + #{v : p(v) > p(target)}``): the steering measurement of Vasudeva et al. §3.4 (Fig. 8 right),
    with ``vectors`` e.g. ``(1 - β) v_ℓ + β v_ℓ'``."""
    name = site_hook_name(model, layer, site)
    tokens = _check_tokens(model, tokens)
    batch, seq_len = tokens.shape
    index = query_positions(positions, batch, seq_len)
    vectors = torch.as_tensor(vectors)
    if vectors.shape != (batch, model.cfg.d_model):
        raise ValueError(
            f"vectors has shape {tuple(vectors.shape)}; expected [batch={batch}, d_model={model.cfg.d_model}]"
        )
    mask = torch.zeros(batch, seq_len, dtype=torch.bool)
    mask[torch.arange(batch), index] = True
    value = vectors[:, None, :].to(tokens.device)
    with hooks.hooked(model, [(name, hooks.activations.replace_hook(value, mask))]):
        logits = _query_logits(model, tokens, index)
    out = {}
    rows = torch.arange(batch, device=logits.device)
    for key, target in targets.items():
        target = _check_targets(model, target, batch).to(logits.device)
        out[key] = 1 + (logits > logits[rows, target][:, None]).sum(-1).float()
    return out
