"""pflux and its flux package read the same input the same way through ``_pfluxcore``:
each pair of faces, in-process, against arbitrary input (hypothesis), each keeping
its own error wording."""

from __future__ import annotations

import errno
import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import NoInstanceError
from pflux.protocol import uri as pflux_uri
from support.shim import SHIM_PYTHON


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
    with subprocess.Popen(["cat"], stdin=subprocess.PIPE, env=env) as child:
        try:
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
            assert child.stdin is not None
            child.stdin.close()
