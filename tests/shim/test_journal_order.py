"""``JournalConsumer``'s history when a live entry comes before the history it follows:
the job manager reads the history from the KVS while live entries go out, so a job
that ended just before the subscription may be heard of live first."""

from __future__ import annotations

from textwrap import dedent

from support.shim import flux_output

TAKE = """
from flux.job import JournalConsumer

def entry(jobid, seq, name, when):
    return {"id": jobid, "seq": seq, "entry": {"timestamp": when, "name": name}}

consumer = JournalConsumer(None, include_sentinel=True)
consumer.processing_inactive = True
consumer._take({"events": [entry(7, 2, "clean", 3.0)]})  # live, before the history
history = [entry(7, 0, "submit", 1.0), entry(7, 1, "finish", 2.0), entry(7, 2, "clean", 3.0)]
consumer._take({"events": history})
consumer._take({"sentinel": True})
consumer._take({"events": [entry(7, 2, "clean", 3.0), entry(8, 0, "submit", 4.0)]})
print([(int(e.jobid), e.name) for e in consumer.backlog if not e.is_empty()])
"""


def test_a_live_entry_before_the_history_leaves_none_of_the_history_out() -> None:
    out = flux_output(dedent(TAKE), None)
    assert out.strip() == str([(7, "submit"), (7, "finish"), (7, "clean"), (8, "submit")])
