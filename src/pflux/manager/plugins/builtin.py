"""The plugins every job manager loads, in the order they see a job: one per RFC 26
dependency scheme, then the singleton count (of the jobs every other check
passed), then the prolog and epilog when the configuration names either."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pflux.manager.plugins.after import After, AfterAny, AfterExcept, AfterNotOk, AfterOk
from pflux.manager.plugins.begin_time import BeginTime
from pflux.manager.plugins.openmp import Fluid, String
from pflux.manager.plugins.perilog import Perilog
from pflux.manager.plugins.singleton import Singleton

if TYPE_CHECKING:
    from pflux.manager.plugins import Host, Plugin


def builtin(host: Host, config: dict[str, Any]) -> list[Plugin]:
    """The plugins for ``host``; a bad ``[job-manager.*]`` table stops start-up."""
    schemes = (After, AfterAny, AfterOk, AfterNotOk, AfterExcept, BeginTime, String, Fluid)
    plugins: list[Plugin] = [scheme(host) for scheme in schemes]
    plugins.append(Singleton(host))
    perilog = Perilog(host, config)
    if perilog.active:
        plugins.append(perilog)
    return plugins
