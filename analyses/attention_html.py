"""Attention patterns of one layer as a self-contained HTML page (CircuitsVis, JavaScript inlined).

The page embeds CircuitsVis' packaged JavaScript bundle (``circuitsvis/dist/cdn/iife.js``) instead of
importing it from unpkg.com, so it renders in a browser with no network: from a results folder, an
archive or an offline machine. Works with any ``HookedTransformer`` (a toy model or a loaded checkpoint)::

    html = attention_pattern_html(model, "The Eiffel Tower is in Paris", layer=1)
    write_results(out, results, ..., figures={"attention_L1.html": html})   # or:
    save_attention_html(out / "attention_L1.html", model, tokens, layer=1, heads=[0, 3])
"""

from __future__ import annotations

import html as _html
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from mechrecall._tl import HookedTransformer, get_act_name
from mechrecall.checks import check_head, check_index, check_layer
from mechrecall.io import atomic_write_text

__all__ = ["attention_pattern_html", "save_attention_html"]

# Loads of code or styles from elsewhere: <script src=...>, <link href=...>, ES `import ... from "URL"`,
# bare `import "URL"` and dynamic `import("URL")`, for http(s):// and protocol-relative // URLs.
# URLs that are mere strings inside the inlined bundle (docs links, XML namespaces) do not match.
_EXTERNAL_LOAD = re.compile(
    r"""<(?:script|link)\b[^>]*\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//"""
    r"""|\b(?:from|import)\s*\(?\s*["'](?:https?:)?//""",
    re.IGNORECASE,
)


def _check_self_contained(html: str) -> str:
    """Return ``html`` unchanged; raise ``ValueError`` if it loads a script or stylesheet over the network."""
    match = _EXTERNAL_LOAD.search(html)
    if match:
        raise ValueError(f"HTML is not self-contained: it loads {match.group(0)!r}... from the network")
    return html


def attention_pattern_html(
    model: HookedTransformer,
    tokens: torch.Tensor | str,
    layer: int,
    *,
    heads: Sequence[int] | None = None,
    batch_index: int = 0,
    str_tokens: Sequence[str] | None = None,
    title: str | None = None,
) -> str:
    """A complete, offline-renderable HTML document showing the attention patterns of ``layer``.

    Args:
        model: any ``HookedTransformer``.
        tokens: token ids, int tensor ``[batch, pos]`` or ``[pos]``; or a string, tokenized with
            ``model.to_tokens`` (BOS prepended as the model's config says; needs ``model.tokenizer``).
        layer: the layer, in ``[0, n_layers)``.
        heads: heads to show (default: all ``n_heads``), each in ``[0, n_heads)``.
        batch_index: which sequence of the batch to show.
        str_tokens: ``pos`` token labels; default ``model.to_str_tokens`` if the model has a
            tokenizer, else the ids as strings.
        title: the page title (default ``"Attention patterns, layer {layer}"``).

    Returns:
        The HTML text. It shows ``blocks.{layer}.attn.hook_pattern[batch_index, heads]``, a
        ``[head, query_pos, key_pos]`` array, with CircuitsVis' ``AttentionHeads`` (heads named
        ``L{layer}H{head}``), the JavaScript inlined.

    Raises:
        ValueError: a bad layer, head, batch index or label count (naming the value and the valid
            range), or a string with a model that has no tokenizer -- all before the model runs.
    """
    from circuitsvis.attention import attention_heads

    cfg = model.cfg
    layer = check_layer(model, layer)
    if heads is None:
        heads = list(range(cfg.n_heads))
    else:
        heads = [check_head(model, layer, h)[1] for h in heads]
        if not heads:
            raise ValueError("heads=[] selects nothing; pass None for all heads or a non-empty list")

    has_tokenizer = getattr(model, "tokenizer", None) is not None
    if isinstance(tokens, str):
        if not has_tokenizer:
            raise ValueError(
                "tokens is a string but the model has no tokenizer (model.tokenizer is None); pass token ids"
            )
        tokens = model.to_tokens(tokens)
    tokens = torch.as_tensor(tokens)
    if tokens.ndim == 1:
        tokens = tokens[None]
    if tokens.ndim != 2 or tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
        raise ValueError(
            f"tokens must be int ids of shape [batch, pos] or [pos], got {tokens.dtype} {tuple(tokens.shape)}"
        )
    batch_index = check_index("batch_index", batch_index, tokens.shape[0], f"the batch has {tokens.shape[0]} sequences")
    ids = tokens[batch_index]
    if str_tokens is not None:
        labels = [str(t) for t in str_tokens]
        if len(labels) != len(ids):
            raise ValueError(f"str_tokens has {len(labels)} labels but the sequence has {len(ids)} tokens")
    elif has_tokenizer:
        labels = list(model.to_str_tokens(ids))
    else:
        labels = [str(i) for i in ids.tolist()]

    name = get_act_name("pattern", layer)
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens.to(cfg.device), names_filter=name)
    pattern = cache[name][batch_index, heads].float().cpu()  # [head, query_pos, key_pos]

    rendered = attention_heads(attention=pattern, tokens=labels, attention_head_names=[f"L{layer}H{h}" for h in heads])
    title = _html.escape(f"Attention patterns, layer {layer}" if title is None else title)
    document = (
        '<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n</head>\n<body>\n<h1>{title}</h1>\n"
        # local_src inlines the bundle; str(rendered) would import it from unpkg.com
        f"{rendered.local_src}\n</body>\n</html>\n"
    )
    return _check_self_contained(document)


def save_attention_html(
    path: str | os.PathLike, model: HookedTransformer, tokens: torch.Tensor | str, layer: int, **kw: Any
) -> Path:
    """Write :func:`attention_pattern_html` ``(model, tokens, layer, **kw)`` to ``path`` atomically; return the path."""
    return atomic_write_text(path, attention_pattern_html(model, tokens, layer, **kw))
