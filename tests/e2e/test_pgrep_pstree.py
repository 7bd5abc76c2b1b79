"""``pflux pgrep``, ``pflux pkill`` and ``pflux pstree`` against a live instance.

The jobs run in test mode (no process) until canceled, so each test sets up
the exact set of active jobs it looks for.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, fails, ok, pflux, quiesce, read_fifo

HOLD = "--setattr=system.exec.test.run_duration=0s"  # runs until canceled


@pytest.fixture
def jobs(uri: str, client: Client) -> Iterator[dict[str, JobID]]:
    """Two running ``alpha`` jobs, one running ``beta``, one inactive ``done``."""
    quiesce(client)
    yield _make(uri, client)
    quiesce(client)


def _make(uri: str, client: Client) -> dict[str, JobID]:
    made = {}
    for key, name in (("a1", "alpha"), ("a2", "alpha"), ("b", "beta")):
        made[key] = JobID.parse(ok(uri, "submit", f"--job-name={name}", HOLD, "true").strip())
        client.wait_event(made[key], "start")
    made["done"] = JobID.parse(ok(uri, "submit", "--job-name=done", "true").strip())
    client.wait(made["done"])
    return made


@pytest.fixture
def alone(tmp_path: Path) -> Iterator[tuple[str, dict[str, JobID]]]:
    """An instance of its own (no earlier test's inactive jobs) with ``jobs``'s jobs."""
    with LiveInstance(tmp_path / "state") as live, Client(live.uri) as client:
        yield live.uri, _make(live.uri, client)
        quiesce(client)


def ids(*jobids: JobID) -> str:
    return "".join(f"{jobid.f58}\n" for jobid in jobids)


def test_pgrep_selects_by_pattern_range_state_and_user(uri: str, jobs: dict[str, JobID]) -> None:
    a1, a2, b, done = jobs["a1"], jobs["a2"], jobs["b"], jobs["done"]
    assert sorted(ok(uri, "pgrep", "alpha").split()) == sorted([a1.f58, a2.f58])
    assert ok(uri, "pgrep", "^b") == ids(b)
    assert ok(uri, "pgrep", f"{b.f58}..{b.f58}") == ids(b)
    assert ok(uri, "pgrep", "alpha", f"{a1.f58}..{a1.f58}") == ids(a1)
    assert pflux(uri, "pgrep", "done").returncode == 1  # inactive: only with -a or -f
    assert ok(uri, "pgrep", "-a", "done") == ids(done)
    assert ok(uri, "pgrep", "-f", "inactive", "o") == ids(done)
    assert ok(uri, "pgrep", "-A", "beta") == ids(b)
    assert ok(uri, "pgrep", "-u", str(os.getuid()), "beta") == ids(b)
    assert pflux(uri, "pgrep", "-u", "424242", "beta").returncode == 1
    assert pflux(uri, "pgrep", "-q", "nosuchqueue", "beta").returncode == 1
    assert len(ok(uri, "pgrep", "-c", "1", "alpha").split()) == 1
    assert len(ok(uri, "pgrep", "--max-entries", "1", ".").split()) == 1


def test_pgrep_formats_and_expression_errors(uri: str, jobs: dict[str, JobID]) -> None:
    b = jobs["b"]
    assert ok(uri, "pgrep", "-o", "{name} {id.dec}", "^b") == f"NAME JOBID\nbeta {int(b)}\n"
    assert ok(uri, "pgrep", "-n", "-o", "{name}", "^b") == "beta\n"
    full = ok(uri, "pgrep", "-o", "full", "^b").splitlines()
    assert full[0].split()[:3] == ["JOBID", "USER", "NAME"]
    assert full[1].split()[0] == b.f58
    assert ok(uri, "pgrep", "-n", "-o", "deps", "^b").split()[:2] == [b.f58, "beta"]
    assert "default      the job ids alone" in ok(uri, "pgrep", "-o", "help", "x")
    assert "No such format nosuch" in fails(uri, "pgrep", "-o", "nosuch", "x")
    assert "Only one pattern can be provided" in fails(uri, "pgrep", "a", "b", rc=2)
    assert "expression error" in fails(uri, "pgrep", "(", rc=2)


def test_pkill_cancels_and_waits(uri: str, client: Client, jobs: dict[str, JobID]) -> None:
    assert pflux(uri, "pkill", "nomatch").returncode == 1
    proc = pflux(uri, "pkill", "--wait", "alpha")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "pflux-pkill: Canceled 2 jobs\n"
    for key in ("a1", "a2"):  # --wait: already inactive
        assert client.job_info(jobs[key], ["state"]).state.name == "INACTIVE"
    assert client.job_info(jobs["b"], ["state"]).state.name == "RUN"
    assert pflux(uri, "pkill", "-u", "424242", "beta").returncode == 1
    assert pflux(uri, "pkill", "-f", "inactive", "beta").returncode == 1
    assert pflux(uri, "pkill", "-q", "nosuchqueue", "beta").returncode == 1
    assert pflux(uri, "pkill", "--max-entries", "0", "-c", "1", "-A", "beta").returncode == 0
    client.wait(jobs["b"])


def test_pstree_shows_the_jobs_under_the_root(
    alone: tuple[str, dict[str, JobID]], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, jobs = alone
    monkeypatch.setenv("COLUMNS", "80")
    assert ok(uri, "pstree") == ".\n├── beta\n└── 2*[alpha]\n"
    assert ok(uri, "pstree", "-a") == ".\n├── beta:R\n├── 2*[alpha:R]\n└── done:CD\n"
    assert ok(uri, "pstree", "-f", "inactive") == ".\n└── done\n"
    assert ok(uri, "pstree", "-X", "--ascii") == ".\n|-- beta\n|-- alpha\n`-- alpha\n"
    # -o labels the root too, as flux's (the root's name is ".")
    assert ok(uri, "pstree", "-C", "-o", "{name}!") == ".!\n├─beta!\n└─2*[alpha!]\n"
    assert ok(uri, "pstree", "-c", "1") == ".\n└── beta\n"
    assert ok(uri, "pstree", "-L", "-1") == ".\n"
    assert ok(uri, "pstree", "--skip-root=yes") == "beta\n2*[alpha]\n"
    assert ok(uri, "pstree", str(jobs["b"])) == "beta\n"
    assert ok(uri, "pstree", "--skip-root=no", str(jobs["b"])) == ".\n└── beta\n"
    extended = ok(uri, "pstree", "-x").splitlines()
    assert extended[0].split() == ["JOBID", "USER", "ST", "NTASKS", "NNODES", "RUNTIME"]
    assert extended[1].split()[0] == jobs["b"].f58
    assert extended[1].endswith(" beta")
    assert ok(uri, "pstree", "-d", "default", "-n").splitlines()[0].split()[0] == jobs["b"].f58
    assert ok(uri, "pstree", "--detail-format", "{id.dec}", "-n", str(jobs["b"])) == (
        f"{int(jobs['b'])} beta\n"
    )
    wide = ok(uri, "pstree", "-l", "-o", "x" * 300)
    assert "x" * 300 in wide
    assert ok(uri, "pstree", "-o", "x" * 300).splitlines()[1] == "└── 3*[" + "x" * 72 + "+"


def test_pstree_refuses_what_has_no_meaning_here(uri: str) -> None:
    assert "Unknown --details format 'progress'" in fails(uri, "pstree", "-d", "progress")
    assert "Choose only one of --ascii, --compact" in fails(uri, "pstree", "-C", "--ascii", rc=2)
    assert "requires either 'yes' or 'no'" in fails(uri, "pstree", "--skip-root=maybe", rc=2)


@pytest.fixture
def nested(tmp_path: Path) -> Iterator[tuple[str, str, JobID, JobID]]:
    """An instance of its own running ``outer``, a nested instance in which two held
    ``inner`` jobs and ``deep``, a nested instance again, run; once all have started
    (``deep``'s id is written to a FIFO then)."""
    ready = tmp_path / "ready"
    os.mkfifo(ready)
    script = (
        f"a=$(flux submit --job-name=inner {HOLD} true) && b=$(flux submit --job-name=inner"
        f" {HOLD} true) && c=$(flux submit --job-name=deep flux start sleep 120) &&"
        " flux job wait-event $a start >/dev/null && flux job wait-event $b start >/dev/null"
        f" && flux job wait-event $c memo >/dev/null && echo $c > {ready}; exec sleep 120"
    )
    with LiveInstance(tmp_path / "state") as live, Client(live.uri) as client:
        outer = JobID.parse(
            ok(live.uri, "submit", "-c3", "--job-name=outer", "flux", "start", "sh", "-c", script)
        )
        inner_uri = client.wait_event(outer, "memo").context["uri"]
        deep = JobID.parse(read_fifo(ready, timeout=120))
        yield live.uri, inner_uri, outer, deep
        quiesce(client)


def test_pstree_descends_into_nested_instances(
    nested: tuple[str, str, JobID, JobID], monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, inner_uri, outer, deep = nested
    monkeypatch.setenv("COLUMNS", "200")
    assert ok(uri, "pstree") == ".\n└── outer\n    ├── deep\n    └── 2*[inner]\n"
    assert ok(uri, "pstree", "-p", "--ascii") == (
        f". .\n`-- {outer.f58} outer\n    |-- {deep.f58} deep\n    `-- 2*[inner]\n"
    )
    assert ok(uri, "pstree", "--parent-label={name}+", "-X") == (
        ".+\n└── outer+\n    ├── deep+\n    ├── inner\n    └── inner\n"
    )
    assert ok(uri, "pstree", "-L", "0") == ".\n└── outer\n"
    assert ok(uri, "pstree", "--skip-root=yes", "-C") == "outer\n├─deep\n└─2*[inner]\n"
    details = ok(uri, "pstree", "-n", "--detail-format={id.f58:>12}").splitlines()
    assert details[:2] == [f"{outer.f58:>12} outer", f"{deep.f58:>12} ├── deep"]
    assert [line[13:] for line in details[2:]] == ["├── inner", "└── inner"]  # ids differ
    rooted = ok(uri, "pstree", "-n", "--skip-root=no", "--detail-format={id.f58:>12} {ntasks}")
    assert rooted.splitlines()[:2] == [f"{'.':>12} 1 .", f"{outer.f58:>12} 1 └── outer"]
    # inside the nested instance, the root is the job it runs in
    assert ok(inner_uri, "pstree") == "outer\n├── deep\n└── 2*[inner]\n"
    inside = ok(inner_uri, "pstree", "-n", "-p", "--skip-root=no", "--detail-format={id.f58}")
    assert inside.splitlines()[:2] == [
        f"{outer.f58} {outer.f58} outer",
        f"{deep.f58} ├── {deep.f58} deep",
    ]
