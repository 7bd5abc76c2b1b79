"""``flux.job._utils``: the ``--requires`` query language of flux's submission commands."""

from __future__ import annotations

from flux.constraint.parser import ConstraintParser


class MiniConstraintParser(ConstraintParser):
    """RFC 35's ``--requires``: a bare word is a property, ``host:``/``hosts:`` a
    hostlist, ``rank:`` ranks; properties given together make one term."""

    operator_map = {  # noqa: RUF012 - the parser's class-level tables, as its base declares
        None: "properties",
        "host": "hostlist",
        "hosts": "hostlist",
        "rank": "ranks",
    }
    split_values = {"properties": ","}  # noqa: RUF012
    combined_terms = {"properties"}  # noqa: RUF012
