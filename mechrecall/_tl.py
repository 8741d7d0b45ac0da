"""The adapter: the one module that knows which TransformerLens major is installed.

mechrecall runs on TransformerLens 3.x, whose models are ``HookedTransformer``s, and on 4.x, which removed
``HookedTransformer`` for ``TransformerBridge`` (used here in its compatibility mode: the legacy hook names,
``W_Q … W_U`` in 3.x shapes, ``OV`` / ``QK`` as ``FactoredMatrix``). Everything that differs between the two
lives here -- building a model from a config, parameters by TransformerLens name, saving and loading those
parameters, the hooks that change attention scores, loading pretrained checkpoints -- and nothing else in the
tree asks which version is installed. ``Model`` / ``ModelConfig`` are the installed major's classes: annotate
with them, and the run-time type checks hold on both.

    from mechrecall._tl import Model, new_model, make_model_config, tl_parameter
    model = new_model(make_model_config(dict(n_layers=1, d_model=8, d_head=4, n_heads=2, n_ctx=4, d_vocab=5,
                                             attn_only=True, normalization_type=None, seed=0)))
    tl_parameter(model, "blocks.0.attn.W_Q")  # [n_heads, d_model, d_head], a view on both majors
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import inspect
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import version
from typing import Any

import torch

#: The installed TransformerLens major (3 or 4).
TL_VERSION: str = version("transformer-lens")
TL_MAJOR: int = int(TL_VERSION.split(".")[0])
#: Majors this project is tested on; the README names the tested release of each.
SUPPORTED_MAJORS = (3, 4)

if TL_MAJOR not in SUPPORTED_MAJORS:  # pragma: no cover - only on an unsupported TL version
    raise ImportError(
        f"mechrecall needs transformer-lens 3.x (>=3.9) or 4.x, found {TL_VERSION}; "
        "install one with `pip install 'transformer-lens>=3.9,<5'`"
    )

with warnings.catch_warnings():
    # 3.x warns on import that HookedTransformer is in maintenance mode.
    warnings.simplefilter("ignore", DeprecationWarning)
    warnings.simplefilter("ignore", FutureWarning)
    from transformer_lens import ActivationCache, FactoredMatrix
    from transformer_lens.hook_points import HookPoint
    from transformer_lens.utilities import get_act_name  # "pattern", 1 -> "blocks.1.attn.hook_pattern"

    if TL_MAJOR == 3:
        from transformer_lens import HookedTransformer as Model
        from transformer_lens import HookedTransformerConfig as ModelConfig
    else:
        from transformer_lens import TransformerBridge as Model
        from transformer_lens import TransformerBridgeConfig as ModelConfig

#: The 3.x names, kept for code and notebooks written against them: on 4.x they are the bridge's classes.
HookedTransformer = Model
HookedTransformerConfig = ModelConfig

IS_BRIDGE: bool = TL_MAJOR >= 4

__all__ = [
    "IS_BRIDGE",
    "TL_MAJOR",
    "TL_VERSION",
    "ActivationCache",
    "FactoredMatrix",
    "HookPoint",
    "HookedTransformer",
    "HookedTransformerConfig",
    "Model",
    "ModelConfig",
    "attn_scale",
    "config_dict",
    "config_fields",
    "get_act_name",
    "hf_rotary_pct",
    "last_logits",
    "load_tl_state_dict",
    "make_model_config",
    "mlp_activation",
    "model_from_hf",
    "model_from_hub",
    "named_weights",
    "new_model",
    "no_warnings",
    "recipe_config",
    "register_grad_hook",
    "residual_before",
    "scores_hooks",
    "set_mlp_activation",
    "swap_module",
    "tl_grad",
    "tl_model_names",
    "tl_parameter",
    "tl_parameters",
    "tl_pythia_checkpoints",
    "tl_state_dict",
    "tl_view",
    "underlying_parameter",
    "untrained_like",
    "weight",
    "weight_layout",
]


# --- configs ----------------------------------------------------------------------------------------------------


def config_fields() -> frozenset[str]:
    """The keyword arguments a ``ModelConfig`` takes (3.x: the dataclass's fields; 4.x: its constructor's)."""
    if not IS_BRIDGE:
        return frozenset(f.name for f in dataclasses.fields(ModelConfig))
    params = {p for p in inspect.signature(ModelConfig.__init__).parameters if p not in ("self", "kwargs")}
    return frozenset(params | {f.name for f in dataclasses.fields(ModelConfig)})


def make_model_config(d: dict[str, Any]) -> Any:
    """``ModelConfig(**d)``; 4.x keeps ``seed`` (its constructor takes it but does not store it as a field)."""
    cfg = ModelConfig(**d)
    if IS_BRIDGE and "seed" in d:
        cfg.seed = d["seed"]
    return cfg


def config_dict(cfg: Any) -> dict[str, Any]:
    """The config's fields as a dict (values as stored; ``dtype`` a ``torch.dtype``)."""
    if not IS_BRIDGE:
        return {k: v for k, v in cfg.to_dict().items() if k in config_fields()}
    return {k: getattr(cfg, k) for k in sorted(config_fields()) if hasattr(cfg, k)}


def recipe_config(model: Any) -> dict[str, Any]:
    """The config fields that rebuild ``model``'s architecture with :func:`new_model` (what a checkpoint's recipe
    records). 3.x: its config. 4.x: for a Hugging Face model booted by :func:`model_from_hf`, the TransformerLens
    config its architecture maps to (the bridge's own config describes the wrapped model, not a native one)."""
    fields = getattr(model.cfg, "mechrecall_tl_config", None) if IS_BRIDGE else None
    if not fields:
        return config_dict(model.cfg)
    return {**fields, "normalization_type": model.cfg.normalization_type, "dtype": model.cfg.dtype}


# --- building a model --------------------------------------------------------------------------------------------


def new_model(cfg: Any, tokenizer: Any = None) -> Any:
    """A freshly initialised model of ``cfg`` (TransformerLens' initialisation, seeded by ``cfg.seed``).

    3.x: ``HookedTransformer(cfg)``. 4.x: ``TransformerBridge.boot_native(cfg)`` in compatibility mode, with two
    changes that make it the model the config describes, as 3.x builds it: the unembedding has a trainable bias
    ``b_U`` (``boot_native``'s has none); ``use_attn_scale=False`` means unscaled scores (``boot_native`` divides by
    √d_head either way); ``parallel_attn_mlp`` gives a parallel residual and rotary positions rotate halves
    (``rotary_adjacent_pairs=False``), as 3.x and GPT-NeoX do; and ``init_mode="gpt2"`` draws 3.x's initial weights
    exactly (``boot_native``'s own draws differently and scales ``W_O`` / ``W_out`` by 1/√(2 n_layers)), so one
    config and seed give the same model on both majors. Other init modes keep ``boot_native``'s initialisation.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if not IS_BRIDGE:
            return Model(cfg, tokenizer=tokenizer)
        return _boot_native(cfg, tokenizer)


def _boot_native(cfg: Any, tokenizer: Any) -> Any:
    from transformer_lens.model_bridge.sources._bridge_builder import build_bridge_from_module
    from transformer_lens.model_bridge.sources.native import NativeModel, initialize_native_model

    cfg = copy.deepcopy(cfg)
    seed = getattr(cfg, "seed", None)
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        native = NativeModel(cfg)
        if cfg.init_weights:
            initialize_native_model(native, cfg)
    d_vocab_out = cfg.d_vocab_out if cfg.d_vocab_out > 0 else cfg.d_vocab
    head = torch.nn.Linear(cfg.d_model, d_vocab_out, bias=True)
    with torch.no_grad():
        head.weight.copy_(native.head.weight)
        head.bias.zero_()
    native.head = head
    for block in native.layers:
        if not cfg.use_attn_scale:
            block.attn.scale = 1.0
        if cfg.parallel_attn_mlp:
            block.__class__ = _parallel_block_class()
    if native.rotary is not None and not getattr(cfg, "rotary_adjacent_pairs", False):
        _rotate_halves(native.rotary, cfg)
    native = native.to(dtype=cfg.dtype)
    if cfg.device is not None:
        native = native.to(cfg.device)
    bridge = build_bridge_from_module(
        native, architecture="TransformerLensNative", tl_config=cfg, tokenizer=tokenizer, model_name="native"
    )
    bridge.enable_compatibility_mode(disable_warnings=True, no_processing=True)
    if cfg.init_weights and cfg.init_mode == "gpt2":
        _init_as_hooked_transformer(bridge, cfg)
    return bridge


def _init_as_hooked_transformer(bridge: Any, cfg: Any) -> None:
    """3.x's ``gpt2`` initialisation, draw for draw: after ``torch.manual_seed(cfg.seed)``, N(0, initializer_range²)
    into each ``W_*`` in ``HookedTransformer``'s parameter order, biases zero. So a toy model of one config and seed
    starts from the same weights on both majors, and trains to the same numbers up to float noise."""
    if cfg.seed is not None:
        torch.manual_seed(cfg.seed)
    params = tl_parameters(bridge)
    order = ["embed.W_E", "pos_embed.W_pos"]
    for layer in range(cfg.n_layers):
        order += [f"blocks.{layer}.attn.W_{m}" for m in "QOKV"]
        order += [f"blocks.{layer}.mlp.W_in", f"blocks.{layer}.mlp.W_out"]
    order.append("unembed.W_U")
    with torch.no_grad():
        for name in (n for n in order if n in params):
            draw = torch.empty(params[name].shape, dtype=cfg.dtype, device=params[name].device)
            params[name].copy_(torch.nn.init.normal_(draw, std=cfg.initializer_range))
        for name, p in params.items():
            if name.rsplit(".", 1)[-1].startswith("b_"):
                p.zero_()


def _parallel_block_class() -> type:
    """4.x's native block, with attention and MLP reading the same residual (GPT-NeoX's parallel residual, 3.x's
    ``parallel_attn_mlp``): ``x + attn(ln1(x)) + mlp(ln2(x))``."""
    from transformer_lens.model_bridge.sources.native import NativeBlock

    class ParallelNativeBlock(NativeBlock):
        def forward(
            self, hidden_states: torch.Tensor, attention_mask: Any = None, position_ids: Any = None, **kw: Any
        ) -> tuple[torch.Tensor]:
            attn_out, _ = self.attn(self.ln1(hidden_states), attention_mask=attention_mask, position_ids=position_ids)
            return (hidden_states + attn_out + self.mlp(self.ln2(hidden_states)),)

    return ParallelNativeBlock


def _rotate_halves(rotary: Any, cfg: Any) -> None:
    """Make 4.x's native rotary embedding rotate the two halves of the rotary dims (GPT-NeoX's and 3.x's default,
    ``rotary_adjacent_pairs=False``) instead of adjacent pairs: ``x·cos + rotate_half(x)·sin`` with
    ``rotate_half(x) = (-x₂, x₁)`` and each frequency repeated over the two halves."""
    dim = rotary.rotary_dim
    inv_freq = 1.0 / (cfg.rotary_base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    freqs = torch.outer(torch.arange(cfg.n_ctx, dtype=torch.float32), inv_freq)  # [n_ctx, dim / 2]
    rotary.cos_cached = torch.cat([freqs, freqs], -1).cos()
    rotary.sin_cached = torch.cat([freqs, freqs], -1).sin()

    def rotate_half(x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        return torch.cat([-x2, x1], -1)

    rotary._rotate_half = rotate_half


# --- parameters by TransformerLens name ------------------------------------------------------------------------


def tl_parameters(model: Any) -> dict[str, torch.Tensor]:
    """Every weight by its TransformerLens name (``blocks.0.attn.W_Q`` …), in 3.x's shapes.

    3.x: the model's own parameters. 4.x: views of the bridge's parameters (an in-place edit of one edits the
    model), plus any parameter of a module swapped in by a surgery, under its own name.
    """
    if not IS_BRIDGE:
        return dict(model.named_parameters())
    from transformer_lens.model_bridge.get_params_util import get_bridge_params

    # get_bridge_params fills in zeros for weights the model lacks (an attention-only model's MLP, the LayerNorm
    # of one without LayerNorm): those are not the model's parameters.
    with _quiet_tl_logs():  # it logs each swapped-in MLP it cannot read
        bridge_params = get_bridge_params(model)
    params = {k: v for k, v in bridge_params.items() if underlying_parameter(model, v) is not None}
    for path, module in (getattr(model, "mechrecall_swapped", None) or {}).items():
        params = {k: v for k, v in params.items() if not k.startswith(path + ".")}
        params.update({f"{path}.{n}": p for n, p in module.named_parameters()})
    return params


def tl_parameter(model: Any, name: str) -> torch.Tensor:
    """The weight called ``name`` by TransformerLens (``ValueError`` naming close names if there is none)."""
    params = tl_parameters(model)
    if name not in params:
        close = difflib.get_close_matches(name, params, n=4) or sorted(params)[:6]
        raise ValueError(f"model has no parameter {name!r}; expected a TL name such as {close}")
    return params[name]


def underlying_parameter(model: Any, tensor: torch.Tensor) -> torch.nn.Parameter | None:
    """The ``nn.Parameter`` whose storage ``tensor`` views (itself on 3.x), or ``None``: what to freeze or hand to
    an optimizer for a weight named by TransformerLens."""
    if isinstance(tensor, torch.nn.Parameter):
        return tensor
    ptr = tensor.untyped_storage().data_ptr()
    for p in model.parameters():
        if p.untyped_storage().data_ptr() == ptr:
            return p
    return None


def weight(model: Any, name: str) -> torch.nn.Parameter:
    """The ``nn.Parameter`` behind the weight TransformerLens calls ``name``: what to freeze, to hand to an
    optimiser, or to hook a gradient on (on 4.x in its ``nn.Linear`` layout; :func:`tl_view` maps between)."""
    param = underlying_parameter(model, tl_parameter(model, name))
    assert param is not None  # tl_parameters keeps only weights with a parameter behind them
    return param


def tl_view(model: Any, name: str, like_weight: torch.Tensor) -> torch.Tensor:
    """``like_weight`` (a tensor shaped like :func:`weight` ``(model, name)``) seen in the layout of the TL weight
    ``name`` -- e.g. a gradient mask of ``q.weight`` as ``W_Q``'s [n_heads, d_model, d_head]. A view: writing to
    it writes ``like_weight``. The identity on 3.x."""
    tl, param = tl_parameter(model, name), weight(model, name)
    if tl is param:
        return like_weight
    if like_weight.shape != param.shape or not like_weight.is_contiguous():
        raise ValueError(f"tl_view of {name}: expected a contiguous tensor of shape {tuple(param.shape)}")
    offset = tl.storage_offset() - param.storage_offset()
    return like_weight.as_strided(tl.shape, tl.stride(), like_weight.storage_offset() + offset)


def weight_layout(model: Any, name: str, tl_tensor: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`tl_view`: a tensor in the layout of the TL weight ``name`` (e.g. a mask of ``W_Q``), in
    the layout of :func:`weight` ``(model, name)``. The identity on 3.x."""
    param = weight(model, name)
    if tl_parameter(model, name) is param:
        return tl_tensor
    out = torch.zeros(param.shape, dtype=tl_tensor.dtype, device=tl_tensor.device)
    tl_view(model, name, out).copy_(tl_tensor)
    return out


def tl_grad(model: Any, name: str) -> torch.Tensor | None:
    """The gradient of the TL weight ``name`` in its TL layout (``None`` before a backward pass)."""
    grad = weight(model, name).grad
    return None if grad is None else tl_view(model, name, grad)


def register_grad_hook(
    model: Any, name: str, fn: Callable[[torch.Tensor], torch.Tensor]
) -> torch.utils.hooks.RemovableHandle:
    """A gradient hook on the TL weight ``name`` that sees and returns its gradient in the TL layout (on 4.x the
    hook sits on :func:`weight` and the gradient is viewed through :func:`tl_view`). ``handle.remove()`` undoes it."""
    param = weight(model, name)
    if tl_parameter(model, name) is param:
        return param.register_hook(fn)
    return param.register_hook(lambda grad: weight_layout(model, name, fn(tl_view(model, name, grad.contiguous()))))


def named_weights(model: Any) -> dict[str, torch.nn.Parameter]:
    """TL name -> the ``nn.Parameter`` behind it, once per parameter, in a fixed order: what the trainer optimises
    and what its parameter groups match by ``fnmatch`` pattern. Any other module: its ``named_parameters``."""
    if not isinstance(model, Model):
        return dict(model.named_parameters())
    out: dict[str, torch.nn.Parameter] = {}
    seen: set[int] = set()
    for name in tl_parameters(model):
        param = weight(model, name)
        if id(param) not in seen:
            seen.add(id(param))
            out[name] = param
    return out


def check_stackable(model: Any) -> None:
    """Raise ``ValueError`` where ``torch.func.functional_call`` cannot swap in one seed's weights under ``vmap``:
    4.x's bridge registers each layer's module under several paths, and swapping them back leaks the batched
    weights. On 3.x there is nothing to check."""
    if IS_BRIDGE:
        raise ValueError(
            f"stacked seeds need TransformerLens 3.x's HookedTransformer (this is {TL_VERSION}, whose bridge "
            "aliases modules); train each seed with mechrecall.train"
        )


def swap_module(model: Any, path: str, module: torch.nn.Module) -> None:
    """Put ``module`` at ``path`` (``"blocks.0.mlp"``) and register its hook points, so ``run_with_cache`` sees
    ``blocks.0.mlp.hook_pre`` etc. as for TL's own module.

    3.x: ``setattr`` + ``model.setup()``. 4.x: the module takes the place of the bridge's MLP component in the
    block the bridge wraps (the bridge's forward calls it there), and the hook registry is rebuilt; its
    parameters are listed by :func:`tl_parameters` under ``path``. Only ``embed`` and a block's ``mlp`` can be
    swapped on 4.x (``ValueError`` naming the path otherwise, before any work); a module swapped in there has a
    ``hook_out`` HookPoint on its output (the bridge's ``hook_embed`` / ``hook_mlp_out`` are that hook).
    """
    module = module.to(model.cfg.device or "cpu")
    parent_path, _, attr = path.rpartition(".")
    if not IS_BRIDGE:
        setattr(model.get_submodule(parent_path) if parent_path else model, attr, module)
        model.setup()
        return
    if path == "embed":
        model.original_model.tok_embed = module  # what the native model's forward calls
    elif attr == "mlp" and parent_path.startswith("blocks."):
        model.get_submodule(parent_path).original_component.mlp = module  # what the block's forward calls
    else:
        raise ValueError(
            f"swapping {type(module).__name__} in at {path!r} needs TransformerLens 3.x: on 4.x only 'embed' and a "
            "block's 'mlp' can be swapped (the bridge wraps every other module in an adapter of its own)"
        )
    # where the bridge's hooks, aliases and parameters are found (nn.Module's own setattr: the bridge's would
    # forward the assignment to the module it wraps)
    parent = model.get_submodule(parent_path) if parent_path else model
    torch.nn.Module.__setattr__(parent, attr, module)
    if attr in (getattr(parent, "submodules", None) or {}):  # the bridge's own list of a block's components
        parent.submodules[attr] = module
    swapped = getattr(model, "mechrecall_swapped", None) or {}
    model.mechrecall_swapped = {**swapped, path: module}
    model.clear_hook_registry()
    model._initialize_hook_registry()
    model._register_all_aliases_recursive()


def mlp_activation(model: Any, layer: int) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """Block ``layer``'s MLP activation function, or ``None`` if its feed-forward layer has none."""
    mlp = model.blocks[layer].mlp
    if IS_BRIDGE:  # the native MLP the bridge wraps (a module swapped in by swap_module is its own)
        return getattr(getattr(mlp, "original_component", mlp), "act", None)
    return getattr(mlp, "act_fn", None)


def set_mlp_activation(model: Any, layer: int, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Make ``fn`` block ``layer``'s MLP activation (``hook_pre`` sees its input, ``hook_post`` its output)."""
    mlp = model.blocks[layer].mlp
    if IS_BRIDGE:
        mlp.original_component.act = fn
    else:
        mlp.act_fn = fn


def tl_state_dict(model: Any) -> dict[str, torch.Tensor]:
    """The model's weights by TransformerLens name, detached copies: what a checkpoint stores (both majors load
    it with :func:`load_tl_state_dict`)."""
    if not IS_BRIDGE:
        return {k: v.detach().clone() for k, v in model.state_dict().items()}
    state = {k: v.detach().clone().contiguous() for k, v in tl_parameters(model).items()}
    if "unembed.b_U" not in state:  # a Hugging Face model without one: 3.x's HookedTransformer has it, zero
        state["unembed.b_U"] = torch.zeros(model.cfg.d_vocab_out, dtype=model.cfg.dtype)
    return state


def load_tl_state_dict(model: Any, state: dict[str, torch.Tensor], *, strict: bool = True) -> None:
    """Load weights saved by :func:`tl_state_dict` on either major (``ValueError`` on an unknown name, or with
    ``strict`` a missing one; ``strict=False`` loads just the weights ``state`` names).

    Buffers that 3.x keeps in its state dict (the causal ``mask``, ``IGNORE``, rotary tables) are rebuilt from the
    config, so a file without them loads on 3.x and one with them on 4.x.
    """
    params = tl_parameters(model)
    buffers = {k for k, _ in model.named_buffers()} if not IS_BRIDGE else set()
    missing = sorted(set(params) - set(state)) if strict else []
    extra = sorted(k for k in set(state) - set(params) - buffers if not _is_tl_buffer(k))
    if missing or extra:
        raise ValueError(f"weights do not match the model: missing {missing[:6]}, unexpected {extra[:6]}")
    with torch.no_grad():
        for name, p in params.items():
            if name in state:
                p.copy_(state[name].to(p.dtype))
        if not IS_BRIDGE:
            own = dict(model.named_buffers())
            for name in buffers & set(state):
                own[name].copy_(state[name])


def _is_tl_buffer(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in ("mask", "IGNORE", "rotary_sin", "rotary_cos")


# --- attention scores ----------------------------------------------------------------------------------------------


def attn_scale(model: Any, layer: int) -> float:
    """What block ``layer``'s attention divides its scores by (√d_head, or 1 with ``use_attn_scale=False``)."""
    if not IS_BRIDGE:
        return float(model.blocks[layer].attn.attn_scale)
    return float(model.blocks[layer].attn.original_component.scale)


ScoresFn = Callable[[torch.Tensor, dict[str, torch.Tensor]], torch.Tensor]


def scores_hooks(model: Any, layer: int, fn: ScoresFn) -> list[tuple[str, Callable[..., Any]]]:
    """Hooks that replace block ``layer``'s attention scores ``s`` ([batch, head, q_pos, k_pos], scaled and
    masked, before the softmax) with ``fn(s, stash)``, where ``stash["q"]`` is ``hook_q`` ([batch, pos, head,
    d_head]).

    3.x: a hook on ``hook_attn_scores``. 4.x, where that hook point only reports the scores: the scores are
    recomputed from ``hook_q`` / ``hook_k``, changed, and their softmax replaces ``hook_pattern`` (the pattern the
    bridge's attention multiplies the values by).
    """
    stash: dict[str, torch.Tensor] = {}

    def save(name: str) -> Callable[..., None]:
        def hook(x: torch.Tensor, hook: HookPoint) -> None:
            stash[name] = x

        return hook

    if not IS_BRIDGE:

        def on_scores(scores: torch.Tensor, hook: HookPoint) -> torch.Tensor:
            return fn(scores, stash)

        return [(get_act_name("q", layer), save("q")), (get_act_name("attn_scores", layer), on_scores)]

    if model.cfg.positional_embedding_type != "standard":  # the recomputation is checked for learned positions only
        raise ValueError(
            f"scores_hooks on TransformerLens 4.x needs learned absolute positions, not "
            f"{model.cfg.positional_embedding_type!r}"
        )
    scale = attn_scale(model, layer)

    def on_pattern(pattern: torch.Tensor, hook: HookPoint) -> torch.Tensor:
        q, k = stash["q"], stash["k"]
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / scale
        n_q, n_k = scores.shape[-2:]
        causal = torch.ones(n_q, n_k, dtype=torch.bool, device=scores.device).triu(n_k - n_q + 1)
        scores = fn(scores.masked_fill(causal, float("-inf")), stash)
        stash.clear()
        new = scores.softmax(-1)
        return new.nan_to_num(0.0)  # a row with no admissible key attends nowhere, as 3.x writes it

    return [
        (get_act_name("q", layer), save("q")),
        (get_act_name("k", layer), save("k")),
        (get_act_name("pattern", layer), on_pattern),
    ]


@contextmanager
def no_warnings() -> Iterator[None]:
    """TransformerLens' deprecation and compatibility-mode warnings, silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        yield


# --- pretrained checkpoints ------------------------------------------------------------------------------------


# --- forward passes that skip what a question does not need ----------------------------------------------------------


def residual_before(model: Any, tokens: torch.Tensor, layer: int) -> torch.Tensor | None:
    """The residual stream entering block ``layer`` (``[batch, pos, d_model]``) for ``tokens``, to resume from with
    :func:`last_logits`; ``None`` where resuming would save nothing (4.x: the bridge's ``start_at_layer`` still runs
    the blocks before it)."""
    if IS_BRIDGE or layer <= 0:
        return None
    return model(tokens, stop_at_layer=layer, padding_side="right")


def last_logits(
    model: Any,
    tokens: torch.Tensor,
    last: torch.Tensor,
    *,
    residual: torch.Tensor | None = None,
    start: int = 0,
) -> torch.Tensor:
    """``[batch, d_vocab_out]``: the logits at position ``last[i]`` of each row ``i`` of ``tokens`` (right-padded
    prompts: causal attention keeps a prompt's own positions blind to the padding after it).

    3.x: the blocks run from ``start`` on ``residual`` (the residual entering block ``start``, from
    :func:`residual_before` of the same ``tokens``; ``None``: from the embedding), and the final LayerNorm and the
    unembedding only at the rows asked for (``d_vocab`` x ``d_model`` per prompt, not per position). 4.x: the whole
    forward, its logits taken at those rows.
    """
    rows = torch.arange(len(last), device=tokens.device)
    last = last.to(tokens.device)
    if IS_BRIDGE or getattr(model.cfg, "output_logits_soft_cap", 0) > 0:
        return model(tokens)[rows, last]
    n = model.cfg.n_layers
    if residual is None or start <= 0:
        x = model(tokens, stop_at_layer=n, padding_side="right")
    else:
        x = model(residual, start_at_layer=start, stop_at_layer=n)
    x = x[rows, last][:, None]
    if model.cfg.normalization_type is not None:
        x = model.ln_final(x)
    return model.unembed(x)[:, 0]


def hf_rotary_pct(hf_config: Any) -> float:
    """The rotary fraction of each head of a GPT-NeoX Hugging Face config (transformers 4 or 5 layout)."""
    from transformer_lens.utilities.hf_utils import get_rotary_pct_from_config

    return float(get_rotary_pct_from_config(hf_config))


def tl_model_names() -> tuple[list[str], dict[str, list[str]]]:
    """TransformerLens' official model names (hub ids) and their aliases (official name -> aliases)."""
    from transformer_lens.supported_models import MODEL_ALIASES, OFFICIAL_MODEL_NAMES

    return list(OFFICIAL_MODEL_NAMES), dict(MODEL_ALIASES)


def tl_pythia_checkpoints() -> list[int]:
    """TransformerLens' list of Pythia's published training steps (3.x and 4.x keep it in different modules)."""
    if not IS_BRIDGE:
        from transformer_lens.loading_from_pretrained import PYTHIA_CHECKPOINTS
    else:
        from transformer_lens.tools.model_registry.checkpoints import PYTHIA_CHECKPOINTS
    return list(PYTHIA_CHECKPOINTS)


def model_from_hf(
    hf_model: Any,
    tokenizer: Any,
    tl_config: dict[str, Any] | None,
    *,
    name: str,
    flags: dict[str, bool],
    dtype: Any,
    device: Any,
    consume: bool = False,
) -> Any:
    """A loaded Hugging Face GPT-NeoX / GPT-2 causal LM as a ``Model`` with ``tokenizer``, its weights processed as
    ``flags`` say (TL's ``fold_ln``, ``center_writing_weights``, ``center_unembed``, ``fold_value_biases``,
    ``refactor_factored_attn_matrices``; all False = the stored weights).

    ``tl_config``: the architecture's TransformerLens config fields (``pretrained._local.tl_config_dict``; on 4.x
    ``None`` for an architecture without that mapping, whose model then has no :func:`untrained_like`); ``name``:
    the folder or hub id. 3.x: TL's converter (``convert_neox_weights`` / ``convert_gpt2_weights``) into a
    ``HookedTransformer`` of ``tl_config`` and ``load_and_process_state_dict``. 4.x: ``boot_transformers(name,
    hf_model=...)`` (no hub access: the config is the loaded model's) in compatibility mode; ``cfg`` then records
    ``normalization_type="LNPre"`` after fold_ln and ``original_architecture``, as 3.x's config has them.

    ``consume=True`` (the caller has no further use for ``hf_model``): on 3.x its weights move to the meta device
    once converted, so each one is freed as soon as TL has copied it -- the load's peak memory is about one copy of
    the weights, not two (4.x wraps the Hugging Face modules themselves: one copy either way).
    """
    if not IS_BRIDGE:
        if tl_config is None:
            raise ValueError(f"{name}: no TransformerLens config for this architecture")
        return _hooked_from_hf(
            hf_model, tokenizer, tl_config, name=name, flags=flags, dtype=dtype, device=device, consume=consume
        )
    with no_warnings(), _quiet_tl_logs():
        bridge = Model.boot_transformers(
            name, hf_model=hf_model.to(device), tokenizer=tokenizer, device=device, dtype=dtype
        )
        bridge.enable_compatibility_mode(disable_warnings=True, no_processing=not any(flags.values()), **flags)
    bridge.cfg.original_architecture = (tl_config or {}).get("original_architecture") or hf_model.config.architectures[
        0
    ]
    if flags["fold_ln"]:
        bridge.cfg.normalization_type = "LNPre"  # the bridge's LayerNorms no longer scale; read only at processing
    bridge.cfg.mechrecall_tl_config = (
        dict(tl_config) if tl_config else None
    )  # what untrained_like builds TL's initialisation from
    bridge.cfg.mechrecall_tl_flags = dict(flags)
    bridge.eval()
    return bridge


def _hooked_from_hf(
    hf_model: Any,
    tokenizer: Any,
    tl_config: dict[str, Any],
    *,
    name: str,
    flags: dict[str, bool],
    dtype: Any,
    device: Any,
    consume: bool = False,
) -> Any:
    from pathlib import Path

    from transformer_lens.pretrained.weight_conversions import convert_gpt2_weights, convert_neox_weights

    fields = dict(tl_config)
    # The rest mirrors TL 3's get_pretrained_model_config for a pretrained model.
    fields.update(
        model_name=Path(name).name,
        tokenizer_name=name,
        init_weights=False,
        dtype=dtype,
        device=device,
        n_devices=1,
        from_checkpoint=False,
    )
    fields.setdefault("default_prepend_bos", True)
    if flags["fold_ln"]:
        fields["normalization_type"] = "LNPre"
    cfg = ModelConfig.from_dict(fields)
    converters = {"GPTNeoXForCausalLM": convert_neox_weights, "GPT2LMHeadModel": convert_gpt2_weights}
    # TL's converters return views of the Hugging Face weights; with consume, the views are the only holders left
    # (the module's own parameters move to meta), and TL's load deletes each entry once copied: freed one by one.
    # The new model's parameters are allocated empty, so untouched pages cost nothing until a weight lands there.
    state_dicts = [converters[fields["original_architecture"]](hf_model, cfg)]
    if consume:
        hf_model.to("meta")
    with no_warnings():
        model = Model(cfg, tokenizer, move_to_device=False)
    model.load_and_process_state_dict(state_dicts.pop(), **flags)
    model.move_model_modules_to_device()
    return model


@contextmanager
def _quiet_tl_logs() -> Iterator[None]:
    """TL 4's ``logging.warning`` about alias names and booting, silenced (the root logger's level restored)."""
    import logging

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def model_from_hub(
    official: str,
    tokenizer: Any,
    *,
    checkpoint: int | None,
    flags: dict[str, bool],
    dtype: Any,
    device: Any,
    hub_kwargs: dict[str, Any],
    tl_config_of: Callable[[Any], dict[str, Any] | None],
) -> Any:
    """The hub model ``official`` (at revision ``step{checkpoint}`` for Pythia) with ``tokenizer``, processed as
    ``flags`` say; ``hub_kwargs`` (``cache_dir``, ``local_files_only``) go to every hub read.

    3.x: TL's ``HookedTransformer.from_pretrained`` (``from_pretrained_no_processing`` for raw weights, TL's
    ``checkpoint_value``). 4.x: the Hugging Face model loaded here and booted by :func:`model_from_hf`, with
    ``tl_config_of(hf_config)`` its TL config fields; ``cfg.checkpoint_value`` records the step as 3.x does.
    """
    raw = not any(flags.values())
    if not IS_BRIDGE:
        load_fn = Model.from_pretrained_no_processing if raw else Model.from_pretrained
        with no_warnings():
            return load_fn(
                official,
                **flags,
                checkpoint_value=checkpoint,
                tokenizer=tokenizer,
                dtype=dtype,
                device=device,
                **hub_kwargs,
            )
    from transformers import AutoModelForCausalLM

    revision = None if checkpoint is None else f"step{checkpoint}"
    hf_model = AutoModelForCausalLM.from_pretrained(
        official, revision=revision, dtype=dtype, attn_implementation="eager", **hub_kwargs
    )
    model = model_from_hf(
        hf_model, tokenizer, tl_config_of(hf_model.config), name=official, flags=flags, dtype=dtype, device=device
    )
    if checkpoint is not None:
        model.cfg.from_checkpoint, model.cfg.checkpoint_value, model.cfg.checkpoint_label_type = (
            True,
            checkpoint,
            "step",
        )
    return model


def untrained_like(model: Any, seed: int) -> Any:
    """A model of ``model``'s architecture, config and tokenizer with TransformerLens' initialisation seeded by
    ``seed`` (the global RNG left as it was), on its device, in eval mode.

    3.x: ``HookedTransformer`` of a copy of ``model.cfg`` with ``cfg.seed = seed``. 4.x: the weights of
    :func:`new_model` of the TL config ``model`` was loaded from (``cfg.mechrecall_tl_config``), copied by TL name
    into a fresh Hugging Face model of ``model``'s architecture, booted and processed as ``model`` was (so the same
    seed gives the same weights on both majors' loaders of one major; tied GPT-2 embeddings stay tied: W_U = W_E^T).
    """
    if not IS_BRIDGE:
        cfg = copy.deepcopy(model.cfg)
        cfg.seed, cfg.init_weights = seed, True  # a loaded model's config skips the initialisation
        with torch.random.fork_rng(devices=[]), no_warnings():
            fresh = Model(cfg, tokenizer=model.tokenizer, move_to_device=False)
        return fresh.to(model.cfg.device).eval()
    fields = getattr(model.cfg, "mechrecall_tl_config", None)
    if fields is None:
        raise ValueError("untrained_like needs a GPT-NeoX / GPT-2 model loaded by pretrained.load (TL config unknown)")
    with torch.random.fork_rng(devices=[]):  # HF's init and the boot draw from the global RNG
        return _untrained_bridge(model, fields, seed)


def _untrained_bridge(model: Any, fields: dict[str, Any], seed: int) -> Any:
    dtype, name, tokenizer = model.cfg.dtype, str(model.cfg.model_name), model.tokenizer
    native = new_model(make_model_config({**fields, "seed": seed, "init_weights": True, "dtype": dtype}))
    fresh_hf = type(model.original_model)(model.original_model.config).to(dtype=dtype)
    off = dict.fromkeys(_FLAGS, False)
    raw = model_from_hf(fresh_hf, tokenizer, fields, name=name, flags=off, dtype=dtype, device="cpu")
    _copy_tl_weights(native, raw)
    flags = model.cfg.mechrecall_tl_flags
    if any(flags.values()):  # boot the initialised HF model again, processed as model was
        raw = model_from_hf(fresh_hf, tokenizer, fields, name=name, flags=flags, dtype=dtype, device="cpu")
    for key, value in vars(model.cfg).items():  # pretrained.load's records (mechrecall_processing ...)
        if key.startswith("mechrecall_"):
            setattr(raw.cfg, key, value)
    return raw.to(model.cfg.device).eval()


_FLAGS = ("fold_ln", "center_writing_weights", "center_unembed", "fold_value_biases", "refactor_factored_attn_matrices")


def _copy_tl_weights(source: Any, target: Any) -> None:
    """Every weight of ``target`` set to ``source``'s of the same TL name (4.x: through ``target``'s views); a weight
    tied to one already written (GPT-2's W_U to W_E) keeps the tie. ``ValueError`` if ``source`` lacks one."""
    theirs, written = tl_parameters(source), set()
    with torch.no_grad():
        for name, p in tl_parameters(target).items():
            if name not in theirs:
                raise ValueError(f"{name} has no initial value: the TL config does not describe this model")
            if p.data_ptr() not in written:  # a tied weight starts where its twin does
                p.copy_(theirs[name].to(p.dtype))
                written.add(p.data_ptr())
