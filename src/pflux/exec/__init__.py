"""Job execution (RFC 32): the job-exec service, its test mode, and the shell launcher.

``service`` is the broker service; ``testexec`` simulates runs from jobspec
attributes without any process; ``launcher`` forks a job shell
(``pflux.shell``) per job from one warm process.
"""
