"""Loading TransformerLens models by name from the Hugging Face Hub (or its local cache).

The weights go through the adapter's ``mechrecall._tl.model_from_hub`` (TL 3: its own
``HookedTransformer.from_pretrained`` / ``from_pretrained_no_processing``; TL 4: the Hugging Face model
booted as a ``TransformerBridge``); this module only adds what TL lacks:

* an offline check *before* TL starts (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` read at call
  time, plus the hub's own import-time flag): a model that is not in the cache fails at once with a
  short :class:`PretrainedNotAvailableError` instead of a long traceback from inside transformers;
* in online mode, a quick TCP probe of the hub endpoint first: if it can't be reached, a cached
  model is loaded from the cache and an uncached one fails at once (instead of after
  huggingface_hub's retries with backoff, ~45 s);
* ``local_files_only=True`` and an explicit ``cache_dir`` when offline, so nothing tries the network;
* one concise error (``raise ... from None``) for whatever hub failure still happens inside TL.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import urllib.parse
from typing import Any

import torch

from mechrecall._tl import Model, model_from_hub
from pretrained._local import tl_config_of
from pretrained._names import is_pythia
from pretrained.errors import PretrainedNotAvailableError

_TRUE = {"1", "ON", "YES", "TRUE"}
_WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json")


def hub_offline() -> bool:
    """Whether the hub must not be contacted: ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` are read
    now (huggingface_hub only reads them at import), or the hub library already says offline."""
    from huggingface_hub import constants

    if constants.is_offline_mode():
        return True
    return any(os.environ.get(v, "").strip().upper() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hub_cache_dir() -> str:
    """The hub cache folder as the environment says *now* (``HF_HUB_CACHE``, else ``HF_HOME/hub``,
    else huggingface_hub's default). Passed explicitly to every loader so that the cache check
    and the actual load look at the same folder."""
    from huggingface_hub import constants

    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return os.path.expanduser(os.environ[var])
    if os.environ.get("HF_HOME"):
        return os.path.join(os.path.expanduser(os.environ["HF_HOME"]), "hub")
    return str(constants.HF_HUB_CACHE)


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the hub endpoint (``HF_ENDPOINT``) opens within ``timeout`` s.
    ``True`` without probing when a proxy is configured (a direct connection proves nothing then)."""
    from huggingface_hub import constants

    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    url = urllib.parse.urlparse(os.environ.get("HF_ENDPOINT") or constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "huggingface.co", port), timeout=timeout):
            return True
    except OSError:
        return False


def _cached(repo_id: str, names: tuple[str, ...], revision: str | None, cache_dir: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    for filename in names:
        hit = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir, revision=revision)
        if isinstance(hit, str):
            return True
    return False


def is_cached(official: str, revision: str | None, cache_dir: str) -> bool:
    """Whether config, weights (at ``revision``) and a tokenizer (at main) are in the hub cache.
    Purely local: reads the cache folder, never the network."""
    return (
        _cached(official, ("config.json",), revision, cache_dir)
        and _cached(official, _WEIGHT_FILES, revision, cache_dir)
        and _cached(official, _TOKENIZER_FILES, None, cache_dir)
    )


def unavailable_message(name: str, official: str, checkpoint: int | None, why: str) -> str:
    """The text of :class:`PretrainedNotAvailableError`: what failed, and how to load a local
    directory instead (and how to make one where the hub is reachable)."""
    rev = f', revision="step{checkpoint}"' if checkpoint is not None else ""
    where = "/path/to/hf_dir" + (f"/step{checkpoint}" if checkpoint is not None else "")
    load = (
        f'pretrained.load("/path/to/hf_dir", checkpoint={checkpoint})'
        if checkpoint is not None
        else 'pretrained.load("/path/to/hf_dir")'
    )
    return (
        f"{name!r} ({official}{rev}) can't be loaded: {why}\n"
        f"Load a local Hugging Face directory instead: {load}\n"
        "To create one, on a machine with hub access run:\n"
        "    from transformers import AutoModelForCausalLM, AutoTokenizer\n"
        f'    AutoModelForCausalLM.from_pretrained("{official}"{rev}).save_pretrained("{where}")\n'
        f'    AutoTokenizer.from_pretrained("{official}").save_pretrained("{where}")\n'
        "and copy the folder here."
    )


#: OSErrors of this machine (not of the hub) that must surface as they are.
_LOCAL_ERRNOS = frozenset({errno.ENOSPC, errno.EACCES, errno.EPERM, errno.EROFS, errno.EDQUOT, errno.EMFILE})


def _unavailable_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [OSError]  # transformers/huggingface_hub/requests errors
    try:
        import httpx  # huggingface_hub >= 1.0 talks over httpx, whose errors are not OSErrors

        errors.append(httpx.TransportError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


def load_from_hub(
    name: str,
    official: str,
    *,
    checkpoint: int | None,
    flags: dict[str, bool],
    dtype: torch.dtype,
    device: str | torch.device,
) -> Model:
    """Load ``official`` through the adapter's ``model_from_hub`` (processed as ``flags`` say; all False = raw)
    at ``checkpoint`` for Pythia; the tokenizer is loaded here with the same cache/offline settings and handed
    to TL (as TL itself would load it: ``add_bos_token=True``)."""
    from transformers import AutoTokenizer

    offline = hub_offline()
    cache_dir = hub_cache_dir()
    revision = f"step{checkpoint}" if checkpoint is not None else None
    cached = is_cached(official, revision, cache_dir)
    if not offline and not hub_reachable():
        if not cached:
            raise PretrainedNotAvailableError(
                unavailable_message(
                    name,
                    official,
                    checkpoint,
                    f"the Hugging Face Hub can't be reached and it is not in the cache {cache_dir}.",
                )
            )
        logging.getLogger(__name__).info("hub unreachable; loading %s from the cache", official)
        offline = True
    if offline and not cached:
        raise PretrainedNotAvailableError(
            unavailable_message(
                name,
                official,
                checkpoint,
                f"it is not available offline (HF_HUB_OFFLINE is set and it is not in the "
                f"Hugging Face cache {cache_dir}).",
            )
        )
    hub_kwargs: dict[str, Any] = {"cache_dir": cache_dir}
    if offline:
        hub_kwargs["local_files_only"] = True
    try:
        tokenizer = AutoTokenizer.from_pretrained(official, add_bos_token=True, **hub_kwargs)
        model = model_from_hub(
            official,
            tokenizer,
            checkpoint=checkpoint if is_pythia(official) else None,
            flags=flags,
            dtype=dtype,
            device=device,
            hub_kwargs=hub_kwargs,
            tl_config_of=tl_config_of,
        )
    except PretrainedNotAvailableError:
        raise
    except _unavailable_errors() as exc:
        if isinstance(exc, OSError) and exc.errno in _LOCAL_ERRNOS:
            raise  # disk full, permissions: a problem of this machine, not of the hub
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        why = "it is not available offline" if offline else "the Hugging Face Hub could not be used"
        raise PretrainedNotAvailableError(
            unavailable_message(name, official, checkpoint, f"{why} ({type(exc).__name__}: {first})")
        ) from exc
    return model
