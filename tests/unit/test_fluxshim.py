"""``pflux.fluxshim``: the shim's directories go first on PATH and PYTHONPATH, once,
keeping every other entry in its order; ``[shim] enable`` is checked."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import ConfigError
from pflux.fluxshim import ShimEnv, enabled

SHIM = ShimEnv(("/shim/bin", "/venv/bin"), ("/shim/python",), "/venv/bin/python")
ENTRIES = st.lists(st.sampled_from(["/usr/bin", "/bin", "", "/venv/bin", "/shim/bin", "/x"]))


@given(ENTRIES, ENTRIES)
def test_apply_puts_the_shim_first_once_and_keeps_the_rest(path: list[str], pp: list[str]) -> None:
    env = {"PATH": ":".join(path), "PYTHONPATH": ":".join(pp)}
    SHIM.apply(env)
    once = dict(env)
    SHIM.apply(env)
    assert env == once  # applying it again changes nothing
    entries = env["PATH"].split(":")
    assert entries[:2] == ["/shim/bin", "/venv/bin"]
    assert entries.count("/shim/bin") == entries.count("/venv/bin") == 1
    rest = [e for e in path if e not in SHIM.path] if ":".join(path) else ["/bin", "/usr/bin"]
    assert entries[2:] == rest
    assert env["PYTHONPATH"].split(":")[0] == "/shim/python"
    assert env["PFLUX_PYTHON"] == "/venv/bin/python"


def test_enable_is_a_boolean() -> None:
    assert enabled({}) is True
    assert enabled({"shim": {"enable": False}}) is False
    with pytest.raises(ConfigError, match=r"\[shim\] enable: must be true or false, got 1"):
        enabled({"shim": {"enable": 1}})
    with pytest.raises(ConfigError, match=r"\[shim\]: must be a table, got 'off'"):
        enabled({"shim": "off"})
