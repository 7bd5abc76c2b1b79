"""Job shell descriptions for tests that play job-exec to a launcher or a shell."""

from __future__ import annotations

import os
from pathlib import Path

from pflux.exec.plan import plan
from pflux.spec.builder import from_command
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet


def description(jobid: int, command: list[str], tmp: Path) -> bytes:
    """What job-exec sends a shell for a job running ``command`` on core 0 (tmpdir under tmp)."""
    R = ResourceSet.build({0: (IdSet.decode("0"), IdSet())}, "h").to_json()  # noqa: N806
    jobspec = from_command(command, environment=dict(os.environ))
    planned = plan(
        jobid,
        jobspec,
        R,
        uri="local:///x",
        namespace=f"job-{jobid}",
        tmp_parents=(str(tmp),),
        hostname="h",
        cpus=(0,),
    )
    return planned.shells[0][1]
