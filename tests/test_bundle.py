"""The bundle as a contract: its manifest validates against the schema that ships inside it."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from echomq_scripts import __version__
from tests.support.environment import REPO
from tests.support.projects import copy_fixture, run_build

BUNDLE = f"echomq-scripts-{__version__}.tar.gz"


def bundle_members(path: Path) -> dict[str, bytes]:
    """The bundle's files, by their path inside its top directory."""
    with tarfile.open(path) as tar:
        found = {}
        for member in tar.getmembers():
            extracted = tar.extractfile(member)
            assert extracted is not None
            found[member.name.split("/", 1)[1]] = extracted.read()
        return found


@pytest.fixture(scope="module")
def repo_bundle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("bundle") / "build"
    run_build(REPO / "lua_src", out)
    return bundle_members(out / BUNDLE)


def test_the_bundle_carries_its_schema_and_the_manifest_is_valid(
    repo_bundle: dict[str, bytes],
) -> None:
    schema = json.loads(repo_bundle["manifest.schema.json"])
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(json.loads(repo_bundle["manifest.json"]), schema)
    manifest = json.loads(repo_bundle["manifest.json"])
    # Everything the manifest names is in the bundle.
    for script in manifest["scripts"]:
        assert script["file"] in repo_bundle
        assert script["lineMap"] in repo_bundle


@pytest.mark.parametrize("project", ["clean", "every-code", "codegen-edges", "runtime-error"])
def test_every_fixture_projects_manifest_is_valid(
    project: str, tmp_path: Path, repo_bundle: dict[str, bytes]
) -> None:
    root = copy_fixture(project, tmp_path)
    run_build(root / "lua_src", root / "build")
    schema = json.loads(repo_bundle["manifest.schema.json"])
    jsonschema.validate(json.loads((root / "build" / "manifest.json").read_bytes()), schema)


@pytest.mark.parametrize(
    "damage",
    [
        lambda m: m["scripts"][0].pop("sha1"),
        lambda m: m["scripts"][0].update(numKeys=-1),
        lambda m: m["scripts"][0]["argv"].append({"name": "x", "type": "float", "description": ""}),
        lambda m: m["codes"].pop(),
        lambda m: m.update(format=2),
        lambda m: m["scripts"][0].update(extra=True),
    ],
    ids=["no sha1", "negative numKeys", "unknown arg type", "ten codes", "format 2", "extra field"],
)
def test_the_schema_refuses_damaged_manifests(repo_bundle: dict[str, bytes], damage: Any) -> None:
    schema = json.loads(repo_bundle["manifest.schema.json"])
    manifest = json.loads(repo_bundle["manifest.json"])
    damage(manifest)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(manifest, schema)
