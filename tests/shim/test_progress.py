"""flux.progress: the bottom line's escapes and a ProgressBar's text, as flux-core draws
them (the terminal size read from COLUMNS and LINES)."""

from __future__ import annotations

import os

from support.shim import run_flux

CODE = """
    import os, sys
    from flux.progress import Bottombar, ProgressBar
    bar = ProgressBar(total=4, style="bar", before="{count}/{total} {name} ", name="jobs")
    bar.start()
    for _ in range(3):
        bar.update()
    print(str(bar), file=sys.stderr)
    bar.update(name="done")
    bar.stop()
    bb = Bottombar(i=0).start()
    bb.update(i=7)
    print(bb.i, type(bb.elapsed.dt).__name__, file=sys.stderr)
    bb.stop()
    """


def test_progressbar_draws_its_bar_in_the_last_line() -> None:
    os.environ.update(COLUMNS="40", LINES="10")
    try:
        proc = run_flux(CODE, None)
    finally:
        del os.environ["COLUMNS"], os.environ["LINES"]
    assert proc.returncode == 0, proc.stderr
    # 40 columns: "3/4 jobs ", "  75.0%" and the edges leave 22 for the bar, 3/4 of
    # them full (16.5, the half drawn with the style's last glyph as flux-core does)
    assert proc.stderr.splitlines() == [
        "3/4 jobs │" + "█" * 17 + "─" * 5 + "│  75.0%",
        "7 timedelta",
    ]
    out = proc.stdout
    # the scroll region is every row but the last, the bar drawn on row 10
    assert out.startswith("\0337\033[r\0338\033D\033M\0337\033[1;9r\0338")
    assert "\0337\033[10;1H\033[2K\033[?7l\033[0m1/4 jobs │" in out
    # stopped: the region reset and the final bar left as a line of its own
    assert "\033[r\0338" + "4/4 done │" + "█" * 22 + "│ 100.0%\n" in out
    assert out.endswith("\033[r\0338i=7\n")
