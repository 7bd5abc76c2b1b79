"""The perilog plugin's configuration: flux-core's keys, defaults and errors."""

from __future__ import annotations

from typing import Any

import pytest

from pflux.errors import PfluxError
from pflux.manager.plugins.perilog import PerilogCommand, _action, _log_ignore


def conf(kind: str, **table: Any) -> dict[str, Any]:
    return {"job-manager": {kind: table}}


def test_defaults_are_flux_cores() -> None:
    prolog = _action(conf("prolog", command=["p"]), "prolog")
    epilog = _action(conf("epilog", command=["e", "x"]), "epilog")
    assert prolog == PerilogCommand("prolog", ("p",), 1800.0, 60.0, True)
    assert epilog == PerilogCommand("epilog", ("e", "x"), 0.0, 60.0, False)
    assert prolog.description == "job-manager.prolog"
    assert _action({}, "prolog") is None


def test_options() -> None:
    table = {
        "command": ["p"],
        "timeout": "infinity",
        "kill-timeout": 0.5,
        "cancel-on-exception": False,
        "per-rank": True,
    }
    assert _action(conf("prolog", **table), "prolog") == PerilogCommand(
        "prolog", ("p",), 0.0, 0.5, False
    )
    minute = _action(conf("epilog", command=["e"], timeout="1m"), "epilog")
    assert minute == PerilogCommand("epilog", ("e",), 60.0, 60.0, False)
    # flux-core: a kill-timeout that is not positive means the default
    zero = _action(conf("epilog", command=["e"], **{"kill-timeout": 0}), "epilog")
    assert zero == PerilogCommand("epilog", ("e",), 0.0, 60.0, False)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"job-manager": []}, "[job-manager]: must be a table, got []"),
        ({"job-manager": {"prolog": "x"}}, "[job-manager.prolog]: must be a table, got 'x'"),
        (conf("prolog"), "[job-manager.prolog]: no command specified"),
        (conf("prolog", command="p"), "[job-manager.prolog] command: must be an array"),
        (conf("prolog", command=[]), "[job-manager.prolog] command: malformed prolog command"),
        (conf("epilog", command=["e"], timeout="5p"), "[job-manager.epilog] timeout: invalid"),
        (conf("epilog", command=["e"], timeout=-1), "[job-manager.epilog] timeout: invalid"),
        (conf("prolog", command=["p"], **{"kill-timeout": "1s"}), "kill-timeout: must be"),
        (conf("prolog", command=["p"], **{"per-rank": 1}), "per-rank: must be true or false"),
    ],
)
def test_errors_name_the_key(config: dict[str, Any], message: str) -> None:
    kind = "epilog" if "epilog" in str(config) else "prolog"
    with pytest.raises(PfluxError) as info:
        _action(config, kind)
    assert message in str(info.value)


def test_log_ignore() -> None:
    patterns = _log_ignore({"job-manager": {"perilog": {"log-ignore": ["^debug"]}}})
    assert [bool(p.search(t)) for p in patterns for t in ("", "debug: x")] == [
        True,
        False,
        False,
        True,
    ]
    with pytest.raises(PfluxError, match="log-ignore: must be an array"):
        _log_ignore({"job-manager": {"perilog": {"log-ignore": "x"}}})
