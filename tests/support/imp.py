"""The privileged helper (``pflux-imp``) started as root for the tests that run guests' jobs."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path


class Helper:
    """``python -m pflux.imp`` as root, for the instance account ``allowed`` (a user name)
    whose instance runs ``python``, listening at ``base/imp/sock``; what it says after
    it listens is in ``log``."""

    def __init__(self, base: Path, allowed: str, python: str) -> None:
        self.socket = base / "imp" / "sock"
        self.config = base / "imp.toml"
        self.config.write_text(
            f'socket = "{self.socket}"\nallowed-users = ["{allowed}"]\n'
            f'allowed-mechanisms = ["munge"]\nmax-ttl = 300\npython = "{python}"\n'
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pflux.imp", "--config", str(self.config)],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if "listening on" not in line:
            self.proc.kill()
            raise RuntimeError(f"pflux-imp did not start: {line}{self.proc.stderr.read()}")
        self.log: list[str] = []
        self.reader = threading.Thread(target=self.log.extend, args=(self.proc.stderr,))
        self.reader.start()

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.reader.join(30)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
