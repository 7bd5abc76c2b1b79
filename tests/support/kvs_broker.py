"""A broker whose only service is the kvs, in a child process.

For tests (and ``bench/bench_kvs.py``) that need the kvs behind a real socket,
or a broker they can SIGKILL, without the cost of a whole ``pflux start``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SERVE = """
import asyncio, logging, sys
from pathlib import Path
from pflux.broker.instance import Instance
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
asyncio.run(Instance(Path(sys.argv[1]), services=["pflux.kvs.service:KVSService"]).run())
"""


@contextmanager
def kvs_broker(state_dir: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The broker on ``state_dir`` and its URI, once it says it is ready.

    ``state_dir`` must have a short path: it holds the Unix socket. On exit the
    broker is terminated unless it has already ended.
    """
    child = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(state_dir)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    try:
        for line in child.stdout:
            if line.startswith("instance ready at "):
                yield child, line.split()[-1]
                break
        else:
            child.wait()
            raise AssertionError(f"the instance did not start (exit {child.returncode})")
    finally:
        if child.poll() is None:
            child.terminate()
        child.wait(timeout=30)
        child.stdout.close()
