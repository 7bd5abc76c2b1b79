"""The ``[bootstrap]`` config of brokers on separate hosts (``support.netns``):
hosts ``node0`` to ``node<n-1>``, each at ``PORT``, talking TCP with CURVE."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.instance import PFLUX

__all__ = ["FAST", "PORT", "bootstrap_config", "keygen"]

PORT = 8050
# a lost peer noticed within seconds, where a test cuts a link or kills a broker
FAST = ("-S", "tbon.heartbeat=0.2s", "-S", "tbon.timeout=1.5s")


def keygen(path: Path) -> Path:
    """A CURVE certificate made by ``pflux keygen`` at ``path``."""
    subprocess.run([str(PFLUX), "keygen", str(path)], check=True, capture_output=True)
    return path


def bootstrap_config(where: Path, cert: Path, hosts: int, extra: str = "") -> Path:
    """``where/hosts.toml``: ``hosts`` hosts sharing ``cert``, then ``extra`` tables."""
    config = where / "hosts.toml"
    config.write_text(
        "[bootstrap]\n"
        f'curve_cert = "{cert}"\n'
        f"default_port = {PORT}\n"
        'default_bind = "tcp://*:%p"\n'
        'default_connect = "tcp://%h:%p"\n'
        f'hosts = [{{ host = "node[0-{hosts - 1}]" }}]\n' + extra
    )
    return config
