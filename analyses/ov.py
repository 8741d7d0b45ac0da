"""OV projections: what a head writes, read out in vocabulary space.

- ``full_ov_circuit``: the full OV circuit ``W_E W_V^h W_O^h W_U`` (Elhage et al. 2021), a
  ``[d_vocab, d_vocab_out]`` ``FactoredMatrix`` that is never materialised — optionally composed through
  earlier heads' OV circuits (virtual heads ``W_E OV_1 OV_2 W_U``) or read from arbitrary residual
  directions instead of ``W_E``.
- ``top_tokens`` / ``top_tokens_table``: the top-k output tokens per input token (row-chunked).
- ``self_mapping_fraction``: the fraction of input tokens mapped to themselves (a copying head: ≈ 1).
- ``project_to_vocab`` / ``head_logit_lens``: a residual vector's direct effect on the logits, e.g. a
  head's output at chosen positions (through the final LayerNorm's scale, as ``ActivationCache``'s
  ``apply_ln_to_stack`` does).

LayerNorms inside the network are ignored by the weight-based circuits (exact for toy models without
normalization; for pretrained models prefer ``processing="tl"``, where LN weights are folded in).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch
from jaxtyping import Float, Int

from hooks.positions import Positions, position_mask
from mechrecall._tl import FactoredMatrix, HookedTransformer, get_act_name
from mechrecall.checks import check_head


def _check_head(model: HookedTransformer, layer: int, head: int) -> None:
    check_head(model, layer, head)


def ov_circuit(model: HookedTransformer, layer: int, head: int) -> FactoredMatrix:
    """``W_V^h W_O^h``: ``[d_model, d_model]``, rank <= d_head."""
    _check_head(model, layer, head)
    attn = model.blocks[layer].attn
    return FactoredMatrix(attn.W_V[head], attn.W_O[head])


def full_ov_circuit(
    model: HookedTransformer,
    layer: int | None = None,
    head: int | None = None,
    *,
    through: Sequence[tuple[int, int]] = (),
    source: Float[torch.Tensor, "n d_model"] | None = None,
) -> FactoredMatrix:
    """The full OV circuit ``source · OV_through... · OV^{layer,head} · W_U``.

    ``layer = head = None``: every head at once, ``[n_layers, n_heads, d_vocab, d_vocab_out]``.
    ``through``: earlier heads ``[(l1, h1), (l2, h2), ...]`` (strictly increasing layers, all before
    ``layer``) whose OV circuits are applied first — the virtual path ``W_E OV_1 OV_2 ... W_U``.
    ``source``: residual directions ``[n, d_model]`` used instead of ``W_E`` (rows of the result).
    """
    W_in = model.W_E if source is None else torch.as_tensor(source)
    if W_in.ndim != 2 or W_in.shape[-1] != model.cfg.d_model:
        raise ValueError(f"source has shape {tuple(W_in.shape)}; expected [n, d_model={model.cfg.d_model}]")
    if layer is None and head is None:
        if through:
            raise ValueError("through= needs a single (layer, head)")
        return W_in @ model.OV @ model.W_U
    if layer is None or head is None:
        raise ValueError(f"give both layer and head (got layer={layer}, head={head}), or neither for every head")
    _check_head(model, layer, head)
    circuit = None
    last = -1
    for l, h in [*list(through), (layer, head)]:
        _check_head(model, l, h)
        if l <= last:
            raise ValueError(f"through={list(through)} must go through strictly increasing layers before {layer}")
        last = l
        circuit = ov_circuit(model, l, h) if circuit is None else circuit @ ov_circuit(model, l, h)
    return W_in @ circuit @ model.W_U


def _rows(circuit: FactoredMatrix, inputs: Sequence[int] | torch.Tensor | None) -> torch.Tensor:
    if circuit.ndim != 2:
        raise ValueError(f"expected one head's circuit (2-D), got shape {tuple(circuit.shape)}")
    n = circuit.shape[0]
    rows = torch.arange(n) if inputs is None else torch.as_tensor(inputs, dtype=torch.long).flatten()
    if rows.numel() and (rows.min() < 0 or rows.max() >= n):
        raise ValueError(f"input ids must be in [0, {n}); got {rows.min().item()}..{rows.max().item()}")
    return rows


@torch.no_grad()
def top_tokens(
    circuit: FactoredMatrix, k: int = 5, inputs: Sequence[int] | torch.Tensor | None = None, *, chunk: int = 2048
) -> tuple[Float[torch.Tensor, "n k"], Int[torch.Tensor, "n k"]]:
    """Top-``k`` output tokens (columns) of a 2-D circuit for each input token (row), ``inputs`` default all.

    Computed ``chunk`` rows at a time, so a ``[50k, 50k]`` circuit never exists in memory.
    """
    rows = _rows(circuit, inputs)
    if not 1 <= k <= circuit.shape[1]:
        raise ValueError(f"k={k!r}; expected 1..{circuit.shape[1]}")
    values, indices = [], []
    for start in range(0, rows.numel(), chunk):
        block = circuit.A[rows[start : start + chunk].to(circuit.A.device)] @ circuit.B
        v, i = block.topk(k, dim=-1)
        values.append(v.cpu())
        indices.append(i.cpu())
    return torch.cat(values), torch.cat(indices)


def self_mapping_fraction(
    circuit: FactoredMatrix, k: int = 1, inputs: Sequence[int] | torch.Tensor | None = None
) -> float:
    """Fraction of input tokens ``i`` whose own id is among the top-``k`` outputs of row ``i``."""
    rows = _rows(circuit, inputs)
    _, indices = top_tokens(circuit, k, rows)
    return (indices == rows[:, None]).any(-1).float().mean().item()


def token_strings(model: HookedTransformer, ids: Sequence[int]) -> list[str]:
    """Decoded tokens when the model has a tokenizer, else the ids as strings."""
    if getattr(model, "tokenizer", None) is None:
        return [str(int(i)) for i in ids]
    return [model.tokenizer.decode([int(i)]) for i in ids]


def top_tokens_table(
    model: HookedTransformer, circuit: FactoredMatrix, k: int = 5, inputs: Sequence[int] | None = None
) -> pd.DataFrame:
    """Tidy ``(input_id, input, rank, output_id, output, value)`` rows of ``top_tokens``."""
    rows = _rows(circuit, inputs)
    values, indices = top_tokens(circuit, k, rows)
    in_str = token_strings(model, rows.tolist())
    out_str = token_strings(model, indices.flatten().tolist())
    records = []
    for r, i in enumerate(rows.tolist()):
        for rank in range(k):
            records.append(
                {
                    "input_id": i,
                    "input": in_str[r],
                    "rank": rank + 1,
                    "output_id": int(indices[r, rank]),
                    "output": out_str[r * k + rank],
                    "value": float(values[r, rank]),
                }
            )
    return pd.DataFrame(records)


def project_to_vocab(
    model: HookedTransformer, vectors: Float[torch.Tensor, "... d_model"], *, bias: bool = False
) -> Float[torch.Tensor, "... d_vocab_out"]:
    """``vectors @ W_U`` (``+ b_U`` if ``bias``): a residual direction's direct logit effect."""
    vectors = torch.as_tensor(vectors)
    if vectors.shape[-1] != model.cfg.d_model:
        raise ValueError(f"vectors end in {vectors.shape[-1]}; expected d_model={model.cfg.d_model}")
    out = vectors.to(model.W_U.dtype) @ model.W_U
    return out + model.b_U if bias else out


@torch.no_grad()
def head_logit_lens(
    model: HookedTransformer,
    tokens: Int[torch.Tensor, "batch pos"],
    layer: int,
    head: int,
    positions: Positions = -1,
    *,
    apply_ln: bool = True,
) -> Float[torch.Tensor, "n d_vocab_out"]:
    """Direct logit effect of head ``(layer, head)``'s output ``z^h W_O^h`` at ``positions``.

    Returns one row per selected ``(prompt, position)`` (row-major order). With ``apply_ln`` and a
    final LayerNorm, the output is centred (LN) and divided by the final LN's scale at that position,
    and multiplied by its weight when the model is unprocessed — the linear part of ``ln_final``.
    """
    _check_head(model, layer, head)
    names = [get_act_name("z", layer)]
    has_ln = apply_ln and "ln_final.hook_scale" in model.hook_dict
    if has_ln:
        names.append("ln_final.hook_scale")
    _, cache = model.run_with_cache(tokens, names_filter=names)
    z = cache[names[0]][:, :, head]  # [batch, pos, d_head]
    out = z @ model.blocks[layer].attn.W_O[head]  # [batch, pos, d_model]
    mask = position_mask(positions, out.shape[0], out.shape[1], out.device)
    if has_ln:
        if model.cfg.normalization_type in ("LN", "LNPre"):
            out = out - out.mean(-1, keepdim=True)
        out = out / cache["ln_final.hook_scale"]
        w = getattr(model.ln_final, "w", None)
        if w is not None:
            out = out * w
    return project_to_vocab(model, out[mask])


# ---------------------------------------------------------------------- interpretable basis (Fig 2 of Musat et al.)


class NotApplicableError(ValueError):
    """A weight-based analysis that does not apply to this model (e.g. rotary positions: no ``W_pos``)."""


def interpretable_basis(
    model: HookedTransformer,
    *,
    heads: Sequence[int] | None = None,
    tokens: Sequence[int] | None = None,
    positions: int | None = None,
) -> list[tuple[str, torch.Tensor]]:
    """Residual directions of an attention-only model, layer by layer: ``[(name, [n, d_model]), ...]``.

    Layer 0 reads ``E`` (rows of ``W_E``, optionally only ``tokens``) and ``P`` (the first ``positions``
    rows of ``W_pos``); every head ``h_l`` (``heads[l]``, default 0) appends the images of all earlier
    directions under its OV circuit, ``S_{l+1} = [S_l; S_l W_V W_O]``, so the residual before layer ``l``
    lies in the span of ``S_l`` (plus bias directions, ignored here). Names: ``E, P, OV0·E, OV0·P,
    OV1·E, ...`` (Musat et al., §2.2 / Fig 2: ``[E, P, W_O¹W_V¹E, W_O¹W_V¹P, ...]``).

    Raises :class:`NotApplicableError` for models without learned absolute positions (rotary / no
    ``W_pos``): the P block does not exist there; use the activation-based ``analyses.heads`` scores.
    """
    if model.cfg.positional_embedding_type != "standard":
        raise NotApplicableError(
            f"the interpretable [E, P, OV·E, OV·P] basis needs learned absolute positions (W_pos); this model uses "
            f"{model.cfg.positional_embedding_type!r} positions. Use the activation-based scores of analyses.heads."
        )
    heads = [0] * model.cfg.n_layers if heads is None else list(heads)
    if len(heads) != model.cfg.n_layers:
        raise ValueError(f"heads={heads}; expected one head index per layer ({model.cfg.n_layers})")
    E = model.W_E if tokens is None else model.W_E[torch.as_tensor(list(tokens), dtype=torch.long)]
    n_pos = model.cfg.n_ctx if positions is None else positions
    if not 1 <= n_pos <= model.cfg.n_ctx:
        raise ValueError(f"positions={positions!r}; expected 1..n_ctx={model.cfg.n_ctx}")
    basis = [("E", E.detach()), ("P", model.W_pos[:n_pos].detach())]
    for layer, head in enumerate(heads):
        _check_head(model, layer, head)
        ov = ov_circuit(model, layer, head)
        basis = basis + [(f"OV{layer}·{name}", (block @ ov.A) @ ov.B) for name, block in basis]
    return basis


@torch.no_grad()
def interpretable_qk_matrices(
    model: HookedTransformer,
    *,
    heads: Sequence[int] | None = None,
    tokens: Sequence[int] | None = None,
    positions: int | None = None,
) -> dict[str, dict]:
    """Musat et al. Fig 2: QK and output matrices of an attention-only model in the interpretable basis.

    ``"L{l}"``: ``S_l W_Q W_Kᵀ S_lᵀ`` (rows = query direction, columns = key direction; no 1/sqrt(d_head)
    scale, no biases) for head ``heads[l]``; ``"OUT"``: ``S_L W_U``. Each entry is ``{"matrix": Tensor,
    "blocks": [(name, size), ...]}``; :func:`block_of` cuts a named block out.
    """
    reasons = []
    if model.cfg.positional_embedding_type != "standard":
        reasons.append(f"it uses {model.cfg.positional_embedding_type!r} positions (no W_pos, so no P block)")
    if not model.cfg.attn_only:
        reasons.append("it has MLPs, whose outputs are not in the span of [E, P, OV·E, OV·P, ...]")
    if reasons:
        raise NotApplicableError(
            "interpretable_qk_matrices needs an attention-only model with learned absolute "
            "positions; " + " and ".join(reasons) + ". Use the activation-based scores of "
            "analyses.heads instead."
        )
    basis = interpretable_basis(model, heads=heads, tokens=tokens, positions=positions)
    heads = [0] * model.cfg.n_layers if heads is None else list(heads)
    out = {}
    for layer, head in enumerate(heads):
        n_blocks = 2 ** (layer + 1)
        S = torch.cat([b for _, b in basis[:n_blocks]])
        attn = model.blocks[layer].attn
        mat = (S @ attn.W_Q[head]) @ (S @ attn.W_K[head]).T
        out[f"L{layer}"] = {"matrix": mat, "blocks": [(n, b.shape[0]) for n, b in basis[:n_blocks]]}
    S = torch.cat([b for _, b in basis])
    out["OUT"] = {"matrix": S @ model.W_U, "blocks": [(n, b.shape[0]) for n, b in basis]}
    return out


def block_of(entry: dict, row: str, col: str | None = None) -> torch.Tensor:
    """The ``row`` x ``col`` block of an :func:`interpretable_qk_matrices` entry (``col=None``: all columns)."""
    starts, at = {}, 0
    for name, size in entry["blocks"]:
        starts[name] = (at, at + size)
        at += size
    for name in (row, col):
        if name is not None and name not in starts:
            raise ValueError(f"block {name!r} not in {list(starts)}")
    r0, r1 = starts[row]
    m = entry["matrix"][r0:r1]
    if col is None:
        return m
    c0, c1 = starts[col]
    return m[:, c0:c1]


def diagonal_contrast(mat: torch.Tensor, offset: int = 0) -> float:
    """``mean(diagonal at offset) − mean(every other entry)``: > 0 for a (sub)diagonal structure.

    Musat et al. Fig 2 summaries: previous-position head = contrast of the P–P block at offset −1 (query
    ``i`` on key ``i−1``); induction = the E vs OV0·E block at offset 0; copying = the output's OV1·E block.
    """
    mat = torch.as_tensor(mat, dtype=torch.float64)
    if mat.ndim != 2:
        raise ValueError(f"expected a matrix, got shape {tuple(mat.shape)}")
    mask = torch.zeros_like(mat, dtype=torch.bool)
    diag = torch.diagonal(mask, offset=offset)
    if diag.numel() == 0:
        raise ValueError(f"offset={offset} is outside a {tuple(mat.shape)} matrix")
    diag.fill_(True)
    if mask.all():
        raise ValueError("the diagonal covers the whole matrix; nothing to contrast with")
    return float(mat[mask].mean() - mat[~mask].mean())
