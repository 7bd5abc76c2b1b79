"""MPI programs under ``pflux run``: the shell's PMI-1 server, with MPICH, end to end."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pflux.api import Client
from pflux.errors import RPCError
from pflux.spec import builder
from pflux.spec.builder import from_command
from support.instance import LiveInstance, fails, ok
from support.mpi import HELLO

ABORT = r"""
#include <mpi.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1)
        MPI_Abort(MPI_COMM_WORLD, 3);
    MPI_Barrier(MPI_COMM_WORLD);
    sleep(60);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``mpi_hello`` and ``mpi_abort``, compiled with MPICH's mpicc."""
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        pytest.skip(
            "mpicc not found: install MPICH (apt-get install mpich libmpich-dev;"
            " scripts/test does so when run as root)"
        )
    where = tmp_path_factory.mktemp("mpi")
    for name, source in (("mpi_hello", HELLO), ("mpi_abort", ABORT)):
        (where / f"{name}.c").write_text(source)
        subprocess.run(
            [mpicc, "-o", str(where / name), str(where / f"{name}.c")], check=True, timeout=120
        )
    return where


def test_an_mpi_allreduce_over_four_tasks(uri: str, programs: Path) -> None:
    out = ok(uri, "run", "-n4", str(programs / "mpi_hello"))
    assert sorted(out.splitlines()) == [f"rank {rank} of 4: sum 6" for rank in range(4)]


def test_mpi_over_nodes_with_a_cyclic_taskmap(programs: Path, tmp_path: Path) -> None:
    """PMI_process_mapping names the tasks' nodes; MPICH then talks between "nodes"."""
    config = tmp_path / "two.toml"
    config.write_text('[[resource.config]]\nhosts = "node[0-1]"\ncores = "0-1"\n')
    with LiveInstance(tmp_path / "state", "--config", str(config), cores=None) as live:
        hello = str(programs / "mpi_hello")
        out = ok(live.uri, "run", "-N2", "--tasks-per-node=2", "--taskmap=cyclic", hello)
        assert sorted(out.splitlines()) == [f"rank {rank} of 4: sum 6" for rank in range(4)]
        out = ok(live.uri, "run", "-N2", "-n4", hello)  # a shell per node: PMI spans them
    assert sorted(out.splitlines()) == [f"rank {rank} of 4: sum 6" for rank in range(4)]


def test_mpi_abort_fails_the_job(uri: str, programs: Path) -> None:
    err = fails(uri, "run", "-n4", str(programs / "mpi_abort"), rc=143)
    assert "type=exec severity=0 PMI_Abort: aborted" in err


def test_each_task_gets_its_pmi_fd_rank_and_size(uri: str) -> None:
    out = ok(uri, "run", "-n3", "sh", "-c", 'test -n "$PMI_FD" && echo $PMI_RANK/$PMI_SIZE')
    assert sorted(out.split()) == ["0/3", "1/3", "2/3"]


def test_a_one_task_job_gets_pmi_only_when_it_asks(uri: str, programs: Path) -> None:
    show = "echo ${PMI_FD-none}${PMI_RANK-}"
    assert ok(uri, "run", "sh", "-c", show).split() == ["none"]
    assert ok(uri, "run", "-o", "pmi=simple", "sh", "-c", "echo $PMI_RANK/$PMI_SIZE") == "0/1\n"
    assert ok(uri, "run", str(programs / "mpi_hello")) == "rank 0 of 1: sum 0\n"  # a singleton


def test_pmi_off_gives_the_tasks_no_pmi_fd(uri: str) -> None:
    out = ok(uri, "run", "-n2", "-o", "pmi=off", "sh", "-c", "echo ${PMI_FD-none}${PMI_RANK-}")
    assert out.split() == ["none", "none"]


def test_an_unknown_pmi_is_refused_naming_the_option(uri: str, client: Client) -> None:
    err = fails(uri, "run", "-o", "pmi=pmix", "true")
    expected = (
        "attributes.system.shell.options.pmi: unknown value 'pmix' (one of simple, pmi1, pmi2, off)"
    )
    assert expected in err
    jobspec = from_command(["true"])
    builder.set_shell_option(jobspec, "pmi", "pmix")  # past the command: job-ingest's check
    with pytest.raises(RPCError, match=re.escape(expected)):
        client.submit(jobspec)


def test_garbage_on_pmi_fd_fails_the_job_and_not_the_shell(uri: str) -> None:
    script = "import os, time; os.write(int(os.environ['PMI_FD']), b'garbage\\n'); time.sleep(60)"
    err = fails(uri, "run", "-n2", sys.executable, "-c", script, rc=143)
    assert "type=exec severity=0 PMI-1 wire protocol error" in err
    assert ok(uri, "run", "-n2", "echo", "next") == "next\nnext\n"


def test_a_batch_script_of_directives_runs_an_mpi_program(
    uri: str, programs: Path, tmp_path: Path
) -> None:
    script = tmp_path / "mpi.sh"
    script.write_text(
        "#!/bin/sh\n#flux: -n4\n#flux: --job-name=mpi-batch\n"
        f"cd {programs}\nflux run -n4 ./mpi_hello\n"
    )
    jobid = ok(uri, "batch", f"--cwd={tmp_path}", str(script)).strip()
    assert ok(uri, "job", "attach", jobid) == ""  # exit 0; the output is in the file
    out = (tmp_path / f"flux-{jobid}.out").read_text()
    assert sorted(out.splitlines()) == [f"rank {rank} of 4: sum 6" for rank in range(4)]
