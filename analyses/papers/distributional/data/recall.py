"""Noisy in-context recall and its variants (Chen, Bruna & Bietti, §3, App. B.4, G, J).

A trigger ``q`` is followed by the sequence's own answer ``ȳ`` with probability ``1 - α`` and by a fixed
generic noise token ``τ`` with probability ``α``; every other token follows a character bigram model.
Predicting ``ȳ`` needs in-context recall (an induction head), predicting ``τ`` only a distributional
association ``q -> τ`` (which the paper finds in the feed-forward layers).

Generation of one sequence (paper §3 "Data and task", items i-iii; ids are 0-indexed here):

1. ``ȳ ~ Uniform(pool)`` -- one per trigger (multi-trigger, App. B.4).
2. ``z_1 ~ π_u``; ``z_{t+1} ~ p_{α,ȳ}`` if ``z_t`` is a trigger (``ȳ`` w.p. ``1-α``, ``τ`` w.p. ``α``),
   else ``z_{t+1} ~ π_b(· | z_t)``. After an *appended* ``τ`` (id ``N``, where π_b is undefined) the next
   token is drawn from ``π_u`` (``after_noise="unigram"``) or from ``π_b(· | trigger before τ)``
   (``"bigram_of_trigger"``).
3. ``paper_text``: force ``z_T = q`` (multi-trigger: a trigger drawn uniformly from Q) and draw
   ``y = z_{T+1} ~ p_{α,ȳ}``; ``official_code``: no forcing, the chain simply runs to ``z_{T+1}``.

Every generator builds ``seq = z_{1..T+1}`` (``[B, T+1]``) and returns ``tokens = seq[:, :T]``,
``targets = seq[:, 1:]`` (the next token at every position, all meaningful), and a ``loss_mask``:
``"last"`` (position ``T``, paper text) or ``"trigger_repeat"`` (every position whose input is a trigger at
its 2nd or later occurrence, ``outs >= 2``; official code ``leichen2018/ATTN_vs_MLP``).

Presets: ``NoisyICLConfig.preset("paper_text")`` -- τ appended as id 65
(``d_vocab = 66``), ȳ uniform over the 65 characters, ``z_T = q``, last-position loss;
``NoisyICLConfig.preset("official_code")`` (also the defaults) -- τ = character id 2 (``'!'``,
``d_vocab = 65``), ȳ uniform over all 65 ids (it can be ``q`` or ``τ``), no forcing, ``outs >= 2`` loss.

Sampling is vectorised over the batch: one batched draw per position (``T`` sequential steps, no Python
loop over sequences), from an integer look-up table (row ``r`` lists every token ``j`` ``count[r, j]`` times,
so ``z = LUT[floor(off[r] + u * total[r])]`` is a draw from the exact counts; the only error is float64
rounding of the index, < 2^-30 relative). All randomness comes from the ``torch.Generator`` passed in, and
tensors live on its device (CPU or GPU).
``sample_noisy_icl_reference`` is a plain per-sequence Python version of the same distribution.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from jaxtyping import Float, Int

from mechrecall.batch import Batch

__all__ = [
    "DATA_PRESETS",
    "MULTI_TRIGGERS",
    "LAMData",
    "NoisyICLConfig",
    "noisy_icl_batch_fn",
    "sample_lam",
    "sample_noisy_icl",
    "sample_noisy_icl_reference",
    "sample_synthetic_ioi",
]

IGNORE = -100
MULTI_TRIGGERS = (1, 39, 43, 53, 58)  # ' ', 'a', 'e', 'o', 't': the 5 most frequent characters (App. B.4, Fig. 9)
_DISTRIBUTIONS = ("tiny_shakespeare", "uniform")
_OUTPUT_POOLS = ("all_vocab", "ordinary")
_LOSS_POSITIONS = ("trigger_repeat", "last")
_AFTER_NOISE = ("unigram", "bigram_of_trigger")
MIN_SEQ_LEN = 3  # q, ȳ, q: the shortest context in which the answer to a trigger is already present


@dataclass(frozen=True)
class NoisyICLConfig:
    """The noisy in-context recall data distribution. Defaults = the ``official_code`` preset.

    n_tokens: ``N`` ordinary tokens, ids ``0..N-1`` (65 characters with the tiny-Shakespeare statistics).
    noise_token_id: ``τ``. ``None`` (or ``N``) appends it as id ``N`` (``d_vocab = N + 1``, paper text);
        an id in ``[0, N)`` reuses an ordinary token (``d_vocab = N``; the official code uses 2 = ``'!'``).
    seq_len: ``T``, the model's input length (the generator draws ``T + 1`` tokens). ``T >= 3``.
    alpha: noise probability ``α`` after a trigger (train 0.5; test 0).
    triggers: the trigger ids ``Q`` (``(1,)``; ``MULTI_TRIGGERS`` for App. B.4), ordinary and ``!= τ``.
    unigram, bigram: ``"tiny_shakespeare"`` (needs ``N = 65``) or ``"uniform"`` over the ``N`` ordinary ids
        (theory variant, App. D-F).
    output_pool: where ``ȳ`` is drawn from: ``"ordinary"`` = ``[N]`` minus ``τ`` (paper text: ``[N]``);
        ``"all_vocab"`` = every id of ``d_vocab`` (official code: all 65 ids, including ``τ = 2``).
    exclude_trigger_output: draw ``ȳ_q`` from the pool without ``q`` itself (official ``no_repeat``).
    force_last_trigger: set ``z_T`` to a trigger (paper text) before drawing ``y = z_{T+1}``.
    loss_positions: ``"trigger_repeat"`` (``outs >= 2``) or ``"last"``.
    after_noise: successor of an appended ``τ``: ``"unigram"`` (π_u) or ``"bigram_of_trigger"``
        (π_b of the trigger just before ``τ``). Ignored when ``τ`` is an ordinary token.
    """

    n_tokens: int = 65
    noise_token_id: int | None = 2
    seq_len: int = 256
    alpha: float = 0.5
    triggers: tuple[int, ...] = (1,)
    unigram: str = "tiny_shakespeare"
    bigram: str = "tiny_shakespeare"
    output_pool: str = "all_vocab"
    exclude_trigger_output: bool = False
    force_last_trigger: bool = False
    loss_positions: str = "trigger_repeat"
    after_noise: str = "unigram"

    def __post_init__(self) -> None:
        if isinstance(self.triggers, int) and not isinstance(self.triggers, bool):
            object.__setattr__(self, "triggers", (self.triggers,))
        elif isinstance(self.triggers, (list, torch.Tensor)):
            object.__setattr__(self, "triggers", tuple(int(q) for q in self.triggers))
        _check_int("n_tokens", self.n_tokens, 2)
        N = self.n_tokens
        if self.noise_token_id is not None:
            _check_int("noise_token_id", self.noise_token_id, 0)
            if self.noise_token_id > N:
                raise ValueError(
                    f"NoisyICLConfig.noise_token_id={self.noise_token_id!r}; expected None (append as id "
                    f"n_tokens={N}), {N}, or an ordinary id in [0, {N})"
                )
        _check_int("seq_len", self.seq_len, MIN_SEQ_LEN, why=" (q, ȳ, q: the answer must fit in the context)")
        _check_alpha(self.alpha, "NoisyICLConfig.alpha")
        if not isinstance(self.triggers, tuple) or not self.triggers:
            raise ValueError(f"NoisyICLConfig.triggers={self.triggers!r}; expected a non-empty tuple of token ids")
        for q in self.triggers:
            if isinstance(q, bool) or not isinstance(q, int) or not 0 <= q < N:
                raise ValueError(f"NoisyICLConfig.triggers contains {q!r}; expected ordinary token ids in [0, {N})")
            if q == self.tau:
                raise ValueError(
                    f"NoisyICLConfig.triggers contains {q!r}, the noise token id; a trigger must differ from τ"
                )
        if len(set(self.triggers)) != len(self.triggers):
            raise ValueError(f"NoisyICLConfig.triggers={self.triggers!r} has duplicates")
        for name in ("unigram", "bigram"):
            value = getattr(self, name)
            if value not in _DISTRIBUTIONS:
                raise ValueError(f"NoisyICLConfig.{name}={value!r}; expected one of {_DISTRIBUTIONS}")
            if value == "tiny_shakespeare" and N != 65:
                raise ValueError(
                    f"NoisyICLConfig.{name}='tiny_shakespeare' needs n_tokens=65 (the characters), got {N}; "
                    "use 'uniform' for other vocabulary sizes"
                )
        _check_choice("output_pool", self.output_pool, _OUTPUT_POOLS)
        _check_choice("loss_positions", self.loss_positions, _LOSS_POSITIONS)
        _check_choice("after_noise", self.after_noise, _AFTER_NOISE)
        for name in ("exclude_trigger_output", "force_last_trigger"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"NoisyICLConfig.{name}={getattr(self, name)!r}; expected a bool")
        if min(len(p) for p in self.output_pools()) < 1:
            raise ValueError(
                f"NoisyICLConfig: the output pool {self.output_pool!r} is empty once triggers are excluded"
            )

    # ------------------------------------------------------------------ derived quantities

    @property
    def tau(self) -> int:
        """The noise token id τ (``n_tokens`` when appended)."""
        return self.n_tokens if self.noise_token_id is None else self.noise_token_id

    @property
    def noise_appended(self) -> bool:
        return self.tau == self.n_tokens

    @property
    def d_vocab(self) -> int:
        """Model vocabulary: ``N + 1`` with an appended τ, else ``N``."""
        return self.n_tokens + int(self.noise_appended)

    def output_pools(self) -> list[list[int]]:
        """For each trigger (in ``triggers`` order) the ids its ``ȳ`` is drawn uniformly from."""
        if self.output_pool == "all_vocab":
            base = list(range(self.d_vocab))
        else:
            base = [i for i in range(self.n_tokens) if i != self.tau]
        return [[i for i in base if not (self.exclude_trigger_output and i == q)] for q in self.triggers]

    def replace(self, **overrides: Any) -> "NoisyICLConfig":
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "NoisyICLConfig":
        """``"paper_text"`` or ``"official_code"``, with field overrides.

        ``preset("official_code", triggers=MULTI_TRIGGERS)`` is the App. B.4 multi-trigger run.
        """
        if name not in DATA_PRESETS:
            raise ValueError(f"unknown NoisyICLConfig preset {name!r}; expected one of {tuple(DATA_PRESETS)}")
        unknown = set(overrides) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown NoisyICLConfig field(s) {sorted(unknown)}; expected fields of NoisyICLConfig")
        return cls(**{**DATA_PRESETS[name], **overrides})


DATA_PRESETS: dict[str, dict] = {
    # Paper §3 text: τ = N + 1 appended (0-indexed id 65), ȳ ~ U([N]), z_T = q, loss on ξ_T only.
    "paper_text": dict(
        noise_token_id=None,
        output_pool="ordinary",
        force_last_trigger=True,
        loss_positions="last",
        after_noise="unigram",
    ),
    # leichen2018/ATTN_vs_MLP script_k1_noise05.sh: τ = '!' (id 2), ȳ ~ U(all 65 ids), T+1 tokens, loss on outs >= 2.
    "official_code": dict(
        noise_token_id=2, output_pool="all_vocab", force_last_trigger=False, loss_positions="trigger_repeat"
    ),
}


def _check_int(name: str, value: Any, low: int, why: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"NoisyICLConfig.{name}={value!r}; expected an int >= {low}{why}")


def _check_choice(name: str, value: Any, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(f"NoisyICLConfig.{name}={value!r}; expected one of {choices}")


def _check_alpha(alpha: Any, what: str = "alpha") -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"{what}={alpha!r}; expected a probability in [0, 1]")
    return float(alpha)


def _check_batch(batch: Any) -> None:
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch={batch!r}; expected an int >= 1")


def _check_generator(generator: Any) -> None:
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator={generator!r}; expected a torch.Generator (e.g. torch.Generator().manual_seed(0))")


# ---------------------------------------------------------------------------------------------------- tables


def _count_tables(unigram: str, bigram: str, N: int) -> tuple[list[int], list[list[int]]]:
    """Integer counts: the unigram ``[N]`` and the transition rows ``[N + 1][N]`` over the ordinary ids.

    Rows ``0..N-1``: π_b (a zero-count row falls back to π_u, as ``CharStats.pi_b`` does); row ``N``: π_u
    (start token, and the successor of an appended τ with ``after_noise="unigram"``).
    """
    if "tiny_shakespeare" in (unigram, bigram):
        from analyses.papers.distributional.data.char_stats import load_char_stats

        stats = load_char_stats()
    uni = stats.unigram_counts.tolist() if unigram == "tiny_shakespeare" else [1] * N
    if bigram == "tiny_shakespeare":
        rows = [r if sum(r) > 0 else list(uni) for r in stats.bigram_counts.tolist()]
    else:
        rows = [[1] * N for _ in range(N)]
    return uni, [*rows, list(uni)]


def _token_dtype(d_vocab: int) -> torch.dtype:
    return torch.uint8 if d_vocab <= 256 else torch.int16 if d_vocab <= 2**15 else torch.int64


@functools.lru_cache(maxsize=32)
def _lut(unigram: str, bigram: str, n_tokens: int, tau: int, d_vocab: int, device: str) -> dict[str, torch.Tensor]:
    """The exact look-up table every draw of the vectorised chain is one ``take`` from.

    ``lut`` (uint8 for ``d_vocab <= 256``) concatenates, for each row ``r`` of the count table of
    ``_count_tables`` (``N`` bigram rows, then the unigram row ``N``), every token ``j`` repeated ``count[r, j]``
    times plus one repeat of the row's last token (so that ``u * total`` rounding up to ``total`` still lands in
    the row): row ``r`` starts at ``row_off[r]`` and a draw is ``lut[floor(row_off[r] + u * row_tot[r])]``, ``u ~
    U[0, 1)``. Then, for every id ``v < d_vocab``, the 3-entry segments ``[v, τ, τ]`` (start ``seg_lo[v]``) and
    ``[τ, v, v]`` (``seg_hi[v]``): the trigger rule ``p_{α,ȳ}`` is a draw from ``seg_lo[ȳ]`` with total
    ``1/(1-α)`` (α <= 1/2: ``ȳ`` iff ``u < 1-α``) or from ``seg_hi[ȳ]`` with total ``1/α`` (α > 1/2: ``τ`` iff ``u
    < α``). Offsets/totals float64.
    """
    _, rows = _count_tables(unigram, bigram, n_tokens)
    counts = torch.tensor(rows, dtype=torch.int64)  # [N+1, N]
    total = counts.sum(1)
    ids = torch.arange(n_tokens).expand_as(counts)
    pad = torch.zeros_like(counts)
    last = (counts > 0).long().cumsum(1).argmax(1)  # last id with a non-zero count
    pad[torch.arange(len(rows)), last] = 1
    rows_lut = torch.repeat_interleave(ids.flatten(), (counts + pad).flatten())
    row_off = torch.cumsum(total + 1, 0) - (total + 1)
    v = torch.arange(d_vocab)
    t = torch.full_like(v, tau)
    seg_lo = torch.stack([v, t, t], 1).flatten()
    seg_hi = torch.stack([t, v, v], 1).flatten()
    n = len(rows_lut)
    # token ids in the smallest integer type that holds them: the table (2.2 M entries for tiny Shakespeare)
    # then stays in cache, and the chain's state vector is that type too
    lut = torch.cat([rows_lut, seg_lo, seg_hi]).to(_token_dtype(d_vocab))
    out = dict(
        lut=lut,
        row_off=row_off.double(),
        row_tot=total.double(),
        seg_lo=(n + 3 * v).double(),
        seg_hi=(n + 3 * d_vocab + 3 * v).double(),
    )
    return {k: x.to(device) for k, x in out.items()}


# ---------------------------------------------------------------------------------------------------- sampling


def _draw_ybar(cfg: NoisyICLConfig, batch: int, generator: torch.Generator) -> Int[torch.Tensor, "batch n_triggers"]:
    """``[B, k]``: ``ȳ_q`` for every trigger ``q`` (uniform over its output pool)."""
    device = generator.device
    pools = torch.tensor(cfg.output_pools(), dtype=torch.int64, device=device)  # [k, P] (equal lengths)
    k, P = pools.shape
    idx = torch.randint(0, P, (batch, k), generator=generator, device=device)
    return torch.gather(pools.expand(batch, k, P), 2, idx[..., None]).squeeze(-1)


def _chain_offsets(
    cfg: NoisyICLConfig,
    tab: dict[str, torch.Tensor],
    batch: int,
    alpha: float,
    ybar: Int[torch.Tensor, "batch n_triggers"],
    tau_follows_the_trigger: bool,
) -> tuple[Float[torch.Tensor, " batch_by_vocab"], Float[torch.Tensor, " batch_by_vocab"]]:
    """Per-(sequence, token) offsets and totals into the look-up table of :func:`_run_chain`, flattened."""
    row_off, row_tot = tab["row_off"], tab["row_tot"]
    rowmap = torch.arange(cfg.d_vocab, device=row_off.device).clamp(max=cfg.n_tokens)  # appended τ -> row N (π_u)
    if tau_follows_the_trigger:
        rowmap[cfg.tau] = cfg.triggers[0]  # τ only ever follows the one trigger
    off = row_off[rowmap].repeat(batch, 1)
    tot = row_tot[rowmap].repeat(batch, 1)
    trig_cols = list(cfg.triggers)
    if alpha <= 0.5:
        off[:, trig_cols] = tab["seg_lo"][ybar]
        tot[:, trig_cols] = 1.0 / (1.0 - alpha)
    else:
        off[:, trig_cols] = tab["seg_hi"][ybar]
        tot[:, trig_cols] = 1.0 / alpha
    return off.flatten(), tot.flatten()


def _run_chain(
    cfg: NoisyICLConfig,
    batch: int,
    generator: torch.Generator,
    alpha: float,
    ybar: Int[torch.Tensor, "batch n_triggers"],
) -> Int[torch.Tensor, "batch seq_plus_1"]:
    """The Markov chain of §3 item ii for ``T + 1`` tokens: ``seq [B, T+1]``.

    Per sequence ``b`` and current token ``v`` the next token is one draw from the table ``_lut``, at offset
    ``off[b, v]`` with total ``tot[b, v]``: ordinary ``v`` -> its π_b row; an appended τ -> the π_u row (or
    the trigger's π_b row); a trigger ``q`` -> the 3-entry ``p_{α,ȳ_q}`` segment of this sequence's ``ȳ_q``.
    So each of the ``T`` steps is 6 batched ops: ``key = b·V + z_t``, two ``take`` of ``off``/``tot``,
    ``addcmul(off, u_t, tot)``, a cast to int64 and ``take(lut)`` -- exact up to float64 rounding of the index
    (relative error < 2^-30). The loop is bound by per-op dispatch (~3-4 us each on a CPU), not by B."""
    device = generator.device
    T, N, tau, V = cfg.seq_len, cfg.n_tokens, cfg.tau, cfg.d_vocab
    k = len(cfg.triggers)
    tab = _lut(cfg.unigram, cfg.bigram, N, tau, V, str(device))
    lut, row_off, row_tot = tab["lut"], tab["row_off"], tab["row_tot"]
    last_q = None
    if cfg.force_last_trigger:
        trig = torch.tensor(cfg.triggers, device=device)
        last_q = (
            trig[torch.randint(0, k, (batch,), generator=generator, device=device)] if k > 1 else trig.expand(batch)
        )
    u = torch.rand((T + 1, batch), generator=generator, dtype=torch.float64, device=device)
    prev_row = cfg.noise_appended and cfg.after_noise == "bigram_of_trigger"
    off, tot = _chain_offsets(cfg, tab, batch, alpha, ybar, prev_row and k == 1)
    base = torch.arange(batch, device=device) * V
    seq = torch.empty((T + 1, batch), dtype=lut.dtype, device=device)
    torch.take(lut, (row_off[N] + u[0] * row_tot[N]).long(), out=seq[0])  # z_1 ~ π_u
    per_step_prev = prev_row and k > 1
    take, addcmul = torch.take, torch.addcmul
    rows, us = seq.unbind(0), u.unbind(0)
    for t in range(T):
        cur = rows[t]
        if t == T - 1 and last_q is not None:  # paper: z_T = q overwrites the chain's draw
            cur.copy_(last_q)
        key = cur + base
        o, s = take(off, key), take(tot, key)
        if per_step_prev and t > 0:  # after τ: the π_b row of the trigger before it
            after = cur == tau
            prev = rows[t - 1].long()
            o = torch.where(after, take(row_off, prev), o)
            s = torch.where(after, take(row_tot, prev), s)
        take(lut, addcmul(o, us[t + 1], s).long(), out=rows[t + 1])
    return seq.T.to(torch.int64, memory_format=torch.contiguous_format)


def _finish(
    cfg: NoisyICLConfig,
    seq: Int[torch.Tensor, "batch seq_plus_1"],
    ybar: Int[torch.Tensor, "batch n_triggers"],
    loss_positions: str,
) -> Batch:
    """Tokens/targets/masks/extras from ``seq [B, T+1]`` and ``ybar [B, k]``."""
    B, T = seq.shape[0], seq.shape[1] - 1
    device = seq.device
    tokens, targets = seq[:, :T], seq[:, 1:]
    if len(cfg.triggers) == 1:
        is_trig = tokens == cfg.triggers[0]
        outs = is_trig.cumsum(1) * is_trig
    else:
        eq = tokens[..., None] == torch.tensor(cfg.triggers, device=device)  # [B, T, k]
        is_trig = eq.any(-1)
        outs = (eq.cumsum(1) * eq).sum(-1)
    succ = torch.zeros_like(is_trig)
    succ[:, 1:] = is_trig[:, :-1]
    if len(cfg.triggers) == 1:
        clean = torch.where(is_trig, ybar, IGNORE)
    else:
        ytab = torch.full((B, cfg.d_vocab), IGNORE, dtype=torch.int64, device=device)
        ytab[:, list(cfg.triggers)] = ybar
        clean = torch.gather(ytab, 1, tokens)
    # τ where the trigger's answer is not τ (with ȳ = τ, possible in the official code, τ is the answer)
    target_noise = is_trig & (targets == cfg.tau) & (clean != cfg.tau)
    noise = torch.zeros_like(is_trig)
    noise[:, 1:] = target_noise[:, :-1] & (tokens[:, 1:] == cfg.tau)  # the forced z_T is a trigger, not τ
    if loss_positions == "trigger_repeat":
        mask = outs >= 2
    else:
        mask = torch.zeros_like(is_trig)
        mask[:, -1] = True
    extras = {
        "ybar": ybar[:, 0] if ybar.shape[1] == 1 else ybar,
        "outs": outs,
        "trigger_successor": succ,
        "noise": noise,
        "target_noise": target_noise,
        "clean_target": clean,
    }
    return Batch(tokens=tokens, targets=targets, loss_mask=mask, extras=extras)


def sample_noisy_icl(
    cfg: NoisyICLConfig,
    batch: int,
    generator: torch.Generator,
    *,
    alpha: float | None = None,
) -> Batch:
    """A batch of noisy in-context recall sequences (paper §3 items i-iii; App. B.4 with several triggers).

    Args:
        cfg: the data distribution (``NoisyICLConfig.preset("paper_text" | "official_code", ...)``).
        batch: ``B``, the number of sequences.
        generator: all randomness; the tensors are created on ``generator.device``.
        alpha: overrides ``cfg.alpha`` (clean test data: ``alpha=0``).

    Returns a ``Batch`` with ``tokens [B, T]`` (``z_1..z_T``), ``targets [B, T]`` (``z_2..z_{T+1}``),
    ``loss_mask [B, T]`` (``outs >= 2`` or the last position) and extras:

    - ``ybar``: ``[B]`` (one trigger) or ``[B, k]`` (``ȳ_q`` in ``cfg.triggers`` order);
    - ``outs [B, T]``: at a trigger, its occurrence count so far (per trigger, counting itself), else 0;
    - ``trigger_successor [B, T]``: ``z_{t-1}`` is a trigger (at ``t = T`` with ``force_last_trigger`` the token
      is the forced trigger, not a draw of ``p_{α,ȳ}``);
    - ``noise [B, T]``: the token is ``τ``, follows a trigger, and that trigger's ``ȳ`` is not ``τ`` (in the
      official code ``ȳ = τ`` happens w.p. 1/65; then ``τ`` is the in-context answer, not noise);
    - ``target_noise [B, T]``: the same for the target ``z_{t+1}`` (the label at position ``t``);
    - ``clean_target [B, T]``: ``ȳ_{z_t}`` where ``z_t`` is a trigger (the noise-free answer), else -100.
    """
    if not isinstance(cfg, NoisyICLConfig):
        raise ValueError(f"cfg={cfg!r}; expected a NoisyICLConfig")
    _check_batch(batch)
    _check_generator(generator)
    alpha = cfg.alpha if alpha is None else _check_alpha(alpha)
    ybar = _draw_ybar(cfg, batch, generator)
    seq = _run_chain(cfg, batch, generator, alpha, ybar)
    return _finish(cfg, seq, ybar, cfg.loss_positions)


def noisy_icl_batch_fn(
    cfg: NoisyICLConfig,
    batch: int,
    *,
    alpha: float | None = None,
    task: str = "recall",
    device: str | torch.device | None = None,
) -> Callable[[int, torch.Generator], Batch]:
    """``batch_fn(step, generator) -> Batch`` for ``mechrecall.trainer.train`` (use ``loss_positions="mask"``).

    ``task="recall"``: ``sample_noisy_icl``; ``task="ioi"``: ``sample_synthetic_ioi``. The step is unused:
    the trainer seeds the generator from ``(seed, step)``.

    ``device``: draw the batch there (the model's device, e.g. ``"cuda"``), so that on an accelerator the
    generator's ``T`` sequential steps run there and no batch crosses the bus. The trainer's CPU generator then
    only seeds a generator on ``device``: the batches are a deterministic function of ``(seed, step, device)``
    (the same on every run on that kind of device, not the same numbers as on the CPU). ``None`` or a CPU
    device: drawn with the trainer's generator itself (unchanged).
    """
    if not isinstance(cfg, NoisyICLConfig):
        raise ValueError(f"cfg={cfg!r}; expected a NoisyICLConfig")
    _check_batch(batch)
    if alpha is not None:
        _check_alpha(alpha)
    samplers = {"recall": sample_noisy_icl, "ioi": sample_synthetic_ioi}
    if task not in samplers:
        raise ValueError(f"task={task!r}; expected one of {tuple(samplers)}")
    if task == "ioi":
        _check_ioi(cfg)
    sampler = samplers[task]
    target = torch.device(device) if device is not None else None
    if target is not None and target.type == "cuda" and target.index is None:
        target = torch.device("cuda", torch.cuda.current_device())

    def batch_fn(step: int, generator: torch.Generator) -> Batch:
        if target is not None and generator.device != target:
            seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device))
            generator = torch.Generator(device=target).manual_seed(seed)
        return sampler(cfg, batch, generator, alpha=alpha)

    return batch_fn


# ---------------------------------------------------------------------------------------------------- reference


def sample_noisy_icl_reference(
    cfg: NoisyICLConfig,
    batch: int,
    rng: random.Random,
    *,
    alpha: float | None = None,
) -> Batch:
    """The same distribution as ``sample_noisy_icl``, one sequence at a time with Python lists.

    A deliberately plain transcription of paper §3 items i-iii (``random.choices`` with the count rows as
    weights); used to test the vectorised generator and as the benchmark baseline. Not bit-identical to
    ``sample_noisy_icl`` (different random streams), only equal in distribution.
    """
    if not isinstance(cfg, NoisyICLConfig):
        raise ValueError(f"cfg={cfg!r}; expected a NoisyICLConfig")
    _check_batch(batch)
    if not isinstance(rng, random.Random):
        raise ValueError(f"rng={rng!r}; expected a random.Random")
    alpha = cfg.alpha if alpha is None else _check_alpha(alpha)
    T, N, tau = cfg.seq_len, cfg.n_tokens, cfg.tau
    uni, rows = _count_tables(cfg.unigram, cfg.bigram, N)
    ordinary = list(range(N))
    pools = dict(zip(cfg.triggers, cfg.output_pools()))
    cols: dict[str, list] = {k: [] for k in ("seq", "ybar")}
    for _ in range(batch):
        ybar = {q: rng.choice(pools[q]) for q in cfg.triggers}
        last_q = rng.choice(cfg.triggers) if cfg.force_last_trigger else None
        seq = [rng.choices(ordinary, weights=uni)[0]]
        while len(seq) < T + 1:
            if len(seq) == T and last_q is not None:
                seq[-1] = last_q
            cur = seq[-1]
            if cur in ybar:
                nxt = tau if rng.random() < alpha else ybar[cur]
            elif cur == tau and cfg.noise_appended:
                row = rows[seq[-2]] if cfg.after_noise == "bigram_of_trigger" else uni
                nxt = rng.choices(ordinary, weights=row)[0]
            else:
                nxt = rng.choices(ordinary, weights=rows[cur])[0]
            seq.append(nxt)
        cols["seq"].append(seq)
        cols["ybar"].append([ybar[q] for q in cfg.triggers])
    return _reference_batch(cfg, cols["seq"], cols["ybar"])


def _reference_batch(cfg: NoisyICLConfig, seqs: list[list[int]], ybars: list[list[int]]) -> Batch:
    """The :class:`Batch` of :func:`sample_noisy_icl_reference`'s sequences (``T + 1`` tokens each): targets, the
    loss mask and the extras, position by position."""
    T, tau, batch = cfg.seq_len, cfg.tau, len(seqs)
    tokens, targets, outs, succ, noise, tnoise, clean = [], [], [], [], [], [], []
    for seq, yb in zip(seqs, ybars):
        ybar = dict(zip(cfg.triggers, yb))
        counts = dict.fromkeys(cfg.triggers, 0)
        o, s, n, tn, c = [], [], [], [], []
        for t in range(T):
            z = seq[t]
            if z in counts:
                counts[z] += 1
            o.append(counts.get(z, 0))
            s.append(t > 0 and seq[t - 1] in counts)
            n.append(t > 0 and seq[t - 1] in counts and z == tau and ybar[seq[t - 1]] != tau)
            tn.append(z in counts and seq[t + 1] == tau and ybar[z] != tau)
            c.append(ybar.get(z, IGNORE))
        tokens.append(seq[:T])
        targets.append(seq[1:])
        outs.append(o)
        succ.append(s)
        noise.append(n)
        tnoise.append(tn)
        clean.append(c)
    outs_t = torch.tensor(outs, dtype=torch.int64)
    if cfg.loss_positions == "trigger_repeat":
        mask = outs_t >= 2
    else:
        mask = torch.zeros((batch, T), dtype=torch.bool)
        mask[:, -1] = True
    ybar_t = torch.tensor(ybars, dtype=torch.int64)
    extras = {
        "ybar": ybar_t[:, 0] if len(cfg.triggers) == 1 else ybar_t,
        "outs": outs_t,
        "trigger_successor": torch.tensor(succ, dtype=torch.bool),
        "noise": torch.tensor(noise, dtype=torch.bool),
        "target_noise": torch.tensor(tnoise, dtype=torch.bool),
        "clean_target": torch.tensor(clean, dtype=torch.int64),
    }
    return Batch(torch.tensor(tokens, dtype=torch.int64), torch.tensor(targets, dtype=torch.int64), mask, extras)


# ---------------------------------------------------------------------------------------------------- synthetic IOI

IOI_MIN_SEQ_LEN = 7  # three triggers at pairwise distance >= 2 inside [T-2] need T - 2 >= 5


def _check_ioi(cfg: NoisyICLConfig) -> None:
    if len(cfg.triggers) != 1:
        raise ValueError(f"synthetic IOI uses one trigger; got triggers={cfg.triggers!r}")
    if cfg.seq_len < IOI_MIN_SEQ_LEN:
        raise ValueError(
            f"synthetic IOI needs seq_len >= {IOI_MIN_SEQ_LEN} (three triggers at distance >= 2 "
            f"in [T-2]); got {cfg.seq_len}"
        )
    if len(cfg.output_pools()[0]) < 2:
        raise ValueError("synthetic IOI needs an output pool with at least 2 ids (ȳ and a different y^D)")


def sample_synthetic_ioi(
    cfg: NoisyICLConfig,
    batch: int,
    generator: torch.Generator,
    *,
    alpha: float | None = None,
    noise_in_filler: bool = True,
) -> Batch:
    """Synthetic IOI with noise (paper App. J items i-v), vectorised over the batch.

    Per sequence: ``ȳ`` and a different distractor ``y^D`` uniform over the output pool (paper: ``[N]``;
    ``cfg.exclude_trigger_output`` keeps both ``!= q``); three positions ``i1 < i2 < i3`` in ``[T-2]``
    (0-indexed ``0..T-3``) with pairwise distance ``>= 2``, uniformly over all such triples; ``z_{ik} = q``;
    one uniformly chosen successor ``z_{ik+1} = ȳ``, the other two ``y^D``; ``z_T = q``,
    ``y = z_{T+1} ~ p_{α,ȳ}``; every other position of ``1..T-1`` uniform over ``V \\ {q}`` (``V`` = all
    ``d_vocab`` ids, which includes ``τ`` as the text says; ``noise_in_filler=False`` removes ``τ``).
    ``cfg.unigram``, ``cfg.bigram`` and ``cfg.loss_positions`` are not used: the loss is on the last position.

    Returns ``tokens``/``targets [B, T]`` (targets = next tokens, ``targets[:, -1] = y``), ``loss_mask`` = last
    position, extras ``ybar [B]``, ``y_distractor [B]``, ``trigger_positions [B, 3]`` (0-indexed, sorted),
    ``ybar_slot [B]`` (which of the three is followed by ``ȳ``), ``outs``, ``trigger_successor``,
    ``noise`` (all False: no noise coin inside the context), ``target_noise`` and ``clean_target``
    (``ȳ`` at the last position, -100 elsewhere).
    """
    if not isinstance(cfg, NoisyICLConfig):
        raise ValueError(f"cfg={cfg!r}; expected a NoisyICLConfig")
    _check_ioi(cfg)
    _check_batch(batch)
    _check_generator(generator)
    if not isinstance(noise_in_filler, bool):
        raise ValueError(f"noise_in_filler={noise_in_filler!r}; expected a bool")
    alpha = cfg.alpha if alpha is None else _check_alpha(alpha)
    device = generator.device
    B, T, q, tau = batch, cfg.seq_len, cfg.triggers[0], cfg.tau
    pool = torch.tensor(cfg.output_pools()[0], dtype=torch.int64, device=device)
    P = len(pool)
    i_y = torch.randint(0, P, (B,), generator=generator, device=device)
    i_d = torch.randint(0, P - 1, (B,), generator=generator, device=device)
    i_d = i_d + (i_d >= i_y).long()  # uniform over the pool minus ȳ
    ybar, yd = pool[i_y], pool[i_d]
    # three sorted distinct c1 < c2 < c3 in [0, T-4) -> i = c + (0, 1, 2): uniform over gap->=2 triples of [0, T-2)
    keys = torch.rand((B, T - 4), generator=generator, device=device)
    c = torch.topk(keys, 3, dim=1).indices.sort(dim=1).values
    pos = c + torch.arange(3, device=device)
    slot = torch.randint(0, 3, (B,), generator=generator, device=device)
    filler_ids = [i for i in range(cfg.d_vocab) if i != q and (noise_in_filler or i != tau)]
    filler = torch.tensor(filler_ids, dtype=torch.int64, device=device)
    seq = filler[torch.randint(0, len(filler_ids), (B, T + 1), generator=generator, device=device)]
    u = torch.rand((B,), generator=generator, dtype=torch.float64, device=device)
    seq.scatter_(1, pos, q)
    succ_vals = torch.where(torch.arange(3, device=device) == slot[:, None], ybar[:, None], yd[:, None])
    seq.scatter_(1, pos + 1, succ_vals)
    seq[:, T - 1] = q
    seq[:, T] = torch.where(u < alpha, tau, ybar)
    return _ioi_batch(cfg, seq, ybar, yd, pos, slot)


def _ioi_batch(
    cfg: NoisyICLConfig,
    seq: Int[torch.Tensor, "batch seq_plus_1"],
    ybar: Int[torch.Tensor, " batch"],
    yd: Int[torch.Tensor, " batch"],
    pos: Int[torch.Tensor, "batch 3"],
    slot: Int[torch.Tensor, " batch"],
) -> Batch:
    """The :class:`Batch` of :func:`sample_synthetic_ioi`'s sequences: the last-position loss and the IOI extras."""
    B, T, tau = seq.shape[0], cfg.seq_len, cfg.tau
    out = _finish(cfg, seq, ybar[:, None], "last")
    clean = torch.full((B, T), IGNORE, dtype=torch.int64, device=seq.device)
    clean[:, -1] = ybar
    target_noise = torch.zeros((B, T), dtype=torch.bool, device=seq.device)
    target_noise[:, -1] = (seq[:, T] == tau) & (ybar != tau)
    out.extras.update(
        clean_target=clean,
        noise=torch.zeros_like(target_noise),
        target_noise=target_noise,
        y_distractor=yd,
        trigger_positions=pos,
        ybar_slot=slot,
    )
    return out


# ---------------------------------------------------------------------------------------------------- LAM


class LAMData(NamedTuple):
    """Linear associative memory data (App. G). ``x``: inputs in ``[0, n)``; ``y``: labels in ``[0, n]``
    (``n`` = the common noise output ``c``) or ``None`` for the population; ``target [m, c]``: the
    conditional ``p_α(· | x_i)`` of every row (the population loss is ``-(target * log_softmax).sum(-1).mean()``
    over ``x = arange(n)``)."""

    x: Int[torch.Tensor, " m"]
    y: Int[torch.Tensor, " m"] | None
    target: Float[torch.Tensor, "m c"]


def sample_lam(n: int, alpha: float, batch: int | None, generator: torch.Generator | None = None) -> LAMData:
    """Noisy linear associative memory data (paper App. G, Fig. 18; Theorem 3 uses ``n = 2``).

    ``n`` inputs, ``c = n + 1`` outputs (0-indexed: output ``n`` is the common noise token),
    ``x ~ Uniform([n])``, ``p_α(y | x) = (1 - α) 1{y = x} + α 1{y = n}``.

    ``batch=None``: the exact population, ``x = arange(n)`` (each with weight ``1/n``), ``y = None``,
    ``target [n, n+1]`` float64. Otherwise ``batch`` samples drawn with ``generator``: ``x [batch]``,
    ``y [batch]`` and their rows ``target [batch, n+1]``.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r}; expected an int >= 1")
    alpha = _check_alpha(alpha)
    table = torch.zeros((n, n + 1), dtype=torch.float64)
    table[torch.arange(n), torch.arange(n)] = 1.0 - alpha
    table[:, n] += alpha
    if batch is None:
        return LAMData(torch.arange(n), None, table)
    _check_batch(batch)
    _check_generator(generator)
    assert generator is not None  # checked above
    device = generator.device
    x = torch.randint(0, n, (batch,), generator=generator, device=device)
    noisy = torch.rand((batch,), generator=generator, dtype=torch.float64, device=device) < alpha
    y = torch.where(noisy, n, x)
    return LAMData(x, y, table.to(device)[x])
