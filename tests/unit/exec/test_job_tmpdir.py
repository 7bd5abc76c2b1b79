"""FLUX_JOB_TMPDIR in a shared place: what is already there is not taken on trust."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.spec.eventlog import parse
from pflux.spec.fluid import JobID

_ids = itertools.count(7_000_001)


def _stdout(live: Any, jobid: int) -> str:
    events = parse(live.guest(jobid, "output"))
    return "".join(
        e.context["data"]
        for e in events
        if e.name == "data"
        and e.context
        and e.context["stream"] == "stdout"
        and "data" in e.context
    )


@pytest.fixture
def parents(live: Any, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """Two sticky world-writable places FLUX_JOB_TMPDIR may go, best first."""
    first, second = tmp_path / "first", tmp_path / "second"
    for place in (first, second):
        place.mkdir()
        place.chmod(0o1777)
    saved = live.exec.tmp_parents
    live.exec.tmp_parents = (str(first), str(second))
    yield first, second
    live.exec.tmp_parents = saved


def _attacker_dir(tmp_path: Path) -> Path:
    theirs = tmp_path / "theirs"
    theirs.mkdir(0o777)
    theirs.chmod(0o777)
    return theirs


@pytest.mark.parametrize("planted", ["open directory", "symlink"])
def test_a_directory_planted_under_the_jobs_name_is_passed_over(
    live: Any, tmp_path: Path, parents: tuple[Path, Path], planted: str
) -> None:
    jobid = next(_ids)
    name = f"jobtmp-0-{JobID(jobid).f58}"
    theirs = _attacker_dir(tmp_path)
    if planted == "symlink":
        (parents[0] / name).symlink_to(theirs)
    else:
        (parents[0] / name).mkdir()
        (parents[0] / name).chmod(0o777)
    script = 'echo secret > "$FLUX_JOB_TMPDIR/f"; echo "$FLUX_JOB_TMPDIR"'
    stream = live.start(live.job(["sh", "-c", script]), jobid=jobid)
    assert [kind for kind, _ in stream.all()] == ["start", "finish", "release"]
    assert _stdout(live, jobid) == f"{parents[1] / name}\n"
    assert list(theirs.iterdir()) == []
    assert list((parents[0] / name).iterdir()) == []


def test_no_safe_place_is_a_fatal_exception_naming_each(
    live: Any, tmp_path: Path, parents: tuple[Path, Path]
) -> None:
    jobid = next(_ids)
    name = f"jobtmp-0-{JobID(jobid).f58}"
    theirs = _attacker_dir(tmp_path)
    (parents[0] / name).symlink_to(theirs)
    (parents[1] / name).mkdir()
    (parents[1] / name).chmod(0o755)
    stream = live.start(live.job(["sh", "-c", "echo ran > $FLUX_JOB_TMPDIR/f"]), jobid=jobid)
    got = stream.all()
    assert [kind for kind, _ in got] == ["start", "exception", "finish", "release"]
    assert got[1][1]["note"] == (
        f"error creating FLUX_JOB_TMPDIR ({parents[0] / name}: not a directory of"
        f" uid {os.geteuid()}'s; {parents[1] / name}: mode 0755, not 0700)"
    )
    assert list(theirs.iterdir()) == []
    assert list((parents[1] / name).iterdir()) == []


def test_a_staged_file_never_follows_a_link_already_in_its_place(
    live: Any, tmp_path: Path, parents: tuple[Path, Path]
) -> None:
    jobid = next(_ids)
    own = parents[0] / f"jobtmp-0-{JobID(jobid).f58}"
    own.mkdir(0o700)
    victim = tmp_path / "victim"
    victim.write_text("unchanged")
    (own / "script").symlink_to(victim)
    jobspec = live.job(["sh", "-c", "echo ran"])
    jobspec["attributes"]["system"]["files"] = {"script": {"data": "written"}}
    got = live.start(jobspec, jobid=jobid).all()
    assert [kind for kind, _ in got] == ["start", "exception", "finish", "release"]
    assert "error writing script to FLUX_JOB_TMPDIR" in got[1][1]["note"]
    assert victim.read_text() == "unchanged"


def test_a_parent_others_could_replace_is_passed_over(
    live: Any, tmp_path: Path, parents: tuple[Path, Path]
) -> None:
    jobid = next(_ids)
    parents[0].chmod(0o777)  # writable by all, not sticky: its entries may be swapped
    stream = live.start(live.job(["sh", "-c", 'echo "$FLUX_JOB_TMPDIR"']), jobid=jobid)
    assert [kind for kind, _ in stream.all()] == ["start", "finish", "release"]
    assert _stdout(live, jobid) == f"{parents[1]}/jobtmp-0-{JobID(jobid).f58}\n"
    parents[1].chmod(0o777)
    jobid = next(_ids)
    got = live.start(live.job(["true"]), jobid=jobid).all()
    assert [kind for kind, _ in got] == ["start", "exception", "finish", "release"]
    name = f"jobtmp-0-{JobID(jobid).f58}"
    assert got[1][1]["note"] == (
        f"error creating FLUX_JOB_TMPDIR ({parents[0] / name}: {parents[0]} (owner uid"
        f" {os.geteuid()}, mode 0777) lets others replace it; {parents[1] / name}:"
        f" {parents[1]} (owner uid {os.geteuid()}, mode 0777) lets others replace it)"
    )
