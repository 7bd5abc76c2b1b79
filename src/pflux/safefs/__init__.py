"""Files and directories made where another local user may have been first.

Shared by the processes that create what a user named (job-exec checks its
``exec.tmpdir`` candidates, the job shell makes ``FLUX_JOB_TMPDIR`` and opens
output files, ``pflux start -S log-filename`` opens its log), and files a
service replaces whole (``replace``): it imports nothing of pflux, so any of
them may use it.
"""
