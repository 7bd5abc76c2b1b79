"""Reading traces: JSON lines and CSV, the jobspecs they make, and errors naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import PfluxError
from pflux.exec.testexec import simulation_config
from pflux.sched.pool import ResourceRequest
from pflux.sim.trace import jobspec_for, load, parse
from pflux.spec.jobspec import validate


def test_json_lines_in_submit_order_with_flux_defaults() -> None:
    jobs = parse(
        [
            '{"submit": 10, "duration": 60, "ntasks": 4, "cores_per_task": 2, "name": "b"}',
            "",
            '{"submit": 0, "duration": "1.5h", "timelimit": "2h", "nodes": 2, "urgency": 20}',
            '{"submit": 10, "duration": 5, "gpus_per_task": 1}',
        ]
    )
    assert [(job.index, job.submit, job.urgency) for job in jobs] == [
        (1, 0.0, 20),
        (0, 10.0, 16),
        (2, 10.0, 16),
    ]
    for job in jobs:
        validate(job.jobspec)
    first, second, third = (job.jobspec for job in jobs)
    assert ResourceRequest.from_jobspec(first) == ResourceRequest(2, 1, 0, 2, False, 7200.0)
    assert simulation_config(first).run_duration == 5400.0  # type: ignore[union-attr]
    assert ResourceRequest.from_jobspec(second) == ResourceRequest(4, 2, 0, 0, False, 60.0)
    assert second["attributes"]["system"]["job"]["name"] == "b"
    assert ResourceRequest.from_jobspec(third).gpus_per_slot == 1


def test_csv_with_a_header(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("submit,duration,ntasks,timelimit\n0,30,2,\n1.5,10m,1,1h\n")
    first, second = load(path)
    assert (first.submit, second.submit) == (0.0, 1.5)
    assert ResourceRequest.from_jobspec(first.jobspec).duration == 30.0  # limit = duration
    assert simulation_config(second.jobspec).run_duration == 600.0  # type: ignore[union-attr]
    assert ResourceRequest.from_jobspec(second.jobspec).duration == 3600.0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1, 2]", "trace:1: must be a JSON object"),
        ("{", "trace:1: not JSON"),
        ('{"duration": 5}', "trace:1: submit: missing"),
        ('{"submit": 0}', "trace:1: duration: missing"),
        ('{"submit": 0, "duration": 0}', "trace:1: duration: must be more than 0"),
        ('{"submit": -1, "duration": 5}', "trace:1: submit: must be a finite number >= 0"),
        ('{"submit": 0, "duration": "5min"}', "trace:1: duration: invalid Flux standard duration"),
        ('{"submit": 0, "duration": true}', "trace:1: duration: must be a number of seconds"),
        ('{"submit": 0, "duration": 5, "ntasks": 0}', "trace:1: ntasks: must be an integer >= 1"),
        ('{"submit": 0, "duration": 5, "urgency": 32}', "trace:1: urgency: must be 0-31, got 32"),
        ('{"submit": 0, "duration": 5, "queue": "x"}', "trace:1: queue: not a trace field"),
        ('{"submit": 0, "duration": 5, "nodes": 3, "ntasks": 2}', "trace:1: node count must not"),
    ],
)
def test_bad_lines_name_the_line_and_field(line: str, message: str) -> None:
    with pytest.raises(PfluxError, match=message):
        parse(['{"submit": 0, "duration": 1}', line][1:])


def test_bad_csv_cell_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("submit,duration,ntasks\n0,5,1\n0,5,two\n")
    with pytest.raises(PfluxError, match=r"t.csv:3: ntasks: must be an integer >= 1, got 'two'"):
        load(path)


def test_missing_file() -> None:
    with pytest.raises(PfluxError, match=r"trace /nonexistent\.jsonl: No such file"):
        load("/nonexistent.jsonl")


@given(st.floats(min_value=1e-6, max_value=1e7, allow_nan=False, allow_infinity=False))
def test_run_time_is_read_back_to_the_bit(run: float) -> None:
    config = simulation_config(jobspec_for(run, 0.0))
    assert config is not None
    assert config.run_duration == run
