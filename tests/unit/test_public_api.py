"""The public API's shape: ``pflux``'s ``__all__`` sorted and documented, loaded
lazily, one exception tree, and AsyncClient a typed twin of Client."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import pytest

import pflux
from pflux import errors
from pflux.api import AsyncClient, Client
from pflux.spec.builder import from_command


def public_methods(cls: type) -> dict[str, object]:
    methods = {name: getattr(cls, name) for name in vars(cls) if not name.startswith("_")}
    return {name: f for name, f in methods.items() if callable(f)}


def test_all_is_sorted_and_every_name_is_there_and_documented() -> None:
    assert pflux.__all__ == sorted(pflux.__all__)
    for name in pflux.__all__:
        if name != "__version__":
            assert getattr(pflux, name).__doc__, name


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = pflux.Nope  # type: ignore[attr-defined]


def test_import_pflux_loads_no_client_until_asked() -> None:
    code = "import sys, pflux; print(sorted(m for m in sys.modules if m.startswith('pflux')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # the finder of _pfluxcore, the logic pflux shares with its flux package, and the
    # loader of the names, alone
    loaded = "['pflux', 'pflux._corefinder', 'pflux.spec', 'pflux.spec.lazy']"
    assert out.stdout.strip() == loaded


def test_every_exception_is_a_pflux_error_defined_in_errors() -> None:
    exceptions = [getattr(pflux, n) for n in pflux.__all__ if n.endswith(("Error", "Timeout"))]
    assert {e.__name__ for e in exceptions} >= {
        "NoInstanceError",
        "ProtocolError",
        "RPCError",
        "RPCTimeout",
    }
    for exc in exceptions:
        assert issubclass(exc, pflux.PfluxError), exc
        assert exc.__module__ == "pflux.errors", exc
    defined = {
        n
        for n, v in vars(errors).items()
        if isinstance(v, type) and v.__module__ == errors.__name__
    }
    assert defined <= set(pflux.__all__)
    assert issubclass(pflux.RPCTimeout, pflux.RPCError)


@pytest.mark.parametrize(
    "cls", [Client, AsyncClient, pflux.JobHandle, pflux.AsyncJobHandle, pflux.Jobspec]
)
def test_every_public_method_is_typed_and_documented(cls: type) -> None:
    for name, method in public_methods(cls).items():
        sig = inspect.signature(method)  # type: ignore[arg-type]
        assert sig.return_annotation is not inspect.Signature.empty, name
        for param in sig.parameters.values():
            if param.name != "self" and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                assert param.annotation is not inspect.Parameter.empty, (name, param.name)
        assert method.__doc__, name


@pytest.mark.parametrize(
    ("blocking", "awaited"), [(Client, AsyncClient), (pflux.JobHandle, pflux.AsyncJobHandle)]
)
def test_the_async_twin_has_every_method_with_the_same_parameters(
    blocking: type, awaited: type
) -> None:
    sync, aio = public_methods(blocking), public_methods(awaited)
    assert set(sync) <= set(aio), set(sync) - set(aio)
    for name, method in sync.items():
        params = inspect.signature(method).parameters  # type: ignore[arg-type]
        twin = inspect.signature(aio[name]).parameters  # type: ignore[arg-type]
        assert [(p.name, p.kind) for p in params.values()] == [
            (p.name, p.kind) for p in twin.values()
        ], name
        # (async) iterators, and what gives one
        plain = name in (
            "close",
            "job",
            "events",
            "events_many",
            "follow_logs",
            "submit_each",
            "dmesg",
            "kvs_watch",
            "kvs_walk",
            "rexec",
            "subscribe",
        )
        assert inspect.iscoroutinefunction(aio[name]) != plain, name


def test_jobspec_from_command_is_pflux_submits_jobspec() -> None:
    jobspec = pflux.Jobspec.from_command(["app", "x"], num_tasks=2, duration=60)
    assert isinstance(jobspec, dict)
    env, cwd = dict(os.environ), os.getcwd()
    assert jobspec == from_command(["app", "x"], num_tasks=2, duration=60, environment=env, cwd=cwd)
    system = jobspec["attributes"]["system"]
    assert jobspec.setattr("user.tag", 1).setattr_shell_option("pmi", "off") is jobspec
    assert jobspec["attributes"]["user"] == {"tag": 1}
    assert system["shell"]["options"] == {"pmi": "off"}


def test_jobspec_from_command_refuses_what_the_builder_refuses() -> None:
    with pytest.raises(pflux.JobspecError):
        pflux.Jobspec.from_command(["app"], num_tasks=0)


def test_async_client_refuses_use_before_it_connects() -> None:
    with pytest.raises(pflux.PfluxError, match="not connected"):
        _ = AsyncClient().handle
