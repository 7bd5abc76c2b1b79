"""The resources an instance manages, from its configuration or from this machine.

Three ways, as flux-core's ``[resource]`` table has them (flux-config-resource(5)):

- ``[[resource.config]]``: entries of ``hosts`` (an RFC 29 hostlist) with
  ``cores`` and ``gpus`` (RFC 22 idsets) and ``properties`` (an array of
  names); a host listed again is updated by the later entry, and gains its
  properties.  Ranks follow the order in which hosts first appear.
- ``[resource] path``: an RFC 20 R file (its times are ignored; its properties
  are kept).
- otherwise rank 0 is this host, with this process's CPUs and the machine's
  NVIDIA GPUs, or ``[resource] cores`` / ``gpus`` of them.

The first two describe execution targets that need not exist: every rank's
jobs still run on this machine (job-exec maps R's core ids onto its CPUs), so
they are for simulation (``pflux start --simulate``) and for tests of jobs
spanning ranks.  Properties are what job constraints and a queue's ``requires``
select ranks by.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from pflux.broker.config import ConfigError
from pflux.broker.nodeinfo import count_gpus
from pflux.errors import HostlistError, IdsetError, ResourceError
from pflux.spec import hostlist
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet, Target

__all__ = ["RESOURCE_KEYS", "count_gpus", "inventory"]

RESOURCE_KEYS = ("config", "path", "cores", "gpus")  # the [resource] table's

_ENTRY_KEYS = ("hosts", "cores", "gpus", "properties")
_PROPERTY_FORBIDDEN = "!&'\"^`|()"


def inventory(config: dict[str, Any], hostname: str) -> ResourceSet:
    """The resources an instance with ``config`` manages; ConfigError names a bad key."""
    section = config.get("resource", {})
    if not isinstance(section, dict):
        raise ConfigError("resource", None, f"must be a table, got {section!r}")
    source = "config" if "config" in section else "path" if "path" in section else None
    if source is not None:
        for name in ("cores", "gpus"):
            if name in section:
                raise ConfigError(
                    "resource",
                    name,
                    f"cannot be combined with {source}, which gives every host's resources",
                )
        if source == "config":
            return _from_entries(section["config"])
        return _from_file(section["path"])
    return _this_host(section, hostname)


def _this_host(section: dict[str, Any], hostname: str) -> ResourceSet:
    counts = []
    for name in ("cores", "gpus"):
        value = section.get(name)
        if value is None:
            value = len(os.sched_getaffinity(0)) if name == "cores" else count_gpus()
        elif type(value) is not int or value < 0:
            raise ConfigError("resource", name, f"must be an integer >= 0, got {value!r}")
        counts.append(value)
    if not any(counts):
        return ResourceSet({})
    cores, gpus = (IdSet.range(0, n - 1) if n else IdSet() for n in counts)
    return ResourceSet({0: Target(hostname, cores, gpus)})


def _from_entries(entries: Any) -> ResourceSet:
    if not isinstance(entries, list) or not entries:
        raise ConfigError("resource", "config", "must be a non-empty array of tables")
    hosts: dict[str, tuple[IdSet, IdSet]] = {}  # in order of first appearance
    properties: dict[str, set[str]] = {}  # property -> hosts
    for i, entry in enumerate(entries):
        where = f"resource.config[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(where, None, f"must be a table, got {entry!r}")
        unknown = sorted(set(entry) - set(_ENTRY_KEYS))
        if unknown:
            known = ", ".join(_ENTRY_KEYS)
            raise ConfigError(where, unknown[0], f"unknown key (known: {known})")
        names = _hosts(entry.get("hosts"), where)
        cores = _ids(entry, "cores", where)
        gpus = _ids(entry, "gpus", where)
        for prop in _properties(entry, where):
            properties.setdefault(prop, set()).update(names)
        for name in names:
            have = hosts.get(name, (IdSet(), IdSet()))
            hosts[name] = (have[0] if cores is None else cores, have[1] if gpus is None else gpus)
    for name, (cores, _) in hosts.items():
        if not cores:
            raise ConfigError("resource.config", None, f"host {name} has no cores")
    targets = {rank: Target(name, *ids) for rank, (name, ids) in enumerate(hosts.items())}
    ranks = {name: rank for rank, name in enumerate(hosts)}
    return ResourceSet(
        targets,
        properties={
            prop: IdSet(ranks[host] for host in names) for prop, names in sorted(properties.items())
        },
    )


def _properties(entry: dict[str, Any], where: str) -> list[str]:
    value = entry.get("properties", [])
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise ConfigError(where, "properties", f"must be an array of names, got {value!r}")
    for name in value:
        bad = next((c for c in name if c in _PROPERTY_FORBIDDEN), None)
        if bad is not None:
            raise ConfigError(where, "properties", f"invalid character {bad!r} in {name!r}")
    return value


def _hosts(value: Any, where: str) -> list[str]:
    if not isinstance(value, str):
        raise ConfigError(where, "hosts", "must be a hostlist string such as node[0-3]")
    try:
        names = hostlist.decode(value)
    except HostlistError as exc:
        raise ConfigError(where, "hosts", str(exc)) from None
    if not names:
        raise ConfigError(where, "hosts", "names no host")
    return names


def _ids(entry: dict[str, Any], key: str, where: str) -> IdSet | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(where, key, "must be an idset string such as 0-31")
    try:
        return IdSet.decode(value)
    except IdsetError as exc:
        raise ConfigError(where, key, str(exc)) from None


def _from_file(path: Any) -> ResourceSet:
    if not isinstance(path, str) or not path:
        raise ConfigError("resource", "path", "must be the path of an R file")
    try:
        doc = orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise ConfigError("resource", "path", f"{path}: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError("resource", "path", f"{path}: not JSON: {exc}") from None
    try:
        resources = ResourceSet.from_json(doc)
    except ResourceError as exc:
        raise ConfigError("resource", "path", f"{path}: {exc}") from None
    return ResourceSet(resources.targets, properties=resources.properties)
