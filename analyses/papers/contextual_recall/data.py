"""The two synthetic worlds of *Understanding Contextual Recall in Transformers* (Vasudeva et al.), §2 and §4 / App. C.

- **World-G** (§2, Fig. 1): subjects, ``L`` attribute types, one first-order Markov chain over ``G`` grammar
  tokens per type (its bigram statistics implicitly encode the type), grammar-only filler from a separate
  chain. Sequences: PT (§2, "PT sequences"), ICL and ICL+Grm (§2, "ICL sequences" / "ICL+Grm sequences").
- **World-R** (§4, Eq. 2-3): the type is an explicit relation token ``r_ℓ`` placed in one uniformly chosen
  grammar slot; grammar is i.i.d. uniform; ``[sep]`` sits between grammar and attribute. Sequences: PT_rel
  and ICL_rel.

Token ids: subjects ``[0, M)``, type-1 values, type-2 values, ..., grammar tokens, ``[sep]``, then (World-R)
the relation tokens ``r_1..r_L`` (the row order of the weight pictures of App. C.3.1).

Every sampler is batched (the Markov chains of all subsequences advance together; no per-sequence Python)
and returns a :class:`mechrecall.batch.Batch` with next-token ``targets`` (``-100`` = no target) and
``extras``: ``target [B]`` (the final attribute), ``pred_pos [B]`` (the position whose logits predict it),
``subject [B]`` (sequence / query subject), ``attr_type [B]`` (type of the target), ``lengths [B]``.

Also here: the §3.4 prompt prefixes (``X_{ℓ,t}``, Figs. 8, 16-18) and the natural-language prompts of the
pretrained-model extension (not in the paper): the paper's motivating example (§1) ``[Niagara Falls, Canada,
<sep>, Colosseum, Italy, <sep>, Parthenon, ] -> Greece`` — the relation is never named and must be inferred from
the in-context pairs. The same landmarks appear under two relations (country, city), plus a third relation on
people (birth year), so the relation type can only be read off the demonstrations. Prompts are
``"Subject: answer\\n"`` lines ending with ``"Query:"``; the answer is scored by the first token of
``" " + answer``. World sizes (:class:`WorldConfig`) live in ``presets.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from jaxtyping import Float, Int

from mechrecall.batch import Batch

from .presets import DIV_NORMS, WorldConfig, WorldConfigError

IGNORE = -100


# ----------------------------------------------------------------------------------------------- Div


def matrix_distance(
    a: Float[torch.Tensor, "... G G"], b: Float[torch.Tensor, "... G G"], norm: str = "row_mean_l1"
) -> torch.Tensor:
    """``‖A - B‖`` under one of :data:`DIV_NORMS`: entrywise ℓ1 / G (range [0, 2]), entrywise ℓ1, or the
    induced ℓ1 norm (max column sum)."""
    diff = (a - b).abs()
    if norm == "row_mean_l1":
        return diff.sum((-1, -2)) / diff.shape[-1]
    if norm == "entry_l1":
        return diff.sum((-1, -2))
    if norm == "induced_l1":
        return diff.sum(-2).amax(-1)
    raise WorldConfigError(f"div_norm={norm!r}; expected one of {DIV_NORMS}")


def pairwise_div(tms: Float[torch.Tensor, "L G G"], norm: str = "row_mean_l1") -> Float[torch.Tensor, "L L"]:
    """``[L, L]`` distances between the type chains (0 on the diagonal)."""
    return matrix_distance(tms[:, None], tms[None, :], norm)


def markov_div(tms: Float[torch.Tensor, "L G G"], norm: str = "row_mean_l1") -> float:
    """``Div := min_{ℓ≠ℓ'} ‖TM_ℓ − TM_ℓ'‖`` (§3.3, Fig. 6)."""
    d = pairwise_div(tms, norm)
    n = d.shape[0]
    if n < 2:
        return float("inf")
    return d[~torch.eye(n, dtype=torch.bool)].min().item()


def _dirichlet(n: int, g: int, alpha: float, gen: torch.Generator) -> Float[torch.Tensor, "n g g"]:
    """``n`` row-stochastic ``[g, g]`` matrices with rows ~ Dirichlet(α·1) (normalised Gamma draws)."""
    x = torch._standard_gamma(torch.full((n, g, g), float(alpha), dtype=torch.float64), generator=gen)
    x = x.clamp_min(1e-300)
    return x / x.sum(-1, keepdim=True)


def _chains(cfg: WorldConfig, gen: torch.Generator) -> Float[torch.Tensor, "L G G"]:
    L, G, norm = cfg.n_types, cfg.n_grammar, cfg.div_norm
    if cfg.div_method == "interpolate":
        base = _dirichlet(1, G, cfg.dirichlet_alpha, gen)[0]
        raw = _dirichlet(L, G, cfg.dirichlet_alpha, gen)
        if cfg.target_div is None or L < 2:
            return raw
        reach = markov_div(raw, norm)
        if cfg.target_div > reach:
            raise WorldConfigError(
                f"target_div={cfg.target_div} is unreachable with div_method='interpolate': the drawn chains "
                f"reach Div={reach:.3f} at most (G={G}, dirichlet_alpha={cfg.dirichlet_alpha}); lower target_div, "
                "lower dirichlet_alpha, or use target_div=None"
            )
        lam = cfg.target_div / reach
        return (1 - lam) * base + lam * raw  # every pairwise difference scales by λ: Div = target exactly
    # greedy_pool: the paper's "large pool of transition matrices + greedy selection" (App. B.1)
    pool = _dirichlet(cfg.pool_size, G, cfg.pool_alpha or cfg.dirichlet_alpha, gen)
    if cfg.target_div is None:
        return pool[:L]
    chosen = [int(torch.randint(cfg.pool_size, (1,), generator=gen))]
    for _ in range(L - 1):
        dmin = torch.stack([matrix_distance(pool, pool[c], norm) for c in chosen]).amin(0)
        dmin[chosen] = -1.0
        ok = dmin >= cfg.target_div
        pick = (
            int(torch.where(ok, dmin, torch.full_like(dmin, float("inf"))).argmin()) if ok.any() else int(dmin.argmax())
        )
        chosen.append(pick)
    tms = pool[chosen]
    achieved = markov_div(tms, norm)
    if achieved < 0.95 * cfg.target_div:
        raise WorldConfigError(
            f"target_div={cfg.target_div} is unreachable with div_method='greedy_pool': the pool of {cfg.pool_size} "
            f"matrices (pool_alpha={cfg.pool_alpha or cfg.dirichlet_alpha}) gives Div={achieved:.3f}; change "
            "pool_alpha (about 100 / 10 / 3 for Div 0.1 / 0.3 / 0.5) or use div_method='interpolate'"
        )
    return tms


# ----------------------------------------------------------------------------------------------- world


@dataclass
class World:
    """A drawn world: the attribute table and (World-G) the grammar chains."""

    cfg: WorldConfig
    attributes: Int[torch.Tensor, "M L"]  # token id of a_j^ℓ
    transitions: Float[torch.Tensor, "L G G"]  # TM_ℓ (World-G)
    transition_generic: Float[torch.Tensor, "G G"]  # TM_0 (grammar-only filler)

    @property
    def V(self) -> int:
        return self.cfg.d_vocab

    def div(self, norm: str = "row_mean_l1") -> float:
        return markov_div(self.transitions, norm)

    def value_ids(self, ell: int) -> Int[torch.Tensor, " M_l"]:
        off = self.cfg.value_offsets[ell]
        return torch.arange(off, off + self.cfg.n_values[ell])

    def type_of_token(self) -> Int[torch.Tensor, "V"]:
        """Attribute type of every token id (``-1`` for non-attribute tokens)."""
        out = torch.full((self.V,), -1, dtype=torch.long)
        for ell, off in enumerate(self.cfg.value_offsets):
            out[off : off + self.cfg.n_values[ell]] = ell
        return out

    def relation(self, ell: int | Int[torch.Tensor, "..."]) -> int | Int[torch.Tensor, "..."]:
        if not self.cfg.relation_tokens:
            raise WorldConfigError("this is a World-G config (relation_tokens=False); it has no relation tokens")
        return self.cfg.relation_offset + ell


def build_world(cfg: WorldConfig) -> World:
    """Draw the world of ``cfg`` (seeded by ``cfg.seed``): a balanced attribute table — for each type ℓ a random
    permutation π_ℓ of the subjects and ``a_j^ℓ = π_ℓ(j) mod M_ℓ``, so every value is held by ⌊M/M_ℓ⌋ or
    ⌈M/M_ℓ⌉ subjects (the balance the Theorem 2 analysis assumes) — and the L + 1 grammar chains."""
    cfg.validate()
    gen = torch.Generator().manual_seed(cfg.seed)
    cols = []
    for ell, m in enumerate(cfg.n_values):
        perm = torch.randperm(cfg.n_subjects, generator=gen)
        cols.append(cfg.value_offsets[ell] + perm % m)
    attributes = torch.stack(cols, 1)
    tms = _chains(cfg, gen).float()
    generic = _dirichlet(1, cfg.n_grammar, cfg.dirichlet_alpha, gen)[0].float()
    return World(cfg, attributes, tms, generic)


def split_subjects(world: World, n_finetune: int, seed: int) -> tuple[Int[torch.Tensor, " n"], Int[torch.Tensor, " m"]]:
    """A seeded split of the subjects: ``(finetuning subset 𝒮', held-out 𝒮∖𝒮')`` (§3.2: 50% by default)."""
    M = world.cfg.n_subjects
    if not isinstance(n_finetune, int) or not 1 <= n_finetune <= M:
        raise WorldConfigError(
            f"finetuning subset n_finetune={n_finetune!r} is larger than M={M} subjects "
            f"(or < 1); expected 1 <= n_finetune <= {M}"
        )
    perm = torch.randperm(M, generator=torch.Generator().manual_seed(seed))
    return perm[:n_finetune].sort().values, perm[n_finetune:].sort().values


def check_task(
    world: World,
    *,
    n_demos: int | None = None,
    pools: Sequence[torch.Tensor] = (),
    n_ctx: int | None = None,
    seq_len: int | None = None,
) -> None:
    """Consistency of a task with its world, before any training (:class:`WorldConfigError` naming the value)."""
    for pool in pools:
        if len(pool) == 0:
            raise WorldConfigError("an empty subject pool; expected at least one subject")
        if n_demos is not None and n_demos > len(pool):
            raise WorldConfigError(
                f"n_demos={n_demos} demonstrations but the subject pool has only {len(pool)} "
                "subjects; use fewer demonstrations or a larger pool"
            )
    if n_ctx is not None and seq_len is not None and seq_len > n_ctx:
        raise WorldConfigError(f"sequence length {seq_len} is longer than the model's n_ctx={n_ctx}")


# ----------------------------------------------------------------------------------------------- sampling


def markov_runs(
    tms: Float[torch.Tensor, "K G G"], which: Int[torch.Tensor, " n"], length: int, gen: torch.Generator
) -> Int[torch.Tensor, "n length"]:
    """``n`` grammar runs (indices in ``[0, G)``), run ``i`` from chain ``tms[which[i]]``; first token uniform."""
    n, G = which.shape[0], tms.shape[-1]
    out = torch.empty(n, length, dtype=torch.long)
    if length == 0:
        return out
    out[:, 0] = torch.randint(G, (n,), generator=gen)
    for t in range(1, length):
        probs = tms[which, out[:, t - 1]]  # [n, G]
        out[:, t] = torch.multinomial(probs, 1, generator=gen)[:, 0]
    return out


def _pick(pool: torch.Tensor, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    return pool[torch.randint(len(pool), shape, generator=gen)]


def _next_token_batch(
    full: Int[torch.Tensor, "B T1"],
    lengths: Int[torch.Tensor, " B"],
    subject: Int[torch.Tensor, " B"],
    attr_type: Int[torch.Tensor, " B"],
    loss: Literal["all", "last"] = "all",
) -> Batch:
    """Inputs ``full[:, :-1]``, targets ``full[:, 1:]`` (``-100`` beyond each sequence); the final token of each
    sequence is ``target`` and is predicted at ``pred_pos = length - 2``."""
    B, T1 = full.shape
    tokens = full[:, :-1].clone()
    targets = full[:, 1:].clone()
    pos = torch.arange(T1 - 1)[None, :]
    valid = pos < (lengths[:, None] - 1)
    targets[~valid] = IGNORE
    pred_pos = lengths - 2
    target = full[torch.arange(B), lengths - 1]
    mask = valid if loss == "all" else (pos == pred_pos[:, None])
    return Batch(
        tokens,
        targets,
        mask,
        {"target": target, "pred_pos": pred_pos, "subject": subject, "attr_type": attr_type, "lengths": lengths - 1},
    )


#: where the loss of a finetuning mix sits (the paper says only "the standard next-token prediction objective" for
#: World-G, §3.2; "last-token" for World-R, §4): ``all`` every next token of the sequence, grammar targets included
#: (the literal reading); ``attributes`` only the positions whose next token is an attribute value (the attribute-
#: target reading); ``last`` only the final answer (at ``pred_pos``)
LOSS_READINGS = ("all", "attributes", "last")


def with_loss(batch: Batch, world: World, reading: str) -> Batch:
    """``batch`` with its loss mask on the positions of ``reading`` (:data:`LOSS_READINGS`), inside each sequence
    (padded targets ``-100`` never carry loss); tokens and targets unchanged."""
    if reading not in LOSS_READINGS:
        raise WorldConfigError(f"loss reading {reading!r}; expected one of {LOSS_READINGS}")
    targets = batch.targets
    valid = targets != IGNORE
    if reading == "all":
        mask = valid
    elif reading == "attributes":
        types = world.type_of_token().to(targets.device)
        mask = valid & (types[targets.clamp(min=0)] >= 0)
    else:
        pos = torch.arange(targets.shape[1], device=targets.device)[None, :]
        mask = pos == batch.extras["pred_pos"].to(targets.device)[:, None]
    return Batch(batch.tokens, targets, mask, dict(batch.extras))


def sample_pt(
    world: World,
    batch: int,
    gen: torch.Generator,
    *,
    subjects: torch.Tensor | None = None,
    force_last_factual: bool = False,
) -> Batch:
    """World-G PT sequences (§2): one subject, N_tr subject–grammar–attribute subsequences with i.i.d. types
    joined by ``[sep]``, each replaced by a grammar-only run of length S+2 with probability p_G.
    ``force_last_factual``: the last subsequence is never replaced (evaluation sequences)."""
    c = world.cfg
    if c.relation_tokens:
        raise WorldConfigError("sample_pt needs a World-G config (relation_tokens=False); use sample_pt_rel")
    S, N = c.grammar_len, c.n_subseq
    subj = _pick(torch.arange(c.n_subjects) if subjects is None else subjects, (batch,), gen)
    types = torch.randint(c.n_types, (batch, N), generator=gen)
    gram = markov_runs(world.transitions, types.reshape(-1), S, gen).view(batch, N, S) + c.grammar_offset
    filler = markov_runs(world.transition_generic[None], torch.zeros(batch * N, dtype=torch.long), S + 2, gen)
    filler = filler.view(batch, N, S + 2) + c.grammar_offset
    replace_ = torch.rand(batch, N, generator=gen) < c.p_grammar_only
    if force_last_factual:
        replace_[:, -1] = False
    attrs = world.attributes[subj[:, None], types]  # [B, N]
    sub = torch.cat([subj[:, None, None].expand(batch, N, 1), gram, attrs[..., None]], -1)  # [B, N, S+2]
    sub = torch.where(replace_[..., None], filler, sub)
    sep = torch.full((batch, N, 1), c.sep, dtype=torch.long)
    full = torch.cat([sub, sep], -1).view(batch, -1)[:, :-1]  # T = (S+3) N - 1
    lengths = torch.full((batch,), full.shape[1], dtype=torch.long)
    return _next_token_batch(full, lengths, subj, types[:, -1])


def sample_icl(
    world: World,
    batch: int,
    n_demos: int,
    gen: torch.Generator,
    *,
    demo_subjects: torch.Tensor,
    query_subjects: torch.Tensor | None = None,
    grammar_len: int | tuple[int, int] = 0,
    attr_type: int | None = None,
    shuffle_subjects: bool = False,
) -> Batch:
    """World-G ICL (``grammar_len=0``) or ICL+Grm sequences (§2).

    ICL: ``[s_1, a_1, [sep], ..., [sep], s_q, a_q]`` — the answer is predicted at the query subject.
    ICL+Grm: each pair gets a grammar run of length S_ft from TM_ℓ between subject and attribute; ``grammar_len``
    ``(lo, hi)`` draws S_ft ~ U{lo..hi} once per sequence (right-padded batch, padded targets ``-100``).
    Demonstration subjects come from ``demo_subjects``, the query from ``query_subjects`` (default the same
    pool), i.i.d. with replacement. ``shuffle_subjects`` (a control, not in the paper): every subject token shown is
    replaced by an independent draw from the same pool while the attributes stay those of the drawn subjects, so no
    pair in the prompt is a stored fact (``extras["subject"]`` stays the subject whose attribute is the target).
    """
    c = world.cfg
    if c.relation_tokens:
        raise WorldConfigError("sample_icl needs a World-G config; use sample_icl_rel for World-R")
    query_subjects = demo_subjects if query_subjects is None else query_subjects
    check_task(world, n_demos=n_demos, pools=(demo_subjects, query_subjects))
    lo, hi = (grammar_len, grammar_len) if isinstance(grammar_len, int) else grammar_len
    if not 0 <= lo <= hi:
        raise WorldConfigError(f"grammar_len={grammar_len!r}; expected an int >= 0 or (lo, hi) with 0 <= lo <= hi")
    m = n_demos + 1
    subj = torch.cat([_pick(demo_subjects, (batch, n_demos), gen), _pick(query_subjects, (batch, 1), gen)], 1)
    ell = (
        torch.randint(c.n_types, (batch,), generator=gen)
        if attr_type is None
        else torch.full((batch,), int(attr_type), dtype=torch.long)
    )
    s_ft = torch.randint(lo, hi + 1, (batch,), generator=gen)
    gram = markov_runs(world.transitions, ell.repeat_interleave(m), hi, gen).view(batch, m, hi) + c.grammar_offset
    attrs = world.attributes[subj, ell[:, None].expand(batch, m)]  # [B, m]
    # subsequence i of sequence b: [s, g_1..g_{S_ft[b]}, a] then [sep]; positions built with one scatter
    unit = s_ft + 3  # tokens per subsequence incl. its [sep]
    lengths = unit * m - 1
    T = int(lengths.max())
    full = torch.full((batch, T + 1), c.sep, dtype=torch.long)
    rows = torch.arange(batch)[:, None]
    starts = unit[:, None] * torch.arange(m)[None, :]  # [B, m]
    shown = subj
    if shuffle_subjects:
        shown = torch.cat([_pick(demo_subjects, (batch, n_demos), gen), _pick(query_subjects, (batch, 1), gen)], 1)
    full[rows, starts] = shown
    full[rows, starts + s_ft[:, None] + 1] = attrs
    if hi > 0:
        k = torch.arange(hi)[None, None, :]
        gpos = starts[..., None] + 1 + k  # [B, m, hi]
        keep = (k < s_ft[:, None, None]).expand(batch, m, hi)
        full[rows[..., None].expand(batch, m, hi)[keep], gpos[keep]] = gram[keep]
    full = full[:, :T]
    return _next_token_batch(full, lengths, subj[:, -1], ell)


def sample_pt_rel(world: World, batch: int, gen: torch.Generator, *, subjects: torch.Tensor | None = None) -> Batch:
    """World-R PT_rel (§4, Eq. 2): N_tr subsequences ``[s, g_1..g_S, [sep], a]`` of one subject, with the relation
    token ``r_ℓ`` in one uniformly chosen grammar slot and i.i.d. uniform grammar elsewhere; no separator between
    subsequences. The input stops at the last ``[sep]`` (length (S+3)N_tr - 1); all positions are trained."""
    c = world.cfg
    if not c.relation_tokens:
        raise WorldConfigError("sample_pt_rel needs a World-R config (relation_tokens=True)")
    S, N = c.grammar_len, c.n_subseq
    subj = _pick(torch.arange(c.n_subjects) if subjects is None else subjects, (batch,), gen)
    types = torch.randint(c.n_types, (batch, N), generator=gen)
    gram = torch.randint(c.n_grammar, (batch, N, S), generator=gen) + c.grammar_offset
    slot = torch.randint(S, (batch, N), generator=gen)
    gram.scatter_(2, slot[..., None], (c.relation_offset + types)[..., None])
    attrs = world.attributes[subj[:, None], types]
    sep = torch.full((batch, N, 1), c.sep, dtype=torch.long)
    full = torch.cat([subj[:, None, None].expand(batch, N, 1), gram, sep, attrs[..., None]], -1).view(batch, -1)
    lengths = torch.full((batch,), full.shape[1], dtype=torch.long)
    return _next_token_batch(full, lengths, subj, types[:, -1])


def icl_rel_from_subjects(world: World, subj: Int[torch.Tensor, "B m"], ell: Int[torch.Tensor, " B"]) -> Batch:
    """ICL_rel sequences ``[s_1, [sep], a_1, ..., s_m, [sep]] -> a_m`` for given subjects and types (Eq. 3)."""
    c = world.cfg
    batch, m = subj.shape
    attrs = world.attributes[subj, ell[:, None].expand(batch, m)]
    sep = torch.full((batch, m), c.sep, dtype=torch.long)
    full = torch.stack([subj, sep, attrs], -1).view(batch, -1)
    lengths = torch.full((batch,), full.shape[1], dtype=torch.long)
    return _next_token_batch(full, lengths, subj[:, -1], ell, loss="last")


def sample_icl_rel(
    world: World,
    batch: int,
    n_demos: int,
    gen: torch.Generator,
    *,
    demo_subjects: torch.Tensor,
    query_subjects: torch.Tensor | None = None,
    attr_type: int | None = None,
) -> Batch:
    """World-R ICL_rel (§4, Eq. 3), length 3(N_ft+1) - 1; the loss is on the last token only (§4)."""
    c = world.cfg
    if not c.relation_tokens:
        raise WorldConfigError("sample_icl_rel needs a World-R config (relation_tokens=True)")
    query_subjects = demo_subjects if query_subjects is None else query_subjects
    check_task(world, n_demos=n_demos, pools=(demo_subjects, query_subjects))
    subj = torch.cat([_pick(demo_subjects, (batch, n_demos), gen), _pick(query_subjects, (batch, 1), gen)], 1)
    ell = (
        torch.randint(c.n_types, (batch,), generator=gen)
        if attr_type is None
        else torch.full((batch,), int(attr_type), dtype=torch.long)
    )
    return icl_rel_from_subjects(world, subj, ell)


def all_icl_rel(world: World, n_demos: int, pool: torch.Tensor, *, query_pool: torch.Tensor | None = None) -> Batch:
    """Every ICL_rel sequence over ``pool`` (demos) × ``query_pool`` × types, each once: the exact population of
    the Theorem 2 finetuning distribution (uniform over it). ``|pool|^N_ft · |query_pool| · L`` sequences."""
    query_pool = pool if query_pool is None else query_pool
    grids = [pool] * n_demos + [query_pool]
    subj = torch.cartesian_prod(*grids) if len(grids) > 1 else query_pool[:, None]
    subj = subj.view(-1, n_demos + 1)
    L = world.cfg.n_types
    ell = torch.arange(L).repeat_interleave(subj.shape[0])
    return icl_rel_from_subjects(world, subj.repeat(L, 1), ell)


def population_size(n_demos: int, pool: int, query_pool: int, n_types: int) -> int:
    return pool**n_demos * query_pool * n_types


# ----------------------------------------------------------------------------------------------- §3.4 prompts


def prefix_subjects(
    world: World,
    K: int,
    max_t: int,
    gen: torch.Generator,
    *,
    demo_subjects: torch.Tensor,
    query_subjects: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``K`` base prompts per type: subjects ``[L*K, max_t + 1]`` (``max_t`` demos then the query) and the type
    ``[L*K]``. Prefixes of the same base prompt give every ``t`` (the context is held fixed as ``t`` varies)."""
    query_subjects = demo_subjects if query_subjects is None else query_subjects
    L = world.cfg.n_types
    subj = torch.cat([_pick(demo_subjects, (L * K, max_t), gen), _pick(query_subjects, (L * K, 1), gen)], 1)
    return subj, torch.arange(L).repeat_interleave(K)


def icl_prefix_tokens(world: World, subj: torch.Tensor, ell: torch.Tensor, t: int) -> torch.Tensor:
    """World-G ICL prompts ``X_{ℓ,t} = [s_1, a_1, [sep], ..., s_t, a_t, [sep], s_q]``: ``[n, 3t + 1]``."""
    n = subj.shape[0]
    demos = subj[:, :t]
    attrs = world.attributes[demos, ell[:, None].expand(n, t)]
    sep = torch.full((n, t), world.cfg.sep, dtype=torch.long)
    body = torch.stack([demos, attrs, sep], -1).view(n, 3 * t)
    return torch.cat([body, subj[:, -1:]], 1)


# ------------------------------------------------------------------------------------------- natural-language prompts

#: (landmark, city, country)
LANDMARKS = (
    ("Eiffel Tower", "Paris", "France"),
    ("Colosseum", "Rome", "Italy"),
    ("Parthenon", "Athens", "Greece"),
    ("Big Ben", "London", "England"),
    ("Brandenburg Gate", "Berlin", "Germany"),
    ("Sagrada Familia", "Barcelona", "Spain"),
    ("Kremlin", "Moscow", "Russia"),
    ("Forbidden City", "Beijing", "China"),
    ("Meiji Shrine", "Tokyo", "Japan"),
    ("Taj Mahal", "Agra", "India"),
    ("Christ the Redeemer", "Rio", "Brazil"),
    ("Great Pyramid", "Giza", "Egypt"),
    ("Uffizi Gallery", "Florence", "Italy"),
    ("Alhambra", "Granada", "Spain"),
    ("CN Tower", "Toronto", "Canada"),
    ("Golden Gate Bridge", "San Francisco", "USA"),
    ("Hagia Sophia", "Istanbul", "Turkey"),
    ("Petronas Towers", "Kuala Lumpur", "Malaysia"),
    ("Rijksmuseum", "Amsterdam", "Netherlands"),
    ("Space Needle", "Seattle", "USA"),
)

#: (person, birth year)
PEOPLE = (
    ("Albert Einstein", "1879"),
    ("Marie Curie", "1867"),
    ("Charles Darwin", "1809"),
    ("Abraham Lincoln", "1809"),
    ("Wolfgang Amadeus Mozart", "1756"),
    ("Ludwig van Beethoven", "1770"),
    ("Napoleon Bonaparte", "1769"),
    ("William Shakespeare", "1564"),
    ("Leonardo da Vinci", "1452"),
    ("Galileo Galilei", "1564"),
    ("Nikola Tesla", "1856"),
    ("Mahatma Gandhi", "1869"),
    ("Winston Churchill", "1874"),
    ("Pablo Picasso", "1881"),
    ("Vincent van Gogh", "1853"),
    ("Johann Sebastian Bach", "1685"),
    ("Queen Victoria", "1819"),
    ("George Washington", "1732"),
    ("Alan Turing", "1912"),
    ("Ada Lovelace", "1815"),
)

#: relation name -> ((subject, answer), ...)
RELATIONS = {
    "landmark_country": tuple((l, c) for l, _, c in LANDMARKS),
    "landmark_city": tuple((l, city) for l, city, _ in LANDMARKS),
    "person_birth_year": PEOPLE,
}


def prompt_text(pairs: Sequence[tuple[str, str]], query: str) -> str:
    """``"S1: A1\\nS2: A2\\n...\\nQuery:"``."""
    return "".join(f"{s}: {a}\n" for s, a in pairs) + f"{query}:"


def vocabulary() -> list[str]:
    """Every word the prompts use (for a tiny word-level test tokenizer)."""
    words = {":"}
    for pairs in RELATIONS.values():
        for s, a in pairs:
            words.update(s.split())
            words.update(a.split())
    return sorted(words)
