"""Submit options both faces translate alike: ``--signal`` and ``--setattr``'s keys.

Each face parses durations by its own rules, so ``signal_option`` takes that
parser from its caller; errors are ValueErrors worded ``--OPTION=VALUE: why``.
"""

from __future__ import annotations

from .namepattern import bad

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from typing import Any, Callable


def signal_option(text: str, seconds: Callable[[str], float]) -> dict[str, Any]:
    """``--signal=[SIG][@TIME]`` as the ``signal`` shell option, flux-core's defaults
    (SIGUSR1, 60s) filled in.  SIG is a number or a name, with or without ``SIG``,
    in any case; ``seconds`` turns TIME into seconds (a ValueError for bad text)."""
    import signal

    name, _, when = text.partition("@")
    name = name or "SIGUSR1"
    if name.isascii() and name.isdigit():
        signum = int(name)
    else:
        upper = name.upper()
        try:
            signum = int(signal.Signals[upper if upper.startswith("SIG") else f"SIG{upper}"])
        except KeyError:
            signum = 0
    if not 0 < signum < signal.NSIG:
        raise bad("--signal", text, f"{name} is not a valid signal")
    timeleft = seconds(when or "60s")
    if timeleft == float("inf"):
        raise bad("--signal", text, "the time must be finite")
    return {"signum": signum, "timeleft": timeleft}


def attribute_key(key: str) -> str:
    """Where ``--setattr`` puts ``key``, dotted from the jobspec's root.

    flux-core's rule: a key starting ``system.``, ``user.`` or ``attributes.``
    is taken as it is (under ``attributes``); a leading ``.`` addresses
    ``attributes`` itself; any other key goes under ``attributes.system``.
    """
    if key.startswith("."):
        return "attributes" + key
    if not key.startswith(("attributes.", "user.", "system.")):
        key = "system." + key
    return key if key.startswith("attributes.") else "attributes." + key
