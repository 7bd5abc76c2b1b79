"""A small real workflow, run inside an instance (``pflux start python examples/workflow.py``).

A split job writes four chunks of numbers; four square jobs run side by side,
each summing the squares of one chunk; a total job waits for all of them
(``afterok``) and adds the partial sums. Every job is a real process; the
output of each comes back from the KVS, and the eventlog of the last job shows
RFC 21's states.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from pflux import Client

CHUNKS = 4
NUMBERS = 1000


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="pflux-workflow-"))
    split = (
        f"import sys\n"
        f"for c in range({CHUNKS}):\n"
        f"    nums = range(c * {NUMBERS // CHUNKS} + 1, (c + 1) * {NUMBERS // CHUNKS} + 1)\n"
        f"    open(f'{work}/chunk{{c}}', 'w').write('\\n'.join(map(str, nums)))\n"
        f"print('split: wrote {CHUNKS} chunks of {NUMBERS // CHUNKS} numbers')"
    )
    square = (
        "import os, sys\n"
        "c = sys.argv[1]\n"
        f"s = sum(int(n) ** 2 for n in open(f'{work}/chunk{{c}}'))\n"
        f"open(f'{work}/part{{c}}', 'w').write(str(s))\n"
        "print(f'square {c}: {s} (job {os.environ[\"FLUX_JOB_ID\"]})')"
    )
    total = (
        f"s = sum(int(open(f'{work}/part{{c}}').read()) for c in range({CHUNKS}))\n"
        f"print(f'total: sum of squares of 1..{NUMBERS} = {{s}}')\n"
        f"assert s == {sum(n * n for n in range(1, NUMBERS + 1))}"
    )
    python = sys.executable
    nodes = {"split": [python, "-c", split], "total": [python, "-c", total]}
    edges = []
    for c in range(CHUNKS):
        nodes[f"square{c}"] = [python, "-c", square, str(c)]
        edges += [("split", f"square{c}"), (f"square{c}", "total")]
    with Client() as client:
        outcome = client.run_dag(nodes, edges)
        for name, (jobid, result) in outcome.items():
            output = "".join(
                (event.context or {}).get("data", "")
                for event in client.events(jobid, path="guest.output")
                if event.name == "data"
            )
            status = "ok" if result.success else f"FAILED: {result.errstr}"
            print(f"{name:>8} {jobid}  {status:<4} {output.strip()}")
        print()
        print(f"the eventlog of the total job ({outcome['total'][0]}):")
        sys.stdout.flush()
        subprocess.run(["pflux", "job", "eventlog", str(outcome["total"][0])], check=True)
        print()
        sys.stdout.flush()
        subprocess.run(["pflux", "jobs", "-a"], check=True)
        return 0 if all(result.success for _, result in outcome.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
