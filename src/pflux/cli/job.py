"""``pflux job SUBCOMMAND``: dispatch to one module per job sub-command."""

from __future__ import annotations

from pflux.cli import base, dispatch

SUBCOMMANDS: dict[str, str] = {
    "validate": "job_validate",
    "id": "job_id",
    "attach": "job_attach",
    "submit": "job_submit",
    "eventlog": "job_eventlog",
    "wait-event": "job_wait_event",
    "info": "job_info",
    "urgency": "job_urgency",
    "memo": "job_memo",
    "last": "job_last",
    "raise": "job_raise",
    "kill": "job_kill",
    "cancel": "job_cancel",
    "wait": "job_wait",
    "status": "job_status",
    "purge": "job_purge",
    "stats": "job_stats",
    "timeleft": "job_timeleft",
    "raiseall": "job_raiseall",
    "killall": "job_killall",
    "taskmap": "job_taskmap",
    "namespace": "job_namespace",
    "hostpids": "job_hostpids",
    "list": "job_list",
    "list-inactive": "job_list_inactive",
    "list-ids": "job_list_ids",
}

USAGE = """\
usage: pflux job SUBCOMMAND [ARGS...]

subcommands:
  validate   validate jobspec files (YAML or JSON)
  id         convert job ids between encodings
  attach     follow a job's output until it ends
  submit     submit a jobspec file
  eventlog   print a job's eventlog (-F: follow it)
  wait-event wait for an event in a job's eventlog
  info       print a job's jobspec, R, J or eventlogs
  urgency    change a pending job's urgency
  memo       attach KEY=VALUE data to a job
  last       print your most recently submitted job ids
  raise      raise an exception on jobs
  kill       send a signal to running jobs
  cancel     cancel jobs (as pflux cancel)
  wait       wait for jobs to finish
  status     wait for jobs and exit with their exit code
  purge      remove inactive jobs for good
  stats      print job statistics as JSON
  timeleft   print the time the current job has left
  raiseall   raise an exception on all of a user's jobs
  killall    send a signal to all of a user's running jobs
  taskmap    print or question a job's RFC 34 task map
  namespace  print the KVS namespace of each job
  hostpids   print host:pid of each task of a running job
  list       list your pending and running jobs as JSON, one a line (for tools)
  list-inactive list inactive jobs as JSON, one a line
  list-ids   list jobs by id as JSON, one a line
"""


def main(argv: list[str]) -> int:
    """Dispatch ``pflux job``'s sub-commands."""
    return dispatch(
        f"{base.PROG}-job", SUBCOMMANDS, USAGE.replace("usage: pflux", f"usage: {base.PROG}"), argv
    )
