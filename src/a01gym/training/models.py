"""Where a model comes from: a hub id, a local Hugging Face directory, or a GGUF file.

Every path that loads a model (``train``'s ``model:``, ``eval --model``, ``play``, the
benchmarks) goes through :func:`resolve_model`, so all of them accept the same three forms.

Why GGUF files become directories first: transformers reads a GGUF file with its own loader and
dequantises it to float32, which takes tens of seconds (Qwen2.5-Coder-0.5B: ~75 s on 2 cores) and
yields a model that ``save_pretrained`` refuses ("quantized with gguf and is not serializable").
TRL, peft and our rollouts want a plain directory, so the file is converted once: the weights are
copied into a model built from the config (without the quantisation marker) and saved with the
tokenizer under ``<cache>/<sha256 of the file>/``. The key is the file's content, not its name,
so a renamed file is found again and a changed file is converted anew. The cache is
``$A01GYM_MODEL_CACHE`` or ``~/.cache/a01gym/models``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from a01gym.errors import ConfigError

__all__ = ["cache_root", "file_sha256", "gguf_directory", "is_gguf", "resolve_model"]

logger = logging.getLogger(__name__)

_GGUF_MAGIC = b"GGUF"
_MARKER = "a01gym-gguf.json"


def cache_root() -> Path:
    """The folder converted GGUF models live in."""
    return Path(
        os.environ.get("A01GYM_MODEL_CACHE") or Path.home() / ".cache" / "a01gym" / "models"
    )


def file_sha256(path: Path, *, chunk: int = 1 << 22) -> str:
    """The hex sha256 of a file's bytes (read in 4 MiB chunks: models are hundreds of MB)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def is_gguf(spec: str) -> bool:
    """Whether ``spec`` names a GGUF file (by suffix; the content is checked on conversion)."""
    return spec.lower().endswith(".gguf")


def resolve_model(spec: str, *, field: str = "--model") -> str:
    """What ``from_pretrained`` should load for ``spec``: a directory, or a hub id as given.

    Raises:
        ConfigError: naming ``field``, when ``spec`` is a path that does not exist, or a GGUF
            file that cannot be read or converted.
    """
    path = Path(spec).expanduser()
    if is_gguf(spec):
        return str(gguf_directory(path, field=field))
    if path.is_dir():
        return str(path)
    if path.exists():
        raise ConfigError(
            field, f"{spec} is a file but not a GGUF model", hint="give a .gguf file or a directory"
        )
    looks_local = spec.startswith((".", "/", "~")) or spec.count("/") > 1
    if looks_local:
        raise ConfigError(field, f"no model at {spec}", hint="check the path, or give a hub id")
    return spec  # a hub id such as Qwen/Qwen2.5-Coder-0.5B-Instruct


def gguf_directory(path: Path, *, field: str = "--model") -> Path:
    """The cached HF directory converted from the GGUF file at ``path`` (converting it once).

    Raises:
        ConfigError: when the file is missing, is not GGUF, or transformers cannot load it.
    """
    if not path.is_file():
        raise ConfigError(field, f"no GGUF file at {path}", hint="check the path")
    with path.open("rb") as handle:
        if handle.read(4) != _GGUF_MAGIC:
            raise ConfigError(
                field,
                f"{path} is not a GGUF file (it does not start with the GGUF magic bytes)",
                hint="the download may be truncated or corrupt; fetch it again",
            )
    sha = file_sha256(path)
    out = cache_root() / sha
    if (out / _MARKER).is_file():
        logger.info("GGUF %s: cached conversion at %s", path.name, out)
        return out
    logger.warning("converting GGUF %s to a model directory at %s (once per file)", path, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{sha[:12]}-", dir=out.parent))
    try:
        _convert(path, staging)
        (staging / _MARKER).write_text(
            json.dumps({"source": str(path), "sha256": sha, "bytes": path.stat().st_size})
        )
        if out.exists():  # another process converted it meanwhile: keep theirs
            shutil.rmtree(staging)
        else:
            staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _convert(path: Path, out: Path) -> None:
    """Dequantise with transformers' GGUF loader and save a plain float32 directory."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        loaded = AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, dtype=torch.float32
        )
    except Exception as exc:  # transformers raises many types for a bad file
        raise ConfigError(
            "--model",
            f"transformers could not load the GGUF file {path}: {type(exc).__name__}: {exc}",
            hint="check that the gguf package is installed and the file is complete",
        ) from exc
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    # Tied output embeddings are absent from a GGUF state dict and restored by tie_weights.
    missing = [name for name in missing if name != "lm_head.weight"]
    if missing or unexpected:
        raise ConfigError(
            "--model", f"{path}: weights did not match the config ({missing[:3]}, {unexpected[:3]})"
        )
    plain.tie_weights()
    plain.generation_config = loaded.generation_config
    plain.save_pretrained(out)
    tokenizer.save_pretrained(out)
