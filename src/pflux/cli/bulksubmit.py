"""``pflux bulksubmit [OPTIONS] COMMAND... [::: INPUTS...]``: one job per input, as
``flux bulksubmit`` (an ``xargs`` or GNU ``parallel`` for jobs).

The command and the options that take values are templates (``bulkinputs``);
the inputs come from ``:::`` lists and ``::::`` files, else from stdin, cut at
``--sep``. Every job option of ``submit`` applies to each job, ``--cc``/``--bcc``
copy each one, and the jobs go as they are built, a window in flight, through the
API's ``submit_each``, so thousands go as fast as ``submit --cc`` and cost the
client a window's jobspecs (jobs whose inputs fill only the command, the name,
``--cwd`` or the output paths are made from one template, ``jobtemplate``); a job
whose options prove bad stops the submission there, the jobs before it submitted. ``--dry-run``
prints what each job would be (``bulksubmit: submit ...``) and submits none.
"""

from __future__ import annotations

import itertools
import sys

from pflux.cli import base, bulkinputs, jobopts, jobtemplate, options, submit
from pflux.errors import SpecError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


def main(argv: list[str]) -> int:
    """Entry point of ``pflux bulksubmit``."""
    args = _parser().parse_args(argv)
    return base.run("bulksubmit", lambda: _bulksubmit(args))


def _parser() -> options.OptionParser:
    parser = base.options("bulksubmit", "Submit a job per input (from ::: lists or stdin).")
    parser.usage = "pflux bulksubmit [OPTIONS...] COMMAND [ARGS...] [::: INPUTS...]..."
    jobopts.add_options(parser, jobspec_format=False)
    submit.add_submission_options(parser)
    group = parser.add_argument_group("inputs")
    group.add_argument("--shuffle", action="store_true", help="submit the jobs in a random order")
    group.add_argument(
        "--sep",
        metavar="STRING",
        default="\n",
        help="what separates inputs read from stdin or a file (default newline; escapes"
        " such as \\t are read; none: any whitespace)",
    )
    group.add_argument(
        "--define",
        action="append",
        default=[],
        metavar="NAME=CODE",
        help="{.NAME} (or {N.NAME}) is the Python expression CODE of the input x",
    )
    return parser


def _bulksubmit(args: options.Args) -> int:
    commands = _commands(args)
    if args.shuffle:
        import random

        random.shuffle(commands)
    copies = submit.cc_list(args)
    total = len(commands) * len(copies)
    if total == 0:
        raise SpecError("no jobs provided for bulk submission")
    if args.dry_run:
        if args.progress:
            print(f"bulksubmit: submitting a total of {total} jobs")
        for _job, shown in commands:
            print(f"bulksubmit: submit {shown}")
        return 0
    if args.verbose:
        for _job, shown in commands:
            print(f"bulksubmit: submit {shown}")
    cc_env = bool(args.cc)  # each job's copies built as they go, as submit --cc's
    build = jobtemplate.Templates(jobopts.Requests())
    each = (
        submit.copies_of("bulksubmit", job, copies, cc_env=cc_env, build=build)
        for job, _ in commands
    )
    jobs = submit.primed(itertools.chain.from_iterable(each))
    return submit.submit_all("bulksubmit", args, jobs, total)


def _commands(args: options.Args) -> list[tuple[options.Args, str]]:
    """Each job's options and command (a namespace as ``submit`` parses one), and how a
    dry run shows it."""
    sep: str | None = args.sep.encode("utf-8").decode("unicode_escape")
    if sep is not None and sep.lower() == "none":
        sep = None
    if sep == "":
        raise SpecError("--sep: must not be empty")
    found = bulkinputs.methods(args.define)
    template, lists, links = bulkinputs.split_inputs(args.command, sep, sys.stdin)
    if template[:1] == ["--"]:
        del template[0]
    if not lists:
        lists = [bulkinputs.split_text(sys.stdin.read(), sep)]
    # {cc} is kept for the copies (submit.copies_of); without --cc or --bcc it is empty
    cc = "{cc}" if args.cc or args.bcc else ""
    given = vars(args)
    templates = [
        dest
        for dest in bulkinputs.OPTION_PREFIXES
        if given.get(dest) is not None and (dest == "cc" or _may_expand(given[dest]))
    ]
    jobs = []
    for seq, combo in enumerate(bulkinputs.combine(lists, links)):
        named = {"seq": seq, "seq1": seq + 1, "cc": cc}
        job = options.Args()
        values = vars(job)
        values.update(given)
        values["command"] = bulkinputs.expand(template or ["{}"], combo, found, named)
        changed = {}
        for dest in templates:
            value = values[dest]
            values[dest] = _expanded(dest, value, combo, found, named)
            if values[dest] != value or dest == "cc":
                changed[dest] = values[dest]
        jobs.append((job, _shown(changed, values["command"])))
    return jobs


def _may_expand(value: Any) -> bool:
    """Whether an option's value could differ once expanded (``_expanded``): text without
    braces or a list marker formats to itself."""
    if isinstance(value, str):
        return "{" in value or "}" in value or bulkinputs.LIST_SENTINEL in value
    if isinstance(value, (list, tuple)):
        return any(_may_expand(item) for item in value)
    return False


def _expanded(
    dest: str,
    value: Any,
    combo: Sequence[str],
    found: Mapping[str, bulkinputs.Method],
    named: Mapping[str, Any],
) -> Any:
    """An option's value with each template in it expanded (``--env``'s rules and the
    dependencies are ``(kind, text)`` pairs: the text is the template)."""
    if isinstance(value, str):
        return bulkinputs.expand_option(dest, value, combo, found, named)
    if isinstance(value, list):
        return [_expanded(dest, item, combo, found, named) for item in value]
    if isinstance(value, tuple):
        kind, text = value
        return (kind, bulkinputs.expand_option(dest, text, combo, found, named))
    return value


def _shown(changed: Mapping[str, Any], command: Sequence[str]) -> str:
    """The options a template changed, then the command: flux's dry-run line."""
    words = []
    for dest, value in changed.items():
        if value and dest in ("env", "dependencies"):  # (kind, text) pairs, as flux lists them
            texts = [f"{kind}{text}" if dest == "env" else text for kind, text in value]
            words.append(f"{bulkinputs.OPTION_PREFIXES[dest]}{texts}")
        elif value:
            words.append(f"{bulkinputs.OPTION_PREFIXES[dest]}{value}")
    return " ".join([*words, *command])
