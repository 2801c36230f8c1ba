"""The deploy check: does a server (or every primary of a cluster) have a release's scripts?

Reads the scripts from a build directory or a bundle, asks each server with SCRIPT EXISTS, and
with `load=True` sends SCRIPT LOAD for the missing ones. Dispatch is by SHA1, so a server that
has a script's SHA1 has exactly that body.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import redis
import redis.cluster

from .release import ReleaseError, bundle_files, inside, load_manifest, read_file


@dataclass(frozen=True)
class ScriptBody:
    name: str
    sha1: str
    body: bytes


@dataclass(frozen=True)
class NodeReport:
    """What one server had, and what was loaded on it."""

    node: str
    present: tuple[str, ...]
    missing: tuple[str, ...]
    loaded: tuple[str, ...]


def release_scripts(path: Path) -> list[ScriptBody]:
    """Every script of a build directory or a bundle, checked against the manifest's SHA1."""
    if not path.is_dir() and not path.name.endswith((".tar.gz", ".tgz")):
        raise ReleaseError(f"{path}: --release takes a build directory or a bundle (.tar.gz)")
    entries = load_manifest(path)["scripts"]  # its shape checked against the schema
    for entry in entries:
        # A crafted "../x" or "/etc/x" would otherwise be read, and with --load sent to Redis.
        inside(path, entry["file"], "the manifest's file", on_disk=path.is_dir())
    files: dict[str, bytes] = {}
    if path.is_dir():
        for entry in entries:
            try:
                files[entry["file"]] = read_file(path / entry["file"])
            except FileNotFoundError:
                pass  # reported below, as a body that does not match
            except OSError as exc:
                raise ReleaseError(f"{path}: cannot read the scripts: {exc}") from None
    else:
        files = bundle_files(path, {entry["file"] for entry in entries})
    scripts = []
    for entry in entries:
        body = files.get(entry["file"])
        if body is None or hashlib.sha1(body).hexdigest() != entry["sha1"]:
            raise ReleaseError(f"{path}: {entry['file']} is missing or does not match its sha1")
        scripts.append(ScriptBody(entry["name"], entry["sha1"], body))
    return scripts


# A `password` option in the query string, as redis-py reads it: its value, up to the next option.
_QUERY_PASSWORD = re.compile(r"([?&]password=)([^&#]*)")


def _split_password(url: str) -> tuple[str, str, str]:
    """`url` as (before its user-info password, the password, after it); ("", "", url) if none.

    The user info ends at the last "@" before the query: a password written without
    percent-encoding may hold "@" or "/", and though redis-py then misreads the URL, its password
    must still not show.
    """
    scheme, sep, rest = url.partition("://")
    authority = re.split(r"[?#]", rest, maxsplit=1)[0] if sep else ""
    user_info, at, _ = authority.rpartition("@")
    user, colon, password = user_info.partition(":")
    if not (at and colon and password):
        return "", "", url
    head = f"{scheme}://{user}:"
    return head, password, url[len(head) + len(password) :]


def redact_url(url: str) -> str:
    """`url` with its passwords, in the user info and in a `password` option, shown as `***`."""
    head, password, tail = _split_password(url)
    return _QUERY_PASSWORD.sub(r"\1***", f"{head}***{tail}" if password else url)


def redact(text: str, url: str) -> str:
    """`text` (a message about `url`) with every password of `url` shown as `***`, whether
    written as in the URL or percent-decoded."""
    found = [m[2] for m in _QUERY_PASSWORD.finditer(url)] + [_split_password(url)[1]]
    secrets = {s for p in found if p for s in (p, unquote(p))}
    # redis-py splits a URL at "/", ":", "@", "?" and "#", so a password holding one of them
    # that was not percent-encoded can reach its message in pieces (as a "port", say). Pieces
    # shorter than 3 characters give little away, and hiding them would garble the message.
    secrets |= {piece for p in found for piece in re.split(r"[/:@?#]", p) if len(piece) >= 3}
    # Longest first, so that a password holding another one is hidden whole.
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _servers(url: str) -> list[tuple[str, redis.Redis]]:
    """A client per server to check: the server of `url`, or every primary of its cluster."""
    client = redis.Redis.from_url(url)
    if client.info("cluster").get("cluster_enabled") != 1:
        options = client.connection_pool.connection_kwargs
        return [(f"{options.get('host')}:{options.get('port')}", client)]
    client.close()
    cluster = redis.cluster.RedisCluster.from_url(url)
    primaries = cluster.get_primaries()  # type: ignore[no-untyped-call]
    return [(node.name, node.redis_connection) for node in primaries]


def verify(url: str, scripts: list[ScriptBody], load: bool) -> list[NodeReport]:
    """SCRIPT EXISTS for every script on every server; SCRIPT LOAD the missing ones if `load`."""
    reports = []
    try:
        for name, client in _servers(url):
            exists = client.script_exists(*(s.sha1 for s in scripts)) if scripts else []
            present = tuple(s.name for s, e in zip(scripts, exists, strict=True) if e)
            missing = tuple(s.name for s, e in zip(scripts, exists, strict=True) if not e)
            loaded = []
            if load:
                for script in scripts:
                    if script.name in missing and client.script_load(script.body) == script.sha1:
                        loaded.append(script.name)
            reports.append(NodeReport(name, present, missing, tuple(loaded)))
    # RedisClusterException (a cluster whose slots are not all served, say) is no RedisError.
    except (redis.RedisError, redis.exceptions.RedisClusterException, ValueError) as exc:
        # The URL and redis-py's message can both hold the password: neither may show it.
        raise ReleaseError(f"{redact_url(url)}: {redact(str(exc), url)}") from None
    return reports


def reports_json(reports: list[NodeReport]) -> str:
    return json.dumps(
        [
            {"node": r.node, "present": r.present, "missing": r.missing, "loaded": r.loaded}
            for r in reports
        ],
        indent=2,
    )
