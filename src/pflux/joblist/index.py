"""The job-list index: every job's summary, fed by journal entries, and three orderings.

Entries are applied per job in ``seq`` order. At start-up the journal's backlog
(every job's history, read from the KVS) interleaves with live entries, so an
entry whose ``seq`` the job already has is a duplicate and is dropped, and one
whose predecessors have not arrived is held back until they do (the journal
guarantees that they will, before its sentinel). Annotations travel with
``seq`` -1 and are merged whenever they come.

Listing follows flux-core's job-list: pending jobs by priority (highest first)
then id, running jobs by ``t_run`` and inactive jobs by ``t_inactive``, newest
first. Each ordering is a list kept sorted as jobs move, so a list request
walks it and stops at ``max_entries`` instead of sorting every job; nearly
every insertion is an append, since new jobs are the newest. While the backlog
is read nothing is listed and the orderings are built once, at the sentinel
(flux-core does the same to avoid a quadratic replay).

A purged job's ``purge`` entry (``seq`` -1, after all its events) removes it
from every table, and, while the backlog is still read, keeps its history or
its digest entry, which may come after, from bringing it back; the purged ids
are collected in ``purged``, for the cache to delete.

Inactive jobs may come from job-list's cache instead (``preload``): the
journal's digest names each inactive job with its event count, and a cached
summary built from as many events is taken as it is; the others are asked
for again (``digest`` returns them). Cached jobs no digest names are dropped
at the sentinel (``dropped``). When the journal finds that the cached jobs are
exactly its inactive jobs (``held``) it sends no digest, and all are taken
(``take_cached``). Jobs that become inactive here are collected in ``ended``,
when it is a list, for the cache to write.
"""

from __future__ import annotations

import heapq
import logging
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter, itemgetter
from typing import Any, Final

from pflux.errors import EventlogError
from pflux.joblist.attributes import Selection, to_json
from pflux.joblist.snapshot import CONFIRMED, READ, Frozen, Row
from pflux.joblist.stats import JobCounts
from pflux.joblist.summary import JobSummary
from pflux.protocol.manager import held_sum
from pflux.spec.eventlog import Event
from pflux.spec.resultcodes import USERID_ANY
from pflux.spec.states import State

log = logging.getLogger("pflux.job-list")

_PENDING: Final = int(State.PENDING)
_RUNNING: Final = int(State.RUNNING)
_PENDING_STATES: Final = frozenset((State.DEPEND, State.PRIORITY, State.SCHED))
_INACTIVE: Final = int(State.INACTIVE)

Key = tuple[float, int]
_Filters = tuple[int, int, str | None, frozenset[str] | None]  # userid, results, name, queues


def _pending_key(s: JobSummary) -> Key:
    return (-s.priority, s.id)


# (t_run, id) and (t_inactive, id), without a Python call per key (a restart sorts them all)
_running_key: Callable[[JobSummary], Key] = attrgetter("t_run", "id")
_inactive_key: Callable[[JobSummary], Key] = attrgetter("t_inactive", "id")


class _Ordered:
    """Summaries sorted ascending by ``key`` (keys are unique: they end with the id)."""

    __slots__ = ("items", "key")

    def __init__(self, key: Callable[[JobSummary], Key]) -> None:
        self.key = key
        self.items: list[JobSummary] = []

    def __len__(self) -> int:
        return len(self.items)

    def add(self, summary: JobSummary) -> None:
        items, key = self.items, self.key
        k = key(summary)
        if not items or key(items[-1]) < k:
            items.append(summary)
        else:
            items.insert(bisect_right(items, k, key=key), summary)

    def discard(self, summary: JobSummary, k: Key) -> None:
        """Remove ``summary``, which was added when its key was ``k``."""
        items = self.items
        i = bisect_left(items, k, key=self.key)
        if i < len(items) and items[i] is summary:
            del items[i]
        else:  # a bug: keep going, correctly if slowly
            log.error("job-list: job %d was not where its key put it", summary.id)
            if summary in items:
                items.remove(summary)


class JobIndex:
    """Every job job-list knows, by id, and the orderings it lists them in."""

    def __init__(self) -> None:
        self.jobs: dict[int, JobSummary] = {}
        self.pending = _Ordered(_pending_key)
        self.running = _Ordered(_running_key)
        self.inactive = _Ordered(_inactive_key)
        # a dict, not Flag arithmetic: enum.Flag's & costs microseconds on this hot path
        self._orderings: dict[State, _Ordered] = {
            State.DEPEND: self.pending,
            State.PRIORITY: self.pending,
            State.SCHED: self.pending,
            State.RUN: self.running,
            State.CLEANUP: self.running,
            State.INACTIVE: self.inactive,
        }
        self.ready = False  # the backlog is in and the orderings are built
        self.ended: list[JobSummary] | None = None  # jobs become inactive, when collected
        self.dropped: list[int] = []  # cached jobs that no digest named
        self.purged: list[int] = []  # jobs purged since the cache was last told
        self.job_counts = JobCounts()  # job-stats' counts, kept as jobs move
        self._cached: dict[int, JobSummary] = {}  # from the cache, not yet named by a digest
        self.frozen: Frozen | None = None  # inactive jobs from the snapshot, as columns
        self._held: dict[int, dict[int, dict[str, Any]]] = {}
        self._early_annotations: dict[int, list[dict[str, Any]]] = {}
        self._removed: set[int] = set()  # invalidated while the backlog is read

    def __len__(self) -> int:
        frozen = self.frozen
        return len(self.jobs) + (0 if frozen is None else frozen.confirmed)

    def get(self, jobid: int) -> JobSummary | None:
        summary = self.jobs.get(jobid)
        frozen = self.frozen
        if summary is None and frozen is not None:
            i = frozen.find(jobid)
            if i is not None and frozen.state[i] == CONFIRMED:
                return frozen.summary(i)
        return summary

    @property
    def held(self) -> int:
        """Entries waiting for their predecessors."""
        return sum(len(entries) for entries in self._held.values())

    # --- feeding -----------------------------------------------------------------------

    def preload(self, cached: dict[int, JobSummary]) -> None:
        """Inactive jobs from the cache, each to be confirmed by the journal's digest."""
        self._cached = cached

    def preload_frozen(self, frozen: Frozen) -> None:
        """Inactive jobs from the snapshot, each to be confirmed by the journal."""
        self.frozen = frozen

    @property
    def preloaded(self) -> int:
        """Cached jobs no digest has named yet."""
        return len(self._cached) + (0 if self.frozen is None else len(self.frozen))

    def digest(self, pairs: Any) -> list[int]:
        """Take the cached jobs a digest ``[[id, count], ...]`` confirms; return the ids of
        the others it names, whose history must be asked for."""
        if not isinstance(pairs, list):
            log.warning("job-list: ignoring a digest that is not a list")
            return []
        cached, jobs, removed, wanted = self._cached, self.jobs, self._removed, []
        frozen = self.frozen
        confirmed: list[JobSummary] = []
        keys: Counter[tuple[str | None, int]] = Counter()
        for pair in pairs:
            if type(pair) is not list or len(pair) != 2:
                log.warning("job-list: ignoring a malformed digest entry: %.200r", pair)
                continue
            jobid, count = pair
            if type(jobid) is not int or type(count) is not int:
                log.warning("job-list: ignoring a malformed digest entry: %.200r", pair)
                continue
            summary = cached.pop(jobid, None)
            i = None if frozen is None else frozen.find(jobid)
            if i is not None and frozen is not None and frozen.state[i] == READ:
                if frozen.nevents[i] == count and jobid not in jobs and jobid not in removed:
                    frozen.confirm(i)
                    keys[frozen.key(i)] += 1
                    continue
                frozen.remove(i)
            if jobid in jobs or jobid in removed:
                continue
            if summary is not None and summary.next_seq == count:
                jobs[jobid] = summary
                confirmed.append(summary)
            else:
                wanted.append(jobid)
        self.job_counts.update_inactive(confirmed)
        if keys:
            self.job_counts.add_inactive(keys)
        return wanted

    def cached_sum(self) -> tuple[int, int]:
        """The count and ``held_sum`` of the cached jobs, for the journal to compare."""
        if self.frozen is not None:
            return self.frozen.held()
        cached = self._cached
        return len(cached), held_sum((s.id, s.next_seq) for s in cached.values())

    def take_cached(self) -> None:
        """Take every cached job: the journal's inactive jobs are exactly these (``held``)."""
        cached, self._cached = self._cached, {}
        jobs, removed = self.jobs, self._removed
        frozen = self.frozen
        if frozen is not None:
            for jobid in [*jobs, *removed]:  # live entries came first: they have the jobs
                i = frozen.find(jobid)
                if i is not None:
                    frozen.remove(i)
            self.job_counts.add_inactive(frozen.confirm_all())
        if jobs or removed:  # live entries came first: they have the jobs they name
            cached = {i: s for i, s in cached.items() if i not in jobs and i not in removed}
        jobs.update(cached)
        self.job_counts.update_inactive(list(cached.values()))

    def feed(self, entries: Iterable[Any]) -> None:
        """Apply journal entries ``{id, seq, entry, jobspec?, R?}``; bad ones are logged."""
        for entry in entries:
            self.feed_one(entry)

    def feed_one(self, entry: Any) -> None:
        jobid = entry.get("id") if isinstance(entry, dict) else None
        seq = entry.get("seq") if isinstance(entry, dict) else None
        if type(jobid) is not int or type(seq) is not int:
            log.warning("job-list: ignoring a malformed journal entry: %.200r", entry)
            return
        if seq < 0:
            if _name(entry) == "purge":
                self._purge(jobid)
            else:
                self._annotate(jobid, entry)
            return
        summary = self.jobs.get(jobid)
        frozen = self.frozen
        if summary is None and frozen is not None:
            i = frozen.find(jobid)
            if i is not None:
                if frozen.state[i] == CONFIRMED:
                    return  # inactive: it has every event
                frozen.remove(i)  # events of a job the snapshot has ended: not the same job
        expected = summary.next_seq if summary is not None else 0
        if seq < expected or (summary is None and jobid in self._removed):
            return  # already applied (the backlog and live entries overlap)
        if seq > expected:
            self._held.setdefault(jobid, {})[seq] = entry
            return
        applied = self._apply(jobid, summary, entry)
        held = self._held.get(jobid)
        if held is not None:
            while applied is not None and applied.next_seq in held:
                applied = self._apply(jobid, applied, held.pop(applied.next_seq))
            if not held or applied is None:
                del self._held[jobid]

    def _apply(
        self, jobid: int, summary: JobSummary | None, entry: dict[str, Any]
    ) -> JobSummary | None:
        """Apply the entry a job expects next; None if the job is gone."""
        if summary is None:
            summary = JobSummary(jobid)
            self.jobs[jobid] = summary
            for update in self._early_annotations.pop(jobid, ()):
                summary.annotate(update)
        summary.next_seq += 1
        try:
            event = Event.from_json(entry.get("entry"))
        except EventlogError as exc:
            log.warning("job-list: job %d seq %d: bad event: %s", jobid, entry["seq"], exc)
            return summary
        if event.name == "invalidate":
            # the job was refused at submission and removed from the KVS: forget it
            self._forget(summary)
            return None
        old_state, old_queue = summary.state, summary.queue
        if self.ready and event.name == "priority" and old_state in _PENDING_STATES:
            # the key changes with the priority: take the job out before it does
            self.pending.discard(summary, _pending_key(summary))
            summary.apply(event, entry)
            self._list(summary)
        else:
            summary.apply(event, entry)
            if summary.state is not old_state:
                if self.ready:
                    self._move(summary, old_state)
                if summary.state is State.INACTIVE and self.ended is not None:
                    self.ended.append(summary)
        if summary.state is not old_state or summary.queue != old_queue:
            self.job_counts.update(summary)
        return summary

    def _annotate(self, jobid: int, entry: dict[str, Any]) -> None:
        event = entry.get("entry")
        update = event.get("context") if isinstance(event, dict) else None
        if not isinstance(update, dict):
            log.warning("job-list: job %d: annotations entry without an object", jobid)
            return
        summary = self.jobs.get(jobid)
        if summary is not None:
            summary.annotate(update)
        elif jobid not in self._removed:
            # a live annotation can overtake the job's history from the backlog
            self._early_annotations.setdefault(jobid, []).append(update)

    def _purge(self, jobid: int) -> None:
        """The job was purged: gone from the KVS, so from here too."""
        self.purged.append(jobid)
        self._held.pop(jobid, None)
        self._early_annotations.pop(jobid, None)
        self._cached.pop(jobid, None)
        summary = self.jobs.get(jobid)
        frozen = self.frozen
        i = None if frozen is None or summary is not None else frozen.find(jobid)
        if summary is not None:
            self.job_counts.remove(summary, purged=True)
            self._forget(summary)
        elif i is not None and frozen is not None:
            if frozen.state[i] == CONFIRMED:
                self.job_counts.remove_inactive(frozen.key(i), purged=True)
            frozen.remove(i)
            if not self.ready:
                self._removed.add(jobid)
        elif not self.ready:
            self._removed.add(jobid)

    def _forget(self, summary: JobSummary) -> None:
        del self.jobs[summary.id]
        self.job_counts.remove(summary)
        ordered = self._ordering(summary.state)
        if self.ready and ordered is not None:
            ordered.discard(summary, ordered.key(summary))
        if not self.ready:
            self._removed.add(summary.id)

    # --- orderings ---------------------------------------------------------------------

    def _ordering(self, state: State) -> _Ordered | None:
        return self._orderings.get(state)  # NEW jobs are not listed until validated

    def _move(self, summary: JobSummary, old_state: State) -> None:
        """Move a job whose state changed; keys never change while a job is listed
        (t_run and t_inactive are set on entering their ordering, the priority is
        handled apart)."""
        old = self._ordering(old_state)
        new = self._ordering(summary.state)
        if old is new:
            return
        if old is not None:
            old.discard(summary, old.key(summary))
        self._list(summary)

    def _list(self, summary: JobSummary) -> None:
        ordering = self._ordering(summary.state)
        if ordering is not None:
            ordering.add(summary)

    def settle(self) -> None:
        """The backlog is complete: build the orderings; from now on keep them as jobs move."""
        if self.ready:
            return
        if self._held:
            log.error(
                "job-list: %d journal entries of %d jobs never got their predecessors",
                self.held,
                len(self._held),
            )
            self._held.clear()
        self._early_annotations.clear()
        self._removed.clear()
        self.dropped = list(self._cached)
        self._cached = {}
        if self.frozen is not None:
            self.dropped += self.frozen.drop_unconfirmed()
        # one pass, a dict by state: enum.Flag's & would cost microseconds per job
        orderings = (self.pending, self.running, self.inactive)
        for ordering in orderings:
            ordering.items = []
        by_state = self._orderings
        for summary in self.jobs.values():
            listed = by_state.get(summary.state)
            if listed is not None:
                listed.items.append(summary)
        for ordering in orderings:
            ordering.items.sort(key=ordering.key)
        self.ready = True

    # --- listing -----------------------------------------------------------------------

    def list(
        self,
        selection: Selection,
        *,
        max_entries: int = 0,
        userid: int = USERID_ANY,
        states: int = 0,
        results: int = 0,
        since: float = 0.0,
        name: str | None = None,
        queues: frozenset[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Jobs in flux-core's order, as ``to_json`` gives them.

        ``states`` and ``results`` are masks; a job matches either (flux's
        ``flux jobs -f running,failed``), and neither given means every job.
        ``since`` keeps only inactive jobs that became inactive after it.
        """
        out: list[dict[str, Any]] = []
        match = _matcher(userid, states, results, name, queues)
        filters = (userid, results, name, queues)
        for summary in self._candidates(states, results, since, filters):
            if match is None or match(summary):
                out.append(to_json(summary, selection))
                if len(out) == max_entries:
                    break
        return out

    def _candidates(
        self, states: int, results: int, since: float, filters: _Filters
    ) -> Iterator[JobSummary]:
        every = not states and not results
        if every or states & _PENDING:
            yield from self.pending.items
        if every or states & _RUNNING:
            yield from reversed(self.running.items)
        if every or states & _INACTIVE or results:
            yield from self._inactive(since, filters, bool(states & _INACTIVE))

    def _inactive(self, since: float, filters: _Filters, all_results: bool) -> Iterator[JobSummary]:
        """Inactive jobs newest first, down to ``since``: the snapshot's, those of the
        filters given, merged with the others."""
        listed: Iterator[JobSummary] = reversed(self.inactive.items)
        frozen = self.frozen
        if frozen is not None and frozen.confirmed:
            userid, results, name, queues = filters
            thawed = frozen.newest(
                since=since,
                userid=None if userid in (USERID_ANY, -1) else userid,
                results=0 if all_results else results,
                name=name,
                queues=queues,
            )
            ours: Iterator[tuple[Key, JobSummary | int]] = ((_inactive_key(s), s) for s in listed)
            theirs: Iterator[tuple[Key, JobSummary | int]] = iter(thawed)
            merged = heapq.merge(ours, theirs, key=itemgetter(0), reverse=True)
            for _, item in merged:
                if isinstance(item, JobSummary):
                    if item.t_inactive <= since:
                        return
                    yield item
                else:
                    summary = frozen.summary(item)
                    if summary is not None:
                        yield summary
            return
        for summary in listed:
            if summary.t_inactive <= since:
                break
            yield summary

    def inactive_rows(self) -> tuple[Frozen | None, Iterator[Row]]:
        """Every inactive job as the snapshot keeps them, in listing order: the snapshot's
        jobs as they are, if none has gone and all are older than the others (else None),
        and the others as rows."""
        items = self.inactive.items
        rows: Iterator[Row] = (
            (s.id, s.next_seq, s.t_inactive, s.userid, s.result, s.name, s.queue) for s in items
        )
        frozen = self.frozen
        if frozen is None or not frozen.confirmed:
            return None, rows
        whole = not frozen.changed and frozen.confirmed == len(frozen)
        if whole and (not items or _inactive_key(items[0]) > frozen.last_key()):
            return frozen, rows
        return None, heapq.merge(frozen.rows(), rows, key=itemgetter(2, 0))

    def counts(self) -> dict[str, int]:
        frozen = self.frozen
        return {
            "pending": len(self.pending),
            "running": len(self.running),
            "inactive": len(self.inactive) + (0 if frozen is None else frozen.confirmed),
        }


def _name(entry: dict[str, Any]) -> Any:
    event = entry.get("entry")
    return event.get("name") if isinstance(event, dict) else None


def _matcher(
    userid: int, states: int, results: int, name: str | None, queues: frozenset[str] | None
) -> Callable[[JobSummary], bool] | None:
    """A test for the filters given, or None when every job matches."""
    tests: list[Callable[[JobSummary], bool]] = []
    if userid not in (USERID_ANY, -1):
        tests.append(lambda s: s.userid == userid)
    if states or results:
        tests.append(lambda s: bool(s.state & states or s.result & results))
    if name is not None:
        tests.append(lambda s: s.name == name)
    if queues is not None:
        tests.append(lambda s: s.queue in queues)
    if not tests:
        return None
    if len(tests) == 1:
        return tests[0]
    return lambda s: all(test(s) for test in tests)
