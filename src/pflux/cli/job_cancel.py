"""``pflux job cancel ID... [--] [MESSAGE...]``: flux's older spelling of ``pflux cancel``.

It is ``pflux job raise`` with a fatal ``cancel`` exception.
"""

from __future__ import annotations

from pflux.cli import job_raise


def main(argv: list[str]) -> int:
    return job_raise.run(argv, cancel=True)
