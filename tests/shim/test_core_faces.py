"""pflux and its flux package read the same input the same way through ``_pfluxcore``:
each pair of faces, in-process, against arbitrary input (hypothesis), each keeping
its own error wording."""

from __future__ import annotations

import errno
import importlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import NoInstanceError
from pflux.protocol import uri as pflux_uri
from support.shim import SHIM_PYTHON, flux_output


@pytest.fixture(scope="module")
def flux() -> Iterator[Any]:
    """The flux package, imported into this process from the shim's directory."""
    sys.path.insert(0, str(SHIM_PYTHON))
    try:
        yield importlib.import_module("flux")
    finally:
        sys.path.remove(str(SHIM_PYTHON))
        for name in [m for m in sys.modules if m == "flux" or m.startswith("flux.")]:
            del sys.modules[name]


uris = st.one_of(
    st.text(min_size=1, max_size=20),
    st.builds("{}://{}".format, st.sampled_from(["local", "ssh", "tcp", ""]), st.text(max_size=20)),
)


@settings(max_examples=300)
@given(uri=uris)
def test_both_faces_find_the_same_socket_in_a_uri(flux: Any, uri: str) -> None:
    handle = importlib.import_module("flux.core.handle")
    try:
        ours: str | Exception = pflux_uri.socket_path(uri)
    except NoInstanceError as exc:
        ours = exc
    try:
        theirs: str | Exception = handle._socket_path(uri)
    except OSError as exc:
        theirs = exc
    if isinstance(ours, str):
        assert theirs == ours
        return
    assert isinstance(theirs, OSError)
    assert theirs.errno == errno.EINVAL
    if "names no socket" in str(ours):
        assert "names no socket" in str(theirs)
    else:
        assert "only local:// is supported" in str(ours)
        assert "is not supported (pflux serves local:// URIs only)" in str(theirs)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"PFLUX_URI": "local:///a", "FLUX_URI": "local:///b"}, "local:///a"),
        ({"PFLUX_URI": "", "FLUX_URI": "local:///b"}, "local:///b"),
        ({}, None),
    ],
)
def test_both_faces_read_a_process_environment_pflux_s_variable_first(
    flux: Any, environ: dict[str, str], expected: str | None
) -> None:
    from pflux.cli import uri as cli_uri
    from pflux.errors import PfluxError

    resolver = importlib.import_module("flux.uri.uri").FluxURIResolver()
    env = {"PATH": os.environ["PATH"], **environ}
    with subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        try:
            child.stdin.write(b"up\n")
            child.stdin.flush()
            assert child.stdout.readline() == b"up\n"  # cat runs: its own environment is read
            target = f"pid:{child.pid}"
            if expected is None:
                with pytest.raises(ValueError, match="doesn't seem to have a FLUX_URI"):
                    resolver.resolve(target)
                with pytest.raises(PfluxError, match="not in a pflux instance"):
                    cli_uri._from_pid(str(child.pid))
            else:
                assert resolver.resolve(target).uri == expected
                assert cli_uri._from_pid(str(child.pid)) == expected
        finally:
            child.stdin.close()


NOW = 1_700_000_000.0
STATES = [1, 2, 4, 8, 16, 32, 64]
RESULTS = [1, 2, 4, 8]
maybe_time = st.none() | st.floats(0, 2 * NOW, allow_nan=False)
jobs = st.fixed_dictionaries(
    {
        "id": st.integers(1, 2**40),
        "state": st.sampled_from(STATES),
        "urgency": st.integers(0, 31),
        "priority": st.integers(0, 2**32 - 1),
    },
    optional={
        "result": st.sampled_from(RESULTS),
        "waitstatus": st.sampled_from([0, 256, 9, 2 << 8, 126 << 8, 127 << 8, 134]),
        "t_run": st.floats(0, NOW, allow_nan=False),
        "t_cleanup": st.floats(0, NOW, allow_nan=False),
        "expiration": st.floats(0, 2 * NOW, allow_nan=False),
        "duration": st.floats(0, 1e6, allow_nan=False),
        "nodelist": st.sampled_from(["", "node[0-3]"]),
        "exception_occurred": st.booleans(),
        "exception_severity": st.integers(0, 7),
        "exception_type": st.sampled_from(["cancel", "exec", "timeout", "alloc"]),
        "exception_note": st.sampled_from(["", "by user"]),
        "dependencies": st.lists(
            st.sampled_from(["after:f1", f"begin-time={NOW + 3600}", f"begin-time={NOW + 90061}"])
        ),
        "annotations": st.sampled_from(
            [{}, {"sched": {"t_estimate": NOW + 5.5}}, {"sched": {"t_estimate": NOW - 1}}]
        ),
    },
)
#: the fields both faces work out, by pflux's field name and flux's attribute
WORKED_OUT = [
    "state", "state_single", "result", "result_abbrev", "status", "status_abbrev",
    "runtime", "t_remaining", "returncode", "contextual_info", "contextual_time",
    "inactive_reason", "state_emoji", "result_emoji", "status_emoji",
]  # fmt: skip


@settings(max_examples=300)
@given(data=jobs)
def test_both_faces_work_out_a_jobs_fields_alike(flux: Any, data: dict[str, Any]) -> None:
    from pflux.cli.jobfields import JobInfo

    info = importlib.import_module("flux.job.info")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(time, "time", lambda: NOW)
        ours, theirs = JobInfo(dict(data)), info.JobInfo(dict(data))
        for field in WORKED_OUT:
            assert str(ours.get(field)) == str(getattr(theirs, field)), field
        assert str(ours.get("dependencies")) == str(theirs.dependencies)


def test_both_faces_head_each_field_and_ask_for_its_attributes_alike(flux: Any) -> None:
    from pflux.cli import jobfields

    info = importlib.import_module("flux.job.info")
    infoformat = importlib.import_module("flux.job._infoformat")
    fields = [*jobfields.FIELDS, "annotations.sched.x", "sched.reason_pending", "user.y"]
    for field in fields:
        shown = infoformat.JobInfoFormat("{" + field + "}").header()
        assert shown == jobfields.heading(field), field
        assert set(jobfields.attrs_for([field])) == info.job_fields_to_attrs([field]), field


numbers = st.floats(0, 4e9, allow_nan=False) | st.just(0.0)


@settings(max_examples=300)
@given(
    value=numbers,
    conversion=st.sampled_from(["", "F", "H", "P", "D"]),
    spec=st.sampled_from(["", "h", ">8h", "<5.3+", ">12", "^6.2h", "<3+"]),
)
def test_both_faces_format_a_value_alike(
    flux: Any, value: float, conversion: str, spec: str
) -> None:
    from pflux.cli.jobformat import convert, format_value

    util = importlib.import_module("flux.util")
    field = "{0" + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
    assert format_value(convert(value, conversion), spec) == util.UtilFormatter().format(
        field, value
    )


@settings(max_examples=100)
@given(
    value=st.just(0.0) | st.floats(1, 4e9, allow_nan=False),
    spec=st.sampled_from(["", "::>20h", "%H:%M::<8", "%b%d %R::>12h", "%FT%T"]),
)
def test_both_faces_format_a_time_alike(flux: Any, value: float, spec: str) -> None:
    from pflux.cli.jobformat import convert, format_value

    util = importlib.import_module("flux.util")
    theirs = util.UtilFormatter().format("{0!d:" + spec + "}", value)
    assert format_value(convert(value, "d"), spec) == theirs


class _Event:
    def __init__(self, name: str, context: dict[str, Any]) -> None:
        self.name, self.context = name, context


@given(
    events=st.lists(
        st.sampled_from(
            [("start", {}), ("memo", {"x": 1}), ("memo", {"uri": "local:///n"}), ("finish", {})]
        )
    )
)
def test_the_uri_a_job_posts_is_its_first_memo_uri_before_it_finishes(
    events: list[tuple[str, dict[str, Any]]],
) -> None:
    from _pfluxcore.uri import posted

    names = [name if "uri" not in context else "uri" for name, context in events]
    ends = [names.index(n) for n in ("uri", "finish") if n in names]
    expected = "local:///n" if ends and names[min(ends)] == "uri" else None
    assert posted(_Event(name, context) for name, context in events) == expected


def test_the_flux_package_reads_each_of_these_through_the_core() -> None:
    """In a job's own interpreter (``python -I``, the shim on its path) the flux
    package's URIs, constraint parser, job fields and format language are the core's."""
    out = flux_output(
        """
        import flux.core.handle, flux.uri.uri, flux.constraint.parser, flux.job.info
        import flux.job._infoformat, flux.util
        mods = (flux.core.handle._uri, sys.modules["flux.uri.uri"]._uri,
                flux.constraint.parser._core, sys.modules["flux.job.info"]._jobinfo,
                flux.job._infoformat._jobinfo, flux.util.outputformat)
        print(" ".join(sorted({m.__name__ for m in mods})))
        """,
        None,
    )
    assert out.split() == [
        "_pfluxcore.constraint", "_pfluxcore.jobinfo", "_pfluxcore.outputformat", "_pfluxcore.uri",
    ]  # fmt: skip
