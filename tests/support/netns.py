"""Separate hosts on this machine: Linux network namespaces joined by veth pairs.

``Network(n)`` makes n namespaces ("hosts"), each with one interface whose
address exists only inside it (``10.R.0.i+1/24``), joined through a bridge in
a further namespace: nothing is added to the machine's own network. A host's
link can be cut (its interface set down) and restored, which its peers see as
a silent network, not a closed connection. A command run on a host has the
host's name too (a UTS namespace of its own). Each host knows the others by name
(``names``, in the hosts file ``ip netns exec`` puts in place of ``/etc/hosts``
from ``/etc/netns/NS/hosts``), as cluster nodes do. ``skip_reason()`` says why
namespaces cannot be made here (not root, no ``ip``, no permission).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["Network", "skip_reason"]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def skip_reason() -> str | None:
    """Why this machine cannot make network namespaces (None: it can)."""
    for command, package in (("ip", "iproute2"), ("unshare", "util-linux")):
        if shutil.which(command) is None:
            return f"the {command} command ({package}) is not installed"
    if os.geteuid() != 0:
        return "making network namespaces needs root"
    name = f"pfx{os.getpid()}probe"
    try:
        _ip("netns", "add", name)
    except (subprocess.CalledProcessError, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        return f"cannot make a network namespace: {detail.decode(errors='replace').strip() or exc}"
    _ip("netns", "del", name)
    return None


class Network:
    """n hosts on one private network; a context manager that removes it all."""

    def __init__(self, n: int, names: Sequence[str] | None = None) -> None:
        tag = f"{os.getpid() % 10000}{random.randrange(100)}"
        self.subnet = 10 + random.randrange(200)
        self.hub = f"pfx{tag}h"
        self.hosts = [f"pfx{tag}n{i}" for i in range(n)]
        self.addresses = [f"10.{self.subnet}.0.{i + 1}" for i in range(n)]
        self.names = list(names) if names is not None else [f"node{i}" for i in range(n)]
        self._made: list[str] = []

    def __enter__(self) -> Network:
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _make(self) -> None:
        _ip("netns", "add", self.hub)
        self._made.append(self.hub)
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        for i, (host, address) in enumerate(zip(self.hosts, self.addresses, strict=True)):
            _ip("netns", "add", host)
            self._made.append(host)
            # made in the hub, one end moved to the host: the machine's namespace holds neither
            _ip("-n", self.hub, "link", "add", f"p{i}", "type", "veth", "peer", "name", "eth0")
            _ip("-n", self.hub, "link", "set", "eth0", "netns", host)
            _ip("-n", self.hub, "link", "set", f"p{i}", "master", "br0", "up")
            _ip("-n", host, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", host, "link", "set", "eth0", "up")
            _ip("-n", host, "link", "set", "lo", "up")
        table = "127.0.0.1 localhost\n" + "".join(
            f"{address} {name}\n" for address, name in zip(self.addresses, self.names, strict=True)
        )
        for host in self.hosts:
            etc = Path("/etc/netns", host)
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(table)

    def command(self, i: int, argv: Sequence[str]) -> list[str]:
        """``argv`` run on host ``i``: in its network namespace, with its host name."""
        rename = 'hostname "$0" && exec "$@"'
        return ["ip", "netns", "exec", self.hosts[i], "unshare", "--uts", "sh", "-c", rename,
                self.names[i], *argv]  # fmt: skip

    def cut(self, i: int) -> None:
        """Host ``i``'s link goes silent: no packet in or out, no connection closed."""
        _ip("-n", self.hub, "link", "set", f"p{i}", "down")

    def restore(self, i: int) -> None:
        _ip("-n", self.hub, "link", "set", f"p{i}", "up")

    def close(self) -> None:
        for name in reversed(self._made):
            subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)
            shutil.rmtree(Path("/etc/netns", name), ignore_errors=True)
        self._made.clear()
