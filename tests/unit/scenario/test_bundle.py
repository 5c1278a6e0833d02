"""Bundle loading, hashing and tamper detection."""

import importlib.util
import io
import tarfile
from pathlib import Path

import pytest

from a01gym.errors import BundleError
from a01gym.scenario.bundle import Bundle, pack_files, safe_relative_path, unpack_files
from a01gym.scenario.manifest import Patch

FIXTURE = Path(__file__).parents[2] / "fixtures" / "idor_notes"


def test_fixture_bundle_on_disk_matches_its_build_script():
    spec = importlib.util.spec_from_file_location("build", FIXTURE.parent / "build_idor_notes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = module.build()
    loaded = Bundle.load(FIXTURE)
    loaded.verify_hash()
    assert built.manifest.content_hash == loaded.manifest.content_hash


def test_hash_is_stable_across_load_paths(tmp_path):
    bundle = Bundle.load(FIXTURE)
    bundle.write(tmp_path / "copy")
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "copy", arcname="idor-notes")
    assert Bundle.load(tmp_path / "copy").compute_hash() == bundle.compute_hash()
    assert Bundle.load(archive).compute_hash() == bundle.compute_hash()


def test_tampering_with_the_workspace_is_detected(tmp_path):
    Bundle.load(FIXTURE).write(tmp_path / "b")
    target = tmp_path / "b" / "workspace" / "app" / "main.py"
    target.write_text(target.read_text() + "\n# changed\n")
    with pytest.raises(BundleError, match="content hash mismatch"):
        Bundle.load(tmp_path / "b").verify_hash()


def test_missing_or_invalid_manifest_names_the_problem(tmp_path):
    Bundle.load(FIXTURE).write(tmp_path / "b")
    (tmp_path / "b" / "hidden.json").unlink()
    with pytest.raises(BundleError, match=r"missing hidden\.json"):
        Bundle.load(tmp_path / "b")
    Bundle.load(FIXTURE).write(tmp_path / "c")
    (tmp_path / "c" / "manifest.json").write_text('{"name": "x"}')
    with pytest.raises(BundleError, match=r"manifest\.json is invalid at entrypoint"):
        Bundle.load(tmp_path / "c")


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../b", "a\x00b", "", "a\\b"])
def test_safe_relative_path_refuses_escapes(path):
    with pytest.raises(ValueError):
        safe_relative_path(path)


def test_workspace_tar_is_reproducible_and_refuses_links():
    files = {"b.py": b"2", "a/x.py": b"1"}
    assert pack_files(files) == pack_files(dict(reversed(files.items())))
    assert unpack_files(pack_files(files), max_bytes=100) == files
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        link = tarfile.TarInfo("evil")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
        tar.addfile(link)
    with pytest.raises(ValueError, match="not a regular file"):
        unpack_files(buffer.getvalue(), max_bytes=100)
    with pytest.raises(ValueError, match="larger than"):
        unpack_files(pack_files({"big": b"x" * 200}), max_bytes=100)


def test_patched_workspace_overlays_and_deletes():
    bundle = Bundle.load(FIXTURE)
    files = bundle.patched_workspace(Patch(files={"TASK.md": None, "new.py": "x = 1\n"}))
    assert "TASK.md" not in files and files["new.py"] == b"x = 1\n"
    assert "TASK.md" in bundle.workspace


@pytest.mark.parametrize("target", ["file", "directory"])
def test_a_bundle_directory_with_a_link_is_refused_and_names_it(tmp_path, target):
    bundle = Bundle.load(FIXTURE)
    bundle.write(tmp_path / "b")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not the bundle's")
    link = tmp_path / "b" / "workspace" / "app" / "extra"
    link.symlink_to(outside / "secret.txt" if target == "file" else outside)
    with pytest.raises(BundleError, match="symlink workspace/app/extra is not allowed"):
        Bundle.load(tmp_path / "b")


def test_a_bundle_directory_loads_every_file_in_path_order(tmp_path):
    bundle = Bundle.load(FIXTURE)
    bundle.write(tmp_path / "b")
    (tmp_path / "b" / "workspace" / "app-notes.txt").write_text("sorts after app/")
    loaded = Bundle.load(tmp_path / "b")
    paths = list(loaded.workspace)
    assert paths == sorted(paths, key=lambda p: p.split("/"))
    last_in_app = max(i for i, p in enumerate(paths) if p.startswith("app/"))
    assert paths.index("app-notes.txt") > last_in_app
    assert set(paths) == set(bundle.workspace) | {"app-notes.txt"}
