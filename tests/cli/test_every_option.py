"""Every option of every ``pflux`` command, and every job shell option, is proven.

The parsers are built the way each command builds them (``parser()`` where the
module has one, else by running its ``main`` up to its ``parse_args``). ``PROOF``
maps each option (``COMMAND --long-name``) to the tests that show it takes effect
or is refused; an option missing from the table fails here, and so does a named
test that does not exist. ``UNPROVEN`` names, with the reason, the few options
that have no such test: the table cannot silently grow holes.
"""

from __future__ import annotations

import argparse
import ast
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Final
from unittest import mock

from pflux.cli import COMMANDS, options
from pflux.cli.job import SUBCOMMANDS
from pflux.spec.shell_options import KNOWN

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent

# options of pflux run that jobopts.add_options and jobopts.request_for build and
# read for submit and run alike: submit's tests prove them for both
SAME_AS_SUBMIT: Final = ("SAME_AS_SUBMIT",)
URI: Final = ("tests/cli/test_uri_option.py::test_uri_names_the_instance",)

RESOURCE_EVENTLOG_TMI: Final = (
    "tests/cli/test_resource_commands.py"
    "::test_resource_eventlog_matches_a_context_keeps_targets_and_times_out",
)
JOB_LIST: Final = (
    "tests/cli/test_job_commands.py::test_job_list_commands_print_job_list_s_answers_one_a_line",
)

# the job shell's options pflux acts on: the table job-ingest checks them against
SHELL_OPTIONS: Final = tuple(KNOWN)

SHELL_PROOF: Final[dict[str, tuple[str, ...]]] = {
    "output": (
        "tests/e2e/test_output.py::test_output_and_error_templates",
        "tests/cli/test_submit_dry_run.py::test_setopt_as_flux_t2710",
    ),
    "input": ("tests/e2e/test_exec.py::test_pflux_run_and_attach_forward_stdin",),
    "per-resource": (
        "tests/unit/joblist/test_joblist_summary.py::test_per_resource_task_counts",
        "tests/e2e/test_taskmap.py::test_tasks_per_node",
    ),
    "rlimit": (
        "tests/e2e/test_shell_options.py::test_rlimit_applies_to_the_tasks_and_not_to_the_next_job",
        "tests/e2e/test_shell_options.py::test_a_bad_rlimit_option_is_refused",
    ),
    "env-expand": (
        "tests/e2e/test_shell_options.py::test_env_templates_are_expanded_per_job_and_per_task",
    ),
    "signal": (
        "tests/e2e/test_shell_options.py::test_signal_before_the_time_limit",
        "tests/e2e/test_shell_options.py::test_signal_option_value",
    ),
    "cpu-affinity": (
        "tests/e2e/test_shell_options.py::test_by_default_every_task_is_bound_to_all_the_jobs_cores",
        "tests/e2e/test_shell_options.py::test_cpu_affinity_off_and_map",
        "tests/e2e/test_shell_options.py::test_a_bad_cpu_affinity_is_refused",
    ),
    "gpu-affinity": (
        "tests/unit/exec/test_shell_plan.py::test_affinity_options_bind_per_task_or_not_at_all",
    ),
    "exit-timeout": (
        "tests/e2e/test_shell_options.py::test_exit_timeout_raises_a_fatal_exception",
        "tests/e2e/test_shell_options.py::test_exit_timeout_none_and_a_bad_value",
    ),
    "exit-on-error": (
        "tests/e2e/test_shell_options.py::test_exit_on_error_ends_the_job_at_the_first_failure",
    ),
    "verbose": ("tests/e2e/test_shell_options.py::test_verbose_prints_the_shells_diagnostics",),
    "pty": (
        "tests/e2e/test_pty.py::test_a_task_on_a_pty_has_it_as_stdin_stdout_stderr_and_controlling_terminal",
        "tests/e2e/test_pty.py::test_pty_ranks_names_the_tasks_on_a_pty",
        "tests/e2e/test_pty.py::test_a_pty_option_that_cannot_work_is_refused_at_submission",
        "tests/e2e/test_attach_terminal.py::test_pty_interactive_makes_this_terminal_the_jobs_until_it_ends",
    ),
    "pmi": (
        "tests/e2e/test_mpi.py::test_an_mpi_allreduce_over_four_tasks",
        "tests/e2e/test_mpi.py::test_pmi_off_gives_the_tasks_no_pmi_fd",
        "tests/e2e/test_mpi.py::test_an_unknown_pmi_is_refused_naming_the_option",
    ),
    "mpi": (
        "tests/unit/spec/test_shell_options.py::test_mpi_none_is_accepted_and_other_mpi_values_refused",
        "tests/shim/test_jobspec.py::test_nest_and_batch_jobspecs_are_accepted_by_a_live_instance",
    ),
    "nosetpgrp": (
        "tests/e2e/test_process_groups.py::test_a_task_leads_its_own_group_unless_nosetpgrp",
        "tests/e2e/test_process_groups.py::test_a_signal_reaches_a_task_in_the_shells_group",
    ),
    "taskmap": (
        "tests/e2e/test_taskmap.py::test_taskmap_cyclic",
        "tests/e2e/test_taskmap.py::test_block_with_a_value_fails_the_job",
    ),
}

PROOF: Final[dict[str, tuple[str, ...]]] = {
    "start --state-dir": (
        "tests/e2e/test_durability.py::test_only_a_kept_state_directory_gets_a_crash_safe_kvs",
        "tests/e2e/test_durability.py::test_a_fast_kvs_in_a_state_directory_keeps_its_jobs_across_a_clean_stop",
    ),
    "start --fresh": (
        "tests/fault/test_storage.py::test_fresh_without_a_state_directory_is_a_usage_error",
    ),
    "start --cores": ("tests/e2e/test_sched.py::test_alloc_deny_and_resource_list",),
    "start --gpus": ("tests/e2e/test_option_effects.py::test_start_gpus_and_verbose",),
    "start --config-path": (
        "tests/e2e/test_batch.py::test_broker_options_the_nested_instance_honours",
        "tests/e2e/test_durability.py::test_a_fast_kvs_in_a_state_directory_keeps_its_jobs_across_a_clean_stop",
        "tests/e2e/test_exec_protocol.py::test_released_ranks_go_to_a_waiting_job_before_the_final_release",
    ),
    "start --simulate": (
        "tests/e2e/test_simulator.py::test_bad_traces_are_refused_naming_the_line",
    ),
    "start --verbose": ("tests/e2e/test_option_effects.py::test_start_gpus_and_verbose",),
    "start --test-size": (
        "tests/e2e/test_ranks.py::test_the_instance_has_four_ranks_that_joined",
        "tests/e2e/test_ranks.py::test_bad_test_size_options_are_refused_naming_them",
    ),
    "start --test-hosts": ("tests/e2e/test_ranks.py::test_test_hosts_name_the_ranks",),
    "start --wrap": (
        "tests/cli/test_start_options.py::test_wrap_runs_every_broker_under_its_arguments",
        "tests/cli/test_start_options.py::test_a_wrap_that_cannot_run_is_refused",
    ),
    "exec --uri": URI,
    "exec --rank": (
        "tests/cli/test_exec.py::test_stdin_goes_to_each_chosen_rank_and_d_sets_the_directory",
    ),
    "exec --exclude": (
        "tests/cli/test_exec.py::test_stdin_goes_to_each_chosen_rank_and_d_sets_the_directory",
    ),
    "exec --dir": (
        "tests/cli/test_exec.py::test_stdin_goes_to_each_chosen_rank_and_d_sets_the_directory",
    ),
    "exec --noinput": (
        "tests/cli/test_exec.py::test_stdin_goes_to_each_chosen_rank_and_d_sets_the_directory",
    ),
    "exec --label-io": ("tests/cli/test_exec.py::test_every_rank_runs_it_and_l_labels_the_lines",),
    "exec --verbose": ("tests/cli/test_exec.py::test_v_says_when_each_process_starts_and_ends",),
    "exec --quiet": (
        "tests/cli/test_exec.py::test_the_exit_code_is_the_largest_with_flux_summary",
    ),
    "exec --bg": (
        "tests/cli/test_exec.py::test_bg_starts_and_leaves_running_and_sproc_waits_for_a_waitable_one",
        "tests/cli/test_exec.py::test_bg_without_waitable_is_reaped_and_the_refusals",
    ),
    "exec --waitable": (
        "tests/cli/test_exec.py::test_bg_starts_and_leaves_running_and_sproc_waits_for_a_waitable_one",
        "tests/cli/test_exec.py::test_bg_without_waitable_is_reaped_and_the_refusals",
    ),
    "exec --label": (
        "tests/cli/test_exec.py::test_bg_starts_and_leaves_running_and_sproc_waits_for_a_waitable_one",
        "tests/cli/test_exec.py::test_bg_without_waitable_is_reaped_and_the_refusals",
    ),
    "exec --jobid": (
        "tests/cli/test_exec.py::test_jobid_runs_on_the_jobs_ranks_counted_from_zero",
    ),
    "sproc ps --uri": URI,
    "sproc kill --uri": URI,
    "sproc wait --uri": URI,
    "sproc ps --rank": (
        "tests/cli/test_exec.py::test_bg_starts_and_leaves_running_and_sproc_waits_for_a_waitable_one",
    ),
    "sproc kill --rank": (
        "tests/cli/test_exec.py::test_bg_starts_and_leaves_running_and_sproc_waits_for_a_waitable_one",
    ),
    "sproc wait --rank": (
        "tests/cli/test_exec.py::test_bg_starts_and_leaves_running_and_sproc_waits_for_a_waitable_one",
    ),
    "sproc ps --service": (
        "tests/cli/test_exec.py::test_bg_without_waitable_is_reaped_and_the_refusals",
    ),
    "sproc kill --service": (
        "tests/cli/test_exec.py::test_bg_without_waitable_is_reaped_and_the_refusals",
    ),
    "sproc wait --service": (
        "tests/cli/test_exec.py::test_bg_without_waitable_is_reaped_and_the_refusals",
    ),
    "sproc ps --format": (
        "tests/cli/test_exec.py::test_bg_starts_and_leaves_running_and_sproc_waits_for_a_waitable_one",
    ),
    "sproc ps --no-header": (
        "tests/cli/test_exec.py::test_bg_starts_and_leaves_running_and_sproc_waits_for_a_waitable_one",
    ),
    "sproc kill --wait": (
        "tests/cli/test_exec.py::test_bg_starts_and_leaves_running_and_sproc_waits_for_a_waitable_one",
    ),
    "sproc wait --output": (
        "tests/cli/test_exec.py::test_bg_without_waitable_is_reaped_and_the_refusals",
    ),
    "start --broker-opts": (
        "tests/cli/test_start_options.py::"
        "test_broker_opts_set_log_filename_and_s_sizes_the_instance",
        "tests/cli/test_start_options.py::test_what_start_cannot_honour_is_refused",
    ),
    "start --curve-cert": (
        "tests/e2e/test_hosts.py::test_brokers_started_by_srun_are_one_instance",
        "tests/e2e/test_hosts.py::test_srun_brokers_without_a_certificate_are_refused",
    ),
    "start --no-flux-shim": (
        "tests/shim/test_instance_env.py::test_no_flux_shim_and_the_config_key_turn_it_off",
    ),
    "env --uri": (
        "tests/shim/test_pflux_env.py::test_pflux_env_evaluated_by_sh_reaches_the_instance",
    ),
    "submit --ntasks": (
        "tests/cli/test_submit_dry_run.py::test_rfc25_use_cases_print_as_flux",
        "tests/cli/test_submit_dry_run.py::test_use_case_through_the_console_script",
    ),
    "submit --cores-per-task": (
        "tests/cli/test_submit_dry_run.py::test_rfc25_use_cases_print_as_flux",
        "tests/cli/test_submit_dry_run.py::test_use_case_through_the_console_script",
    ),
    "submit --gpus-per-task": (
        "tests/cli/test_submit_dry_run.py::test_rfc25_use_cases_print_as_flux",
        "tests/cli/test_submit_dry_run.py::test_use_case_through_the_console_script",
    ),
    "submit --nodes": (
        "tests/cli/test_submit_dry_run.py::test_rfc25_use_cases_print_as_flux",
        "tests/cli/test_submit_dry_run.py::test_use_case_through_the_console_script",
    ),
    "submit --exclusive": (
        "tests/cli/test_submit_dry_run.py::test_bad_counts",
        "tests/cli/test_submit_dry_run.py::test_exclusive_with_tasks",
    ),
    "submit --time-limit": (
        "tests/cli/test_submit_dry_run.py::test_time_limit",
        "tests/cli/test_submit_dry_run.py::test_old_flux_spellings_time_and_dry",
        "tests/cli/test_submit_dry_run.py::test_bad_time_limits",
    ),
    "submit --job-name": (
        "tests/cli/test_submit_dry_run.py::test_yaml_keeps_unicode_and_order",
        "tests/cli/test_submit_dry_run.py::test_options_after_the_command_belong_to_it",
    ),
    "submit --queue": ("tests/cli/test_submit_dry_run.py::test_name_queue_bank_cwd",),
    "submit --bank": ("tests/cli/test_submit_dry_run.py::test_name_queue_bank_cwd",),
    "submit --urgency": (
        "tests/cli/test_job_commands.py::test_submit_yaml_stdin_with_urgency_and_flags",
        "tests/cli/test_submit_dry_run.py::test_urgency",
    ),
    "submit --cwd": (
        "tests/cli/test_submit_dry_run.py::test_rfc25_use_cases_print_as_flux",
        "tests/cli/test_submit_dry_run.py::test_use_case_through_the_console_script",
    ),
    "submit --dependency": (
        "tests/cli/test_submit_dry_run.py::test_dependencies_in_command_line_order",
        "tests/e2e/test_dependencies.py::test_submit_time_errors",
    ),
    "submit --begin-time": ("tests/cli/test_submit_dry_run.py::test_begin_time_now",),
    "submit --setattr": ("tests/cli/test_submit_dry_run.py::test_setattr_as_flux_t2710",),
    "submit --setopt": ("tests/cli/test_submit_dry_run.py::test_setopt_as_flux_t2710",),
    "submit --flags": (
        "tests/cli/test_submit_dry_run.py::test_flags",
        "tests/cli/test_submit_dry_run.py::test_bad_flags",
    ),
    "submit --env": (
        "tests/cli/test_submit_dry_run.py::test_rfc25_use_cases_print_as_flux",
        "tests/cli/test_submit_dry_run.py::test_use_case_through_the_console_script",
    ),
    "submit --env-remove": (
        "tests/cli/test_submit_dry_run.py::test_env_rules",
        "tests/cli/test_submit_dry_run.py::test_env_remove_leaves_the_rest",
    ),
    "submit --env-file": (
        "tests/cli/test_submit_dry_run.py::test_env_file",
        "tests/cli/test_submit_dry_run.py::test_env_file_including_itself",
    ),
    "submit --rlimit": (
        "tests/cli/test_submit_dry_run.py::test_rfc25_use_cases_print_as_flux",
        "tests/cli/test_submit_dry_run.py::test_use_case_through_the_console_script",
    ),
    "submit --input": (
        "tests/cli/test_submit_dry_run.py::test_stdio",
        "tests/cli/test_submit_dry_run.py::test_input_ranks_are_refused_by_submit",
    ),
    "submit --output": (
        "tests/cli/test_submit_dry_run.py::test_stdio",
        "tests/cli/test_submit_dry_run.py::test_setopt_as_flux_t2710",
    ),
    "submit --error": ("tests/cli/test_submit_dry_run.py::test_stdio",),
    "submit --label-io": (
        "tests/cli/test_submit_dry_run.py::test_stdio",
        "tests/e2e/test_output.py::test_label_io_prefixes_task_ranks_on_run_and_attach",
    ),
    "submit --unbuffered": ("tests/cli/test_submit_dry_run.py::test_unbuffered",),
    "submit --dry-run": (
        "tests/cli/test_submit_dry_run.py::test_rfc25_use_cases_print_as_flux",
        "tests/cli/test_submit_dry_run.py::test_old_flux_spellings_time_and_dry",
        "tests/cli/test_submit_dry_run.py::test_use_case_through_the_console_script",
    ),
    "submit --format": ("tests/cli/test_submit_dry_run.py::test_yaml_through_the_console_script",),
    "submit --uri": URI,
    "submit --cc": ("tests/e2e/test_option_effects.py::test_submit_cc_and_bcc",),
    "submit --bcc": ("tests/e2e/test_option_effects.py::test_submit_cc_and_bcc",),
    "submit --wait": (
        "tests/fault/test_full_disk.py::test_an_allocation_a_full_disk_refused_is_asked_for_again",
    ),
    "submit --watch": ("tests/e2e/test_option_effects.py::test_submit_quiet_watch_and_progress",),
    "submit --progress": (
        "tests/e2e/test_option_effects.py::test_submit_quiet_watch_and_progress",
        "tests/cli/test_progress.py::test_submit_progress_draws_the_submissions_bar_on_the_last_line",
    ),
    "submit --jps": (
        "tests/cli/test_progress.py::test_submit_wait_progress_counts_the_jobs_and_jps_shows_the_rate",
    ),
    "submit --quiet": ("tests/e2e/test_option_effects.py::test_submit_quiet_watch_and_progress",),
    "run --ntasks": (
        "tests/e2e/test_output.py::test_label_io_prefixes_task_ranks_on_run_and_attach",
    ),
    "run --cores-per-task": SAME_AS_SUBMIT,
    "run --gpus-per-task": SAME_AS_SUBMIT,
    "run --nodes": SAME_AS_SUBMIT,
    "run --exclusive": SAME_AS_SUBMIT,
    "run --time-limit": SAME_AS_SUBMIT,
    "run --job-name": ("tests/e2e/test_output.py::test_output_and_error_templates",),
    "run --queue": SAME_AS_SUBMIT,
    "run --bank": SAME_AS_SUBMIT,
    "run --urgency": SAME_AS_SUBMIT,
    "run --cwd": SAME_AS_SUBMIT,
    "run --dependency": SAME_AS_SUBMIT,
    "run --begin-time": SAME_AS_SUBMIT,
    "run --setattr": SAME_AS_SUBMIT,
    "run --setopt": SAME_AS_SUBMIT,
    "run --flags": SAME_AS_SUBMIT,
    "run --env": SAME_AS_SUBMIT,
    "run --env-remove": SAME_AS_SUBMIT,
    "run --env-file": SAME_AS_SUBMIT,
    "run --rlimit": SAME_AS_SUBMIT,
    "run --input": SAME_AS_SUBMIT,
    "run --output": (
        "tests/e2e/test_output.py::test_output_and_error_templates",
        "tests/e2e/test_output.py::test_output_to_one_file_labelled_and_the_name_defaults_to_the_command",
    ),
    "run --error": ("tests/e2e/test_output.py::test_output_and_error_templates",),
    "run --label-io": (
        "tests/e2e/test_output.py::test_label_io_prefixes_task_ranks_on_run_and_attach",
        "tests/e2e/test_output.py::test_output_to_one_file_labelled_and_the_name_defaults_to_the_command",
    ),
    "run --unbuffered": SAME_AS_SUBMIT,
    "run --dry-run": SAME_AS_SUBMIT,
    "run --format": SAME_AS_SUBMIT,
    "run --uri": URI,
    "run --show-events": ("tests/e2e/test_option_effects.py::test_run_show_events",),
    "run --verbose": (
        "tests/e2e/test_cli_output.py::test_run_verbose_prints_the_jobid",
        "tests/e2e/test_cli_output.py::test_run_vv_shows_every_event_finish_included",
    ),
    "jobs -a": (
        "tests/cli/test_jobs_format.py::test_list_requests",
        "tests/cli/test_jobs_format.py::test_a_and_filter_warns",
    ),
    "jobs -A": ("tests/cli/test_jobs_format.py::test_list_requests",),
    "jobs --count": (
        "tests/cli/test_jobs_format.py::test_list_requests",
        "tests/cli/test_jobs_format.py::test_truncation_warning",
    ),
    "jobs --filter": (
        "tests/cli/test_jobs_format.py::test_list_requests",
        "tests/cli/test_jobs_format.py::test_a_and_filter_warns",
    ),
    "jobs --since": (
        "tests/cli/test_jobs_format.py::test_list_requests",
        "tests/cli/test_jobs_format.py::test_filter_errors",
    ),
    "jobs --no-header": (
        "tests/cli/test_jobs_format.py::test_no_header_and_width",
        "tests/cli/test_jobs_format.py::test_truncation_warning",
    ),
    "jobs --suppress-header": ("tests/cli/test_jobs_format.py::test_suppress_header_is_no_header",),
    "jobs --user": (
        "tests/cli/test_jobs_format.py::test_list_requests",
        "tests/cli/test_jobs_format.py::test_filter_errors",
    ),
    "jobs --name": ("tests/cli/test_jobs_format.py::test_list_requests",),
    "jobs --queue": ("tests/cli/test_jobs_format.py::test_list_requests",),
    "jobs --format": (
        "tests/cli/test_jobs_format.py::test_named_and_custom_formats",
        "tests/cli/test_jobs_format.py::test_format_help_and_config",
    ),
    "jobs --sort": (
        "tests/cli/test_jobs_format.py::test_named_and_custom_formats",
        "tests/cli/test_jobs_format.py::test_errors",
    ),
    "jobs --width": ("tests/cli/test_jobs_format.py::test_no_header_and_width",),
    "jobs --json": (
        "tests/cli/test_jobs_format.py::test_json",
        "tests/cli/test_jobs_format.py::test_only_the_attributes_the_format_needs",
    ),
    "jobs --uri": URI,
    "jobs --from-stdin": ("tests/cli/test_jobs_format.py::test_bad_stdin",),
    "jobs --color": ("tests/shim/test_job_stats.py::test_flux_jobs_color_by_result",),
    "jobs --include": (
        "tests/shim/test_job_stats.py::test_flux_jobs_include_lists_the_jobs_on_ranks_or_hosts",
    ),
    "jobs --stats": ("tests/shim/test_job_stats.py::test_flux_jobs_stats_and_stats_only",),
    "jobs --stats-only": (
        "tests/shim/test_job_stats.py::test_flux_jobs_stats_and_stats_only",
        "tests/shim/test_job_stats.py::test_stats_only_fails_once_no_job_is_active",
    ),
    "jobs --recursive": (
        "tests/cli/test_jobs_recursive.py::test_a_nested_instances_jobs_are_listed_below_its_job",
    ),
    "jobs --level": (
        "tests/cli/test_jobs_recursive.py::test_a_nested_instances_jobs_are_listed_below_its_job",
    ),
    "jobs --recurse-all": (
        "tests/cli/test_jobs_recursive.py::test_a_nested_instances_jobs_are_listed_below_its_job",
    ),
    "job validate --format": ("tests/cli/test_job_validate.py::test_format_option",),
    "job id --to": (
        "tests/cli/test_job_id.py::test_every_encoding_to_every_other",
        "tests/cli/test_job_id.py::test_to_is_case_insensitive",
    ),
    "job attach --uri": URI,
    "job attach --label-io": (
        "tests/e2e/test_output.py::test_label_io_prefixes_task_ranks_on_run_and_attach",
    ),
    "job attach --show-events": (
        "tests/e2e/test_cli_output.py::test_attach_show_events_prints_finish_and_exception_once",
    ),
    "job attach --stdin-ranks": ("tests/e2e/test_option_effects.py::test_attach_stdin_ranks",),
    "job attach --quiet": (
        "tests/cli/test_shell_messages.py::test_attach_quiet_prints_none_of_the_shells_messages",
    ),
    "job attach --read-only": (
        "tests/e2e/test_option_effects.py::test_attach_read_only_forwards_nothing",
    ),
    "job submit --uri": URI,
    "job submit --urgency": (
        "tests/cli/test_job_commands.py::test_submit_yaml_stdin_with_urgency_and_flags",
    ),
    "job submit --flags": (
        "tests/cli/test_job_commands.py::test_submit_yaml_stdin_with_urgency_and_flags",
        "tests/cli/test_job_commands.py::test_submit_errors",
    ),
    "job eventlog --uri": URI,
    "job eventlog --format": (
        "tests/cli/test_job_commands.py::test_eventlog_text_json_and_time_formats",
    ),
    "job eventlog --time-format": (
        "tests/cli/test_job_commands.py::test_eventlog_text_json_and_time_formats",
        "tests/e2e/test_cli_output.py::test_eventlog_iso_is_local_time_with_offset",
    ),
    "job eventlog --human": (
        "tests/cli/test_job_commands.py::test_eventlog_text_json_and_time_formats",
    ),
    "job eventlog --path": (
        "tests/cli/test_job_commands.py::test_eventlog_guest_paths_of_a_real_job",
        "tests/e2e/test_guest_kvs.py::test_a_job_keeps_its_own_keys_in_its_guest_namespace",
    ),
    "job eventlog --follow": (
        "tests/cli/test_job_commands.py::test_eventlog_follow_ends_with_clean",
        "tests/cli/test_job_commands.py::test_eventlog_guest_paths_of_a_real_job",
    ),
    "job wait-event --uri": URI,
    "job wait-event --format": (
        "tests/cli/test_job_commands.py::test_wait_event_prints_the_match",
    ),
    "job wait-event --time-format": (
        "tests/cli/test_job_commands.py::test_wait_event_prints_the_match",
    ),
    "job wait-event --human": (
        "tests/e2e/test_option_effects.py::test_wait_event_and_kvs_eventlog_human",
    ),
    "job wait-event --path": (
        "tests/cli/test_job_commands.py::test_eventlog_guest_paths_of_a_real_job",
    ),
    "job wait-event --timeout": (
        "tests/cli/test_job_commands.py::test_wait_event_timeout_and_never_received",
    ),
    "job wait-event --match-context": (
        "tests/cli/test_job_commands.py::test_eventlog_guest_paths_of_a_real_job",
        "tests/cli/test_job_commands.py::test_wait_event_match_and_count",
    ),
    "job wait-event --count": (
        "tests/cli/test_job_commands.py::test_eventlog_guest_paths_of_a_real_job",
        "tests/cli/test_job_commands.py::test_wait_event_match_and_count",
    ),
    "job wait-event --quiet": ("tests/cli/test_job_commands.py::test_wait_event_prints_the_match",),
    "job wait-event --verbose": (
        "tests/cli/test_job_commands.py::test_wait_event_prints_the_match",
    ),
    "job wait-event --waitcreate": (
        "tests/cli/test_job_commands.py::test_wait_event_refuses_waitcreate",
    ),
    "job info --uri": URI,
    "job info --original": ("tests/cli/test_job_commands.py::test_info_keys",),
    "job info --base": (
        "tests/cli/test_job_commands.py::test_info_applies_jobspec_updates_unless_base",
    ),
    "job urgency --uri": URI,
    "job urgency --verbose": ("tests/e2e/test_option_effects.py::test_job_urgency_verbose",),
    "job raise --uri": URI,
    "job raise --severity": ("tests/cli/test_job_commands.py::test_raise_type_severity_and_note",),
    "job raise --type": ("tests/cli/test_job_commands.py::test_raise_type_severity_and_note",),
    "job raise --message": ("tests/cli/test_job_commands.py::test_raise_type_severity_and_note",),
    "job kill --uri": URI,
    "job kill --signal": (
        "tests/cli/test_job_commands.py::test_kill_signals_a_running_job",
        "tests/e2e/test_signals.py::test_job_kill_reaches_every_task_by_name_number_or_default",
    ),
    "job cancel --uri": URI,
    "job cancel --message": ("tests/cli/test_cancel.py::test_cancel_jobid_with_message",),
    "job wait --uri": URI,
    "job wait --all": (
        "tests/cli/test_job_commands.py::test_wait_for_one_job",
        "tests/e2e/test_wait.py::test_wait_all_reports_failures_and_exits_1",
    ),
    "job wait --verbose": ("tests/e2e/test_wait.py::test_wait_all_reports_failures_and_exits_1",),
    "job status --uri": URI,
    "job status --verbose": ("tests/cli/test_job_commands.py::test_status_exit_codes",),
    "job status --exception-exit-code": ("tests/cli/test_job_commands.py::test_status_exit_codes",),
    "job status --json": ("tests/cli/test_job_commands.py::test_status_json",),
    "kvs get --uri": URI,
    "kvs get --namespace": (
        "tests/e2e/test_guest_kvs.py::test_a_job_keeps_its_own_keys_in_its_guest_namespace",
        "tests/e2e/test_kvs_cli.py::test_namespace_option",
    ),
    "kvs get --label": ("tests/e2e/test_kvs_cli.py::test_put_then_get",),
    "kvs get --waitcreate": (
        "tests/e2e/test_guest_kvs.py::test_a_job_keeps_its_own_keys_in_its_guest_namespace",
        "tests/e2e/test_kvs_cli.py::test_get_waitcreate_and_watch",
    ),
    "kvs get --watch": (
        "tests/e2e/test_kvs_cli.py::test_eventlog_watch_stops_after_count",
        "tests/e2e/test_kvs_cli.py::test_get_waitcreate_and_watch",
    ),
    "kvs get --append": ("tests/e2e/test_kvs_cli.py::test_get_waitcreate_and_watch",),
    "kvs get --count": ("tests/e2e/test_kvs_cli.py::test_get_waitcreate_and_watch",),
    "kvs put --uri": URI,
    "kvs put --namespace": ("tests/e2e/test_kvs_cli.py::test_namespace_option",),
    "kvs put --append": (
        "tests/e2e/test_kvs_cli.py::test_put_then_get",
        "tests/e2e/test_kvs_cli.py::test_get_waitcreate_and_watch",
    ),
    "kvs ls --uri": URI,
    "kvs ls --namespace": ("tests/e2e/test_kvs_cli.py::test_namespace_option",),
    "kvs ls --recursive": ("tests/e2e/test_kvs_cli.py::test_ls_like_flux",),
    "kvs ls --directory": ("tests/e2e/test_kvs_cli.py::test_ls_like_flux",),
    "kvs ls --classify": ("tests/e2e/test_kvs_cli.py::test_ls_like_flux",),
    "kvs ls --width": ("tests/e2e/test_kvs_cli.py::test_ls_like_flux",),
    "kvs ls -1": ("tests/e2e/test_kvs_cli.py::test_ls_like_flux",),
    "kvs eventlog get --uri": URI,
    "kvs eventlog get --namespace": (
        "tests/e2e/test_guest_kvs.py::test_a_job_keeps_its_own_keys_in_its_guest_namespace",
    ),
    "kvs eventlog get --waitcreate": (
        "tests/e2e/test_guest_kvs.py::test_a_job_keeps_its_own_keys_in_its_guest_namespace",
    ),
    "kvs eventlog get --watch": (
        "tests/e2e/test_kvs_cli.py::test_eventlog_watch_stops_after_count",
    ),
    "kvs eventlog get --count": (
        "tests/e2e/test_guest_kvs.py::test_a_job_keeps_its_own_keys_in_its_guest_namespace",
        "tests/e2e/test_kvs_cli.py::test_eventlog_watch_stops_after_count",
    ),
    "kvs eventlog get --unformatted": (
        "tests/e2e/test_kvs_cli.py::test_eventlog_get_text_and_raw",
    ),
    "kvs eventlog get --human": (
        "tests/e2e/test_option_effects.py::test_wait_event_and_kvs_eventlog_human",
    ),
    "kvs eventlog get --format": ("tests/e2e/test_kvs_cli.py::test_eventlog_get_text_and_raw",),
    "kvs copy --uri": URI,
    "kvs link --uri": URI,
    "kvs readlink --uri": URI,
    "kvs link --namespace": (
        "tests/cli/test_kvs_commands.py::test_links_made_read_listed_and_followed",
    ),
    "kvs link --target-namespace": (
        "tests/cli/test_kvs_commands.py::test_links_made_read_listed_and_followed",
    ),
    "kvs readlink --namespace": (
        "tests/cli/test_kvs_commands.py::test_links_made_read_listed_and_followed",
    ),
    "kvs readlink --namespace-only": (
        "tests/cli/test_kvs_commands.py::test_links_made_read_listed_and_followed",
    ),
    "kvs readlink --key-only": (
        "tests/cli/test_kvs_commands.py::test_links_made_read_listed_and_followed",
    ),
    "kvs dir --uri": URI,
    "kvs dropcache --uri": URI,
    "kvs version --uri": URI,
    "kvs wait --uri": URI,
    "kvs version --namespace": (
        "tests/cli/test_kvs_commands.py::test_version_counts_commits_and_wait_returns_once_it_is_reached",
    ),
    "kvs wait --namespace": (
        "tests/cli/test_kvs_commands.py::test_version_counts_commits_and_wait_returns_once_it_is_reached",
    ),
    "kvs get --treeobj": (
        "tests/cli/test_kvs_commands.py::test_version_counts_commits_and_wait_returns_once_it_is_reached",
    ),
    "kvs eventlog append --uri": URI,
    "kvs eventlog wait-event --uri": URI,
    "kvs mkdir --uri": URI,
    "kvs move --uri": URI,
    "kvs namespace create --uri": URI,
    "kvs namespace list --uri": URI,
    "kvs namespace remove --uri": URI,
    "kvs unlink --uri": URI,
    "kvs get --raw": ("tests/cli/test_kvs_commands.py::test_get_raw_and_put_raw_from_stdin",),
    "kvs get --uniq": ("tests/cli/test_kvs_commands.py::test_get_uniq_shows_only_changed_values",),
    "kvs put --raw": ("tests/cli/test_kvs_commands.py::test_get_raw_and_put_raw_from_stdin",),
    "kvs put --no-merge": ("tests/cli/test_kvs_commands.py::test_get_raw_and_put_raw_from_stdin",),
    "kvs dir --directory": (
        "tests/cli/test_kvs_commands.py::test_dir_prints_keys_and_values_as_flux_does",
    ),
    "kvs dir --recursive": (
        "tests/cli/test_kvs_commands.py::test_dir_prints_keys_and_values_as_flux_does",
    ),
    "kvs dir --width": (
        "tests/cli/test_kvs_commands.py::test_dir_prints_keys_and_values_as_flux_does",
    ),
    "kvs dir --namespace": (
        "tests/cli/test_kvs_commands.py::test_every_writing_command_takes_a_namespace",
    ),
    "kvs unlink --force": (
        "tests/cli/test_kvs_commands.py::test_unlink_checks_every_key_first_then_removes_them_in_one_commit",
    ),
    "kvs unlink --recursive": (
        "tests/cli/test_kvs_commands.py::test_unlink_checks_every_key_first_then_removes_them_in_one_commit",
    ),
    "kvs unlink --namespace": (
        "tests/cli/test_kvs_commands.py::test_every_writing_command_takes_a_namespace",
    ),
    "kvs mkdir --namespace": (
        "tests/cli/test_kvs_commands.py::test_every_writing_command_takes_a_namespace",
    ),
    "kvs copy --src-namespace": (
        "tests/cli/test_kvs_commands.py::test_namespaces_created_listed_used_and_removed",
    ),
    "kvs copy --dst-namespace": (
        "tests/cli/test_kvs_commands.py::test_namespaces_created_listed_used_and_removed",
    ),
    "kvs move --src-namespace": (
        "tests/cli/test_kvs_commands.py::test_namespaces_created_listed_used_and_removed",
    ),
    "kvs move --dst-namespace": (
        "tests/cli/test_kvs_commands.py::test_every_writing_command_takes_a_namespace",
    ),
    "kvs dropcache --all": (
        "tests/cli/test_kvs_commands.py::test_namespaces_created_listed_used_and_removed",
    ),
    "kvs namespace create --owner": (
        "tests/cli/test_kvs_commands.py::test_namespaces_created_listed_used_and_removed",
    ),
    "kvs eventlog append --timestamp": (
        "tests/cli/test_kvs_commands.py::test_eventlog_append_and_wait_event",
    ),
    "kvs eventlog append --namespace": (
        "tests/cli/test_kvs_commands.py::test_every_writing_command_takes_a_namespace",
    ),
    "kvs eventlog wait-event --namespace": (
        "tests/cli/test_kvs_commands.py::test_every_writing_command_takes_a_namespace",
    ),
    "kvs eventlog wait-event --human": (
        "tests/cli/test_kvs_commands.py"
        "::test_eventlog_timeouts_are_durations_and_h_is_human_as_flux_too",
    ),
    "kvs eventlog wait-event --quiet": (
        "tests/cli/test_kvs_commands.py::test_eventlog_append_and_wait_event",
    ),
    "kvs eventlog wait-event --timeout": (
        "tests/cli/test_kvs_commands.py::test_eventlog_append_and_wait_event",
    ),
    "kvs eventlog wait-event --unformatted": (
        "tests/cli/test_kvs_commands.py::test_eventlog_append_and_wait_event",
    ),
    "kvs eventlog wait-event --verbose": (
        "tests/cli/test_kvs_commands.py::test_eventlog_append_and_wait_event",
    ),
    "kvs eventlog wait-event --waitcreate": (
        "tests/cli/test_kvs_commands.py::test_eventlog_wait_event_waitcreate",
    ),
    "resource list --format": (
        "tests/unit/sched/test_resource_cli.py::test_rlist_format",
        "tests/unit/sched/test_resource_cli.py::test_errors_exit_1",
    ),
    "resource list --states": (
        "tests/unit/sched/test_resource_cli.py::test_rlist_format",
        "tests/unit/sched/test_resource_cli.py::test_errors_exit_1",
    ),
    "resource list --include": (
        "tests/unit/sched/test_resource_cli.py::test_include_by_rank_or_host_and_skip_empty",
    ),
    "resource list --skip-empty": (
        "tests/unit/sched/test_resource_cli.py::test_include_by_rank_or_host_and_skip_empty",
    ),
    "resource list --no-header": ("tests/unit/sched/test_resource_cli.py::test_rlist_format",),
    "resource list --uri": URI,
    "resource list --queue": (
        "tests/unit/sched/test_resource_cli.py::test_queue_option_keeps_the_queues_ranks_and_names_only_them",
        "tests/cli/test_resource_queues.py::test_resource_commands_show_and_select_queues",
    ),
    "resource R --include": (
        "tests/cli/test_resource_commands.py::test_resource_r_prints_the_resources_of_the_states_as_r",
    ),
    "resource R --states": (
        "tests/cli/test_resource_commands.py::test_resource_r_prints_the_resources_of_the_states_as_r",
    ),
    "resource R --uri": URI,
    "resource R --queue": (
        "tests/unit/sched/test_resource_cli.py::test_queue_option_of_info_r_status_and_drain",
        "tests/cli/test_resource_queues.py::test_resource_commands_show_and_select_queues",
    ),
    "resource eventlog --format": (
        "tests/cli/test_resource_commands.py::test_resource_eventlog_records_the_start_and_each_drain",
    ),
    "resource eventlog --time-format": (
        "tests/cli/test_resource_commands.py::test_resource_eventlog_records_the_start_and_each_drain",
    ),
    "resource eventlog --human": (
        "tests/cli/test_resource_commands.py::test_resource_eventlog_records_the_start_and_each_drain",
    ),
    "resource eventlog --follow": (
        "tests/cli/test_resource_commands.py::test_resource_eventlog_records_the_start_and_each_drain",
    ),
    "resource eventlog --wait": (
        "tests/cli/test_resource_commands.py::test_resource_eventlog_records_the_start_and_each_drain",
    ),
    "resource eventlog --uri": URI,
    "resource eventlog --timeout": RESOURCE_EVENTLOG_TMI,
    "resource eventlog --match-context": RESOURCE_EVENTLOG_TMI,
    "resource eventlog --include": RESOURCE_EVENTLOG_TMI,
    "resource reload --force": (
        "tests/cli/test_resource_reload.py::test_reload_schedules_the_r_file_s_resources",
    ),
    "resource reload --xml": (
        "tests/cli/test_resource_reload.py::test_reload_schedules_the_r_file_s_resources",
    ),
    "resource reload --uri": URI,
    "pgrep --count": (
        "tests/e2e/test_pgrep_pstree.py::test_pgrep_selects_by_pattern_range_state_and_user",
    ),
    "pgrep --filter": (
        "tests/e2e/test_pgrep_pstree.py::test_pgrep_selects_by_pattern_range_state_and_user",
    ),
    "pgrep --format": ("tests/e2e/test_pgrep_pstree.py::test_pgrep_formats_and_expression_errors",),
    "pgrep --max-entries": (
        "tests/e2e/test_pgrep_pstree.py::test_pgrep_selects_by_pattern_range_state_and_user",
    ),
    "pgrep --no-header": (
        "tests/e2e/test_pgrep_pstree.py::test_pgrep_formats_and_expression_errors",
    ),
    "pgrep --queue": (
        "tests/e2e/test_pgrep_pstree.py::test_pgrep_selects_by_pattern_range_state_and_user",
    ),
    "pgrep --uri": URI,
    "pgrep --user": (
        "tests/e2e/test_pgrep_pstree.py::test_pgrep_selects_by_pattern_range_state_and_user",
    ),
    "pgrep -A": (
        "tests/e2e/test_pgrep_pstree.py::test_pgrep_selects_by_pattern_range_state_and_user",
    ),
    "pgrep -a": (
        "tests/e2e/test_pgrep_pstree.py::test_pgrep_selects_by_pattern_range_state_and_user",
    ),
    "pkill --count": ("tests/e2e/test_pgrep_pstree.py::test_pkill_cancels_and_waits",),
    "pkill --filter": ("tests/e2e/test_pgrep_pstree.py::test_pkill_cancels_and_waits",),
    "pkill --max-entries": ("tests/e2e/test_pgrep_pstree.py::test_pkill_cancels_and_waits",),
    "pkill --queue": ("tests/e2e/test_pgrep_pstree.py::test_pkill_cancels_and_waits",),
    "pkill --uri": URI,
    "pkill --user": ("tests/e2e/test_pgrep_pstree.py::test_pkill_cancels_and_waits",),
    "pkill --wait": ("tests/e2e/test_pgrep_pstree.py::test_pkill_cancels_and_waits",),
    "pkill -A": ("tests/e2e/test_pgrep_pstree.py::test_pkill_cancels_and_waits",),
    "pstree --all": ("tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",),
    "pstree --ascii": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
        "tests/e2e/test_pgrep_pstree.py::test_pstree_refuses_what_has_no_meaning_here",
    ),
    "pstree --compact": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
        "tests/e2e/test_pgrep_pstree.py::test_pstree_refuses_what_has_no_meaning_here",
    ),
    "pstree --count": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
    ),
    "pstree --detail-format": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
    ),
    "pstree --details": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
        "tests/e2e/test_pgrep_pstree.py::test_pstree_refuses_what_has_no_meaning_here",
    ),
    "pstree --extended": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
        "tests/e2e/test_pgrep_pstree.py::test_pstree_refuses_what_has_no_meaning_here",
    ),
    "pstree --filter": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
    ),
    "pstree --label": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
    ),
    "pstree --level": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
        "tests/e2e/test_pgrep_pstree.py::test_pstree_descends_into_nested_instances",
    ),
    "pstree --long": ("tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",),
    "pstree --no-combine": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
    ),
    "pstree --no-header": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
    ),
    "pstree --parent-ids": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_descends_into_nested_instances",
    ),
    "pstree --parent-label": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_descends_into_nested_instances",
    ),
    "pstree --skip-root": (
        "tests/e2e/test_pgrep_pstree.py::test_pstree_shows_the_jobs_under_the_root",
        "tests/e2e/test_pgrep_pstree.py::test_pstree_descends_into_nested_instances",
    ),
    "pstree --uri": URI,
    "resource info --include": (
        "tests/e2e/test_resource_drain.py::test_info_and_status_of_an_idle_instance",
    ),
    "resource info --states": (
        "tests/e2e/test_resource_drain.py::test_info_and_status_of_an_idle_instance",
        "tests/e2e/test_resource_drain.py::test_drained_ranks_survive_a_restart",
    ),
    "resource info --uri": URI,
    "resource info --queue": (
        "tests/unit/sched/test_resource_cli.py::test_queue_option_of_info_r_status_and_drain",
        "tests/cli/test_resource_queues.py::test_resource_commands_show_and_select_queues",
    ),
    "resource status --color": (
        "tests/e2e/test_resource_drain.py::test_info_and_status_of_an_idle_instance",
    ),
    "resource status --format": (
        "tests/e2e/test_resource_drain.py::test_info_and_status_of_an_idle_instance",
        "tests/e2e/test_resource_drain.py::test_a_drained_rank_gets_no_new_job_and_its_running_job_finishes",
    ),
    "resource status --include": (
        "tests/e2e/test_resource_drain.py::test_info_and_status_of_an_idle_instance",
    ),
    "resource status --no-header": (
        "tests/e2e/test_resource_drain.py::test_info_and_status_of_an_idle_instance",
        "tests/e2e/test_resource_drain.py::test_a_drained_rank_gets_no_new_job_and_its_running_job_finishes",
    ),
    "resource status --skip-empty": (
        "tests/e2e/test_resource_drain.py::test_info_and_status_of_an_idle_instance",
    ),
    "resource status --states": (
        "tests/e2e/test_resource_drain.py::test_info_and_status_of_an_idle_instance",
    ),
    "resource status --uri": URI,
    "resource status --queue": (
        "tests/unit/sched/test_resource_cli.py::test_queue_option_of_info_r_status_and_drain",
        "tests/cli/test_resource_queues.py::test_resource_commands_show_and_select_queues",
    ),
    "resource drain --color": ("tests/e2e/test_resource_drain.py::test_drain_refusals_and_modes",),
    "resource drain --force": ("tests/e2e/test_resource_drain.py::test_drain_refusals_and_modes",),
    "resource drain --format": (
        "tests/e2e/test_resource_drain.py::test_drain_refusals_and_modes",
        "tests/e2e/test_resource_drain.py::test_a_drained_rank_gets_no_new_job_and_its_running_job_finishes",
    ),
    "resource drain --include": (
        "tests/e2e/test_resource_drain.py::test_drain_refusals_and_modes",
    ),
    "resource drain --no-header": (
        "tests/e2e/test_resource_drain.py::test_drain_refusals_and_modes",
        "tests/e2e/test_resource_drain.py::test_a_drained_rank_gets_no_new_job_and_its_running_job_finishes",
    ),
    "resource drain --update": ("tests/e2e/test_resource_drain.py::test_drain_refusals_and_modes",),
    "resource drain --uri": URI,
    "resource drain --queue": (
        "tests/unit/sched/test_resource_cli.py::test_queue_option_of_info_r_status_and_drain",
        "tests/cli/test_resource_queues.py::test_resource_commands_show_and_select_queues",
    ),
    "resource undrain --update": (
        "tests/e2e/test_resource_drain.py::test_drain_refusals_and_modes",
    ),
    "resource undrain --uri": URI,
    "hostlist --count": (
        "tests/e2e/test_hostlist.py::test_operations",
        "tests/e2e/test_hostlist.py::test_instance_local_avail_and_job_sources",
    ),
    "hostlist --delimiter": ("tests/e2e/test_hostlist.py::test_operations",),
    "hostlist --exclude": ("tests/e2e/test_hostlist.py::test_operations",),
    "hostlist --expand": ("tests/e2e/test_hostlist.py::test_operations",),
    "hostlist --fallback": (
        "tests/e2e/test_hostlist.py::test_instance_local_avail_and_job_sources",
    ),
    "hostlist --find": (
        "tests/e2e/test_hostlist.py::test_operations",
        "tests/e2e/test_hostlist.py::test_stdin_quiet_and_errors",
    ),
    "hostlist --intersect": ("tests/e2e/test_hostlist.py::test_operations",),
    "hostlist --limit": ("tests/e2e/test_hostlist.py::test_operations",),
    "hostlist --local": ("tests/e2e/test_hostlist.py::test_instance_local_avail_and_job_sources",),
    "hostlist --minus": (
        "tests/e2e/test_hostlist.py::test_operations",
        "tests/e2e/test_hostlist.py::test_stdin_quiet_and_errors",
    ),
    "hostlist --nth": (
        "tests/e2e/test_hostlist.py::test_operations",
        "tests/e2e/test_hostlist.py::test_stdin_quiet_and_errors",
    ),
    "hostlist --quiet": (
        "tests/e2e/test_hostlist.py::test_operations",
        "tests/e2e/test_hostlist.py::test_stdin_quiet_and_errors",
        "tests/e2e/test_hostlist.py::test_instance_local_avail_and_job_sources",
    ),
    "hostlist --sort": ("tests/e2e/test_hostlist.py::test_operations",),
    "hostlist --unique": ("tests/e2e/test_hostlist.py::test_operations",),
    "hostlist --uri": URI,
    "hostlist --xor": ("tests/e2e/test_hostlist.py::test_operations",),
    "python --get-path": ("tests/e2e/test_python_command.py::test_get_path_and_list_versions",),
    "python --list-versions": (
        "tests/e2e/test_python_command.py::test_get_path_and_list_versions",
    ),
    "shutdown --uri": URI,
    "shutdown --background": ("tests/e2e/test_shutdown.py::test_shutdown_quiet_and_background",),
    "shutdown --quiet": ("tests/e2e/test_shutdown.py::test_shutdown_quiet_and_background",),
    "shutdown --verbose": ("tests/e2e/test_shutdown.py::test_shutdown_quiet_and_background",),
    "cancel --uri": URI,
    "cancel --all": (
        "tests/cli/test_cancel.py::test_argument_errors",
        "tests/cli/test_cancel.py::test_cancel_all",
    ),
    "cancel --dry-run": (
        "tests/cli/test_cancel.py::test_dry_run_with_jobids",
        "tests/cli/test_cancel.py::test_cancel_all",
    ),
    "cancel --quiet": ("tests/cli/test_cancel.py::test_cancel_all",),
    "cancel --user": (
        "tests/cli/test_cancel.py::test_argument_errors",
        "tests/cli/test_cancel.py::test_cancel_by_state_and_user",
    ),
    "cancel --states": (
        "tests/cli/test_cancel.py::test_argument_errors",
        "tests/cli/test_cancel.py::test_cancel_by_state_and_user",
    ),
    "cancel --message": (
        "tests/cli/test_cancel.py::test_cancel_jobid_with_message",
        "tests/cli/test_cancel.py::test_cancel_many_with_one_error",
    ),
    "queue status --uri": URI,
    "queue status --queue": (
        "tests/cli/test_queue_list.py::test_a_queue_name_is_refused_as_flux_refuses_an_unknown_queue",
        "tests/cli/test_queues.py::test_queue_commands_name_each_queue",
    ),
    "queue enable --queue": (
        "tests/cli/test_queue_list.py::test_a_queue_name_is_refused_as_flux_refuses_an_unknown_queue",
        "tests/cli/test_queues.py::test_a_pending_jobs_queue_is_updated_with_its_constraints",
    ),
    "queue disable --queue": (
        "tests/cli/test_queue_list.py::test_a_queue_name_is_refused_as_flux_refuses_an_unknown_queue",
        "tests/cli/test_queues.py::test_queue_commands_name_each_queue",
    ),
    "queue start --queue": (
        "tests/cli/test_queue_list.py::test_a_queue_name_is_refused_as_flux_refuses_an_unknown_queue",
        "tests/cli/test_queues.py::test_a_stopped_queue_holds_its_jobs_while_another_runs",
    ),
    "queue stop --queue": (
        "tests/cli/test_queue_list.py::test_a_queue_name_is_refused_as_flux_refuses_an_unknown_queue",
        "tests/cli/test_queues.py::test_a_stopped_queue_holds_its_jobs_while_another_runs",
    ),
    "queue list --queue": (
        "tests/cli/test_queue_list.py::test_a_queue_name_is_refused_as_flux_refuses_an_unknown_queue",
        "tests/cli/test_queues.py::test_queue_commands_name_each_queue",
    ),
    "queue list --format": (
        "tests/cli/test_queue_list.py::test_list_shows_the_anonymous_queue_with_no_limits",
    ),
    "queue list --no-header": (
        "tests/cli/test_queue_list.py::test_list_shows_the_anonymous_queue_with_no_limits",
    ),
    "queue list --uri": URI,
    "queue status --verbose": (
        "tests/cli/test_queue.py::test_verbose_status_shows_the_alloc_queue",
    ),
    "queue enable --uri": URI,
    "queue enable --all": ("tests/cli/test_queue.py::test_disable_and_enable",),
    "queue enable --quiet": ("tests/cli/test_queue.py::test_disable_and_enable",),
    "queue enable --verbose": (
        "tests/e2e/test_option_effects.py::test_queue_all_quiet_and_verbose",
    ),
    "queue disable --uri": URI,
    "queue disable --all": ("tests/e2e/test_option_effects.py::test_queue_all_quiet_and_verbose",),
    "queue disable --quiet": ("tests/cli/test_queue.py::test_disable_and_enable",),
    "queue disable --verbose": (
        "tests/e2e/test_option_effects.py::test_queue_all_quiet_and_verbose",
    ),
    "queue disable --message": ("tests/cli/test_queue.py::test_disable_and_enable",),
    "queue start --uri": URI,
    "queue start --all": ("tests/e2e/test_option_effects.py::test_queue_all_quiet_and_verbose",),
    "queue start --quiet": ("tests/e2e/test_option_effects.py::test_queue_all_quiet_and_verbose",),
    "queue start --verbose": (
        "tests/e2e/test_option_effects.py::test_queue_all_quiet_and_verbose",
    ),
    "queue stop --uri": URI,
    "queue stop --all": (
        "tests/e2e/test_option_effects.py::test_queue_all_quiet_and_verbose",
        "tests/cli/test_queues.py::test_queue_commands_name_each_queue",
    ),
    "queue stop --quiet": ("tests/e2e/test_option_effects.py::test_queue_all_quiet_and_verbose",),
    "queue stop --verbose": ("tests/e2e/test_option_effects.py::test_queue_all_quiet_and_verbose",),
    "queue stop --message": ("tests/cli/test_queue.py::test_stop_and_start",),
    "queue drain --uri": URI,
    "queue drain --timeout": ("tests/cli/test_queue.py::test_drain_and_idle_timeouts",),
    "queue idle --uri": URI,
    "queue idle --timeout": ("tests/cli/test_queue.py::test_drain_and_idle_timeouts",),
    "queue idle --quiet": ("tests/cli/test_queue.py::test_stop_and_start",),
    "update --uri": URI,
    "uri --wait": ("tests/e2e/test_nested.py::test_uri_wait_waits_for_the_job_to_post_its_uri",),
    "uri --local": ("tests/e2e/test_nested.py::test_uri_wait_waits_for_the_job_to_post_its_uri",),
    "update --dry-run": ("tests/e2e/test_update.py::test_pending_jobs_take_a_duration_update",),
    "update --verbose": ("tests/e2e/test_update.py::test_pending_jobs_take_a_duration_update",),
    "update --wait": ("tests/e2e/test_update.py::test_pending_jobs_take_a_duration_update",),
    "getattr --uri": URI,
    "setattr --uri": URI,
    "lsattr --values": ("tests/e2e/test_discovery.py::test_lsattr",),
    "lsattr --uri": URI,
    "uptime --uri": URI,
    "top --uri": ("tests/e2e/test_top.py::test_uri_and_the_flux_name",),
    "top --color": (
        "tests/e2e/test_top.py::test_test_exit_draws_once_and_exits",
        "tests/e2e/test_top.py::test_bad_options_and_targets_are_refused",
    ),
    "top --queue": ("tests/e2e/test_top.py::test_bad_options_and_targets_are_refused",),
    "top --test-exit": ("tests/e2e/test_top.py::test_test_exit_draws_once_and_exits",),
    "keygen --name": (
        "tests/cli/test_keygen.py::test_name_and_meta_set_metadata_first_value_winning",
        "tests/cli/test_keygen.py::test_metadata_a_certificate_cannot_hold_is_refused",
    ),
    "keygen --meta": (
        "tests/cli/test_keygen.py::test_name_and_meta_set_metadata_first_value_winning",
        "tests/cli/test_keygen.py::test_metadata_a_certificate_cannot_hold_is_refused",
    ),
    "dmesg --clear": ("tests/e2e/test_discovery.py::test_dmesg_clear",),
    "dmesg --read-clear": ("tests/e2e/test_discovery.py::test_dmesg_clear",),
    "dmesg --follow": ("tests/e2e/test_discovery.py::test_dmesg_follow_and_new",),
    "dmesg --new": ("tests/e2e/test_discovery.py::test_dmesg_follow_and_new",),
    "dmesg --human": ("tests/e2e/test_discovery.py::test_dmesg_human",),
    "dmesg --delta": ("tests/e2e/test_discovery.py::test_dmesg_human",),
    "dmesg --uri": URI,
    "ping --count": (
        "tests/cli/test_broker_commands.py::test_ping_a_service_a_rank_and_rank_bang_service",
    ),
    "ping --interval": (
        "tests/cli/test_broker_commands.py::test_ping_waits_its_interval_between_requests",
    ),
    "ping --pad": (
        "tests/cli/test_broker_commands.py::test_ping_a_service_a_rank_and_rank_bang_service",
    ),
    "ping --rank": (
        "tests/cli/test_broker_commands.py::test_ping_a_service_a_rank_and_rank_bang_service",
    ),
    "ping --uri": URI,
    "ping --batch": (
        "tests/cli/test_broker_commands.py::test_ping_b_sends_every_request_before_it_reads_an_answer",
    ),
    "ping --userid": (
        "tests/cli/test_broker_commands.py::test_ping_u_shows_the_credentials_the_answer_carries",
    ),
    "event pub --loopback": (
        "tests/cli/test_broker_commands.py::test_event_sub_prints_each_event_published_as_topic_tab_payload",
    ),
    "event pub --private": (
        "tests/cli/test_broker_commands.py::test_event_sub_prints_each_event_published_as_topic_tab_payload",
    ),
    "event pub --raw": (
        "tests/cli/test_broker_commands.py::test_event_pub_refuses_raw_and_what_is_not_json",
    ),
    "event pub --synchronous": (
        "tests/cli/test_broker_commands.py::test_event_sub_prints_each_event_published_as_topic_tab_payload",
    ),
    "event pub --uri": URI,
    "event sub --count": (
        "tests/cli/test_broker_commands.py::test_event_sub_count_exits_after_that_many",
    ),
    "event sub --uri": URI,
    "logger --appname": (
        "tests/cli/test_broker_commands.py::test_logger_appends_to_the_ring_with_severity_and_appname",
    ),
    "logger --severity": (
        "tests/cli/test_broker_commands.py::test_logger_appends_to_the_ring_with_severity_and_appname",
    ),
    "logger --uri": URI,
    "module list --long": (
        "tests/cli/test_broker_commands.py::test_module_list_in_flux_s_columns",
    ),
    "module list --uri": URI,
    "config get --default": (
        "tests/cli/test_broker_commands.py::test_config_get_prints_json_and_strings_bare",
    ),
    "config get --quiet": (
        "tests/cli/test_broker_commands.py::test_config_get_prints_json_and_strings_bare",
    ),
    "config get --type": (
        "tests/cli/test_broker_commands.py::test_config_get_prints_json_and_strings_bare",
    ),
    "config get --uri": URI,
    "startlog --check": (
        "tests/cli/test_startlog.py::test_startlog_lists_each_run_and_tells_a_crash",
    ),
    "startlog --quiet": (
        "tests/cli/test_startlog.py::test_startlog_lists_each_run_and_tells_a_crash",
    ),
    "startlog --show-version": (
        "tests/cli/test_startlog.py::test_startlog_lists_each_run_and_tells_a_crash",
    ),
    "startlog --uri": URI,
    "overlay status --down": (
        "tests/cli/test_overlay.py::test_overlay_status_draws_the_tree_and_tells_a_lost_rank",
    ),
    "overlay status --no-pretty": (
        "tests/cli/test_overlay.py::test_overlay_status_draws_the_tree_and_tells_a_lost_rank",
    ),
    "overlay status --rank": (
        "tests/cli/test_overlay.py::test_overlay_status_draws_the_tree_and_tells_a_lost_rank",
    ),
    "overlay status --summary": (
        "tests/cli/test_overlay.py::test_overlay_status_draws_the_tree_and_tells_a_lost_rank",
    ),
    "overlay status --verbose": (
        "tests/cli/test_overlay.py::test_overlay_status_draws_the_tree_and_tells_a_lost_rank",
    ),
    "overlay status --uri": URI,
    "overlay lookup --uri": URI,
    "overlay parentof --uri": URI,
    "job memo --uri": URI,
    "job memo --volatile": (
        "tests/e2e/test_memo.py::test_volatile_memo_is_shown_but_not_in_the_eventlog",
    ),
    "job last --uri": URI,
    "job purge --uri": URI,
    "job purge --age-limit": (
        "tests/e2e/test_purge.py::test_age_limit_purges_only_jobs_inactive_longer",
    ),
    "job purge --num-limit": (
        "tests/e2e/test_purge.py::test_purge_counts_without_force_and_removes_the_oldest_with_it",
    ),
    "job purge --force": (
        "tests/e2e/test_purge.py::test_purge_counts_without_force_and_removes_the_oldest_with_it",
        "tests/e2e/test_purge.py::test_purge_by_id_refuses_an_active_job_by_name_and_purges_nothing",
    ),
    "job purge --batch": (
        "tests/e2e/test_purge.py::test_purge_counts_without_force_and_removes_the_oldest_with_it",
        "tests/e2e/test_purge.py::test_purge_by_id_refuses_an_active_job_by_name_and_purges_nothing",
    ),
    "job stats --uri": URI,
    "job timeleft --uri": URI,
    "job hostpids --uri": URI,
    "job list --uri": URI,
    "job list --count": JOB_LIST,
    "job list --states": JOB_LIST,
    "job list --user": JOB_LIST,
    "job list --all-user": JOB_LIST,
    "job list --all": JOB_LIST,
    "job list-inactive --uri": URI,
    "job list-inactive --count": JOB_LIST,
    "job list-inactive --since": JOB_LIST,
    "job list-ids --uri": URI,
    "job list-ids --wait-state": JOB_LIST,
    "job hostpids --delimiter": ("tests/cli/test_job_hostpids.py::test_hostpids_names_each_task",),
    "job hostpids --ranks": ("tests/cli/test_job_hostpids.py::test_hostpids_names_each_task",),
    "job hostpids --timeout": ("tests/cli/test_job_hostpids.py::test_hostpids_errors",),
    "job timeleft --human": (
        "tests/cli/test_job_timeleft.py::test_a_job_reads_its_own_time_left",
        "tests/cli/test_job_timeleft.py::test_the_instance_has_no_limit",
    ),
    "job raiseall --uri": URI,
    "job raiseall --severity": (
        "tests/cli/test_job_raiseall_killall.py::test_raiseall_counts_then_raises",
        "tests/cli/test_job_raiseall_killall.py::test_raiseall_errors",
    ),
    "job raiseall --user": (
        "tests/cli/test_job_raiseall_killall.py::test_raiseall_counts_then_raises",
        "tests/cli/test_job_raiseall_killall.py::test_raiseall_errors",
    ),
    "job raiseall --states": (
        "tests/cli/test_job_raiseall_killall.py::test_raiseall_counts_then_raises",
        "tests/cli/test_job_raiseall_killall.py::test_raiseall_errors",
    ),
    "job raiseall --force": (
        "tests/cli/test_job_raiseall_killall.py::test_raiseall_counts_then_raises",
    ),
    "job killall --uri": URI,
    "job killall --signal": (
        "tests/cli/test_job_raiseall_killall.py::test_killall_counts_then_signals_running_jobs",
    ),
    "job killall --user": (
        "tests/cli/test_job_raiseall_killall.py::test_killall_counts_then_signals_running_jobs",
    ),
    "job killall --force": (
        "tests/cli/test_job_raiseall_killall.py::test_killall_counts_then_signals_running_jobs",
    ),
    "job taskmap --uri": URI,
    **{
        f"job taskmap --{option}": (
            "tests/cli/test_job_taskmap.py::test_a_jobs_taskmap_and_its_questions",
            "tests/cli/test_job_taskmap.py::test_a_taskmap_given_as_text",
        )
        for option in ("taskids", "ntasks", "nodeid", "hostname", "to")
    },
    "watch --uri": URI,
    **{
        f"watch --{option}": (
            "tests/cli/test_watch.py::test_watch_copies_output_and_exits_with_the_largest_code",
            "tests/cli/test_watch.py::test_watch_selection_errors",
        )
        for option in ("active", "all", "count", "filter", "since", "label-io")
    },
    **{
        f"watch --{option}": (
            "tests/cli/test_watch.py::test_watch_progress_off_a_terminal_and_verbose",
            "tests/cli/test_watch.py::test_watch_selection_errors",
        )
        for option in ("progress", "jps", "verbose")
    },
    "queue stop --nocheckpoint": (
        "tests/cli/test_queue.py::test_a_stop_not_stored_and_a_shutdown_leave_the_stored_state",
    ),
    "submit --cores": (
        "tests/cli/test_submit_dry_run.py::test_per_resource_options_print_as_flux",
        "tests/e2e/test_taskmap.py::test_cores_and_tasks_per_core",
    ),
    "submit --tasks-per-node": (
        "tests/cli/test_submit_dry_run.py::test_per_resource_options_print_as_flux",
        "tests/e2e/test_taskmap.py::test_tasks_per_node",
    ),
    "submit --tasks-per-core": (
        "tests/cli/test_submit_dry_run.py::test_per_resource_options_print_as_flux",
        "tests/e2e/test_taskmap.py::test_cores_and_tasks_per_core",
    ),
    "submit --gpus-per-node": (
        "tests/cli/test_submit_dry_run.py::test_per_resource_options_print_as_flux",
        "tests/cli/test_submit_dry_run.py::test_bad_per_resource_and_taskmap_options",
    ),
    "submit --taskmap": (
        "tests/cli/test_submit_dry_run.py::test_taskmap_is_a_shell_option_as_flux_writes_it",
        "tests/e2e/test_mpi.py::test_mpi_over_nodes_with_a_cyclic_taskmap",
    ),
    "submit --signal": (
        "tests/e2e/test_shell_options.py::test_signal_before_the_time_limit",
        "tests/e2e/test_shell_options.py::test_signal_option_value",
    ),
    "run --cores": SAME_AS_SUBMIT,
    "run --tasks-per-node": SAME_AS_SUBMIT,
    "run --tasks-per-core": SAME_AS_SUBMIT,
    "run --gpus-per-node": SAME_AS_SUBMIT,
    "run --taskmap": SAME_AS_SUBMIT,
    "run --signal": SAME_AS_SUBMIT,
    "submit --requires": (
        "tests/e2e/test_requires.py::test_constraints_every_rank_meets_run",
        "tests/e2e/test_requires.py::test_unmet_constraints_are_refused_before_submission",
        "tests/e2e/test_requires.py::test_a_bad_query_names_the_option",
        "tests/e2e/test_requires.py::test_a_constraint_only_some_ranks_meet_places_the_job_there",
    ),
    "run --requires": ("tests/e2e/test_requires.py::test_constraints_every_rank_meets_run",),
    "bulksubmit --requires": (
        "tests/e2e/test_requires.py::test_unmet_constraints_are_refused_before_submission",
    ),
    "bulksubmit --bank": SAME_AS_SUBMIT,
    "bulksubmit --bcc": (
        "tests/e2e/test_bulksubmit.py::test_cc_copies_each_input_and_keeps_cc_for_them",
    ),
    "bulksubmit --begin-time": SAME_AS_SUBMIT,
    "bulksubmit --cc": (
        "tests/e2e/test_bulksubmit.py::test_cc_copies_each_input_and_keeps_cc_for_them",
        "tests/cli/test_bulksubmit.py::test_progress_and_shuffle",
    ),
    "bulksubmit --cores": SAME_AS_SUBMIT,
    "bulksubmit --cores-per-task": SAME_AS_SUBMIT,
    "bulksubmit --cwd": SAME_AS_SUBMIT,
    "bulksubmit --define": (
        "tests/cli/test_bulksubmit.py::test_templates_and_inputs_as_flux_t2713",
        "tests/cli/test_bulksubmit.py::test_bad_templates_and_inputs",
    ),
    "bulksubmit --dependency": SAME_AS_SUBMIT,
    "bulksubmit --dry-run": (
        "tests/cli/test_bulksubmit.py::test_templates_and_inputs_as_flux_t2713",
        "tests/cli/test_submit_dry_run.py::test_old_flux_spellings_time_and_dry",
    ),
    "bulksubmit --env": (
        "tests/e2e/test_bulksubmit.py::test_a_job_per_input_each_with_its_own_options",
        "tests/cli/test_bulksubmit.py::test_templates_and_inputs_as_flux_t2713",
    ),
    "bulksubmit --env-file": SAME_AS_SUBMIT,
    "bulksubmit --env-remove": SAME_AS_SUBMIT,
    "bulksubmit --error": SAME_AS_SUBMIT,
    "bulksubmit --exclusive": SAME_AS_SUBMIT,
    "bulksubmit --flags": SAME_AS_SUBMIT,
    "bulksubmit --gpus-per-node": SAME_AS_SUBMIT,
    "bulksubmit --gpus-per-task": SAME_AS_SUBMIT,
    "bulksubmit --input": SAME_AS_SUBMIT,
    "bulksubmit --job-name": (
        "tests/e2e/test_bulksubmit.py::test_a_job_per_input_each_with_its_own_options",
    ),
    "bulksubmit --label-io": SAME_AS_SUBMIT,
    "bulksubmit --nodes": SAME_AS_SUBMIT,
    "bulksubmit --ntasks": (
        "tests/cli/test_bulksubmit.py::test_templates_and_inputs_as_flux_t2713",
        "tests/e2e/test_bulksubmit.py::test_an_unsatisfiable_job_fails_the_watch_and_the_rest_run",
    ),
    "bulksubmit --output": SAME_AS_SUBMIT,
    "bulksubmit --jps": SAME_AS_SUBMIT,
    "bulksubmit --progress": (
        "tests/e2e/test_bulksubmit.py::test_progress_counts_the_submissions",
        "tests/cli/test_bulksubmit.py::test_progress_and_shuffle",
    ),
    "bulksubmit --queue": SAME_AS_SUBMIT,
    "bulksubmit --quiet": ("tests/e2e/test_bulksubmit.py::test_progress_counts_the_submissions",),
    "bulksubmit --rlimit": SAME_AS_SUBMIT,
    "bulksubmit --sep": (
        "tests/cli/test_bulksubmit.py::test_templates_and_inputs_as_flux_t2713",
        "tests/cli/test_bulksubmit.py::test_bad_templates_and_inputs",
    ),
    "bulksubmit --setattr": SAME_AS_SUBMIT,
    "bulksubmit --setopt": SAME_AS_SUBMIT,
    "bulksubmit --shuffle": ("tests/cli/test_bulksubmit.py::test_progress_and_shuffle",),
    "bulksubmit --signal": SAME_AS_SUBMIT,
    "bulksubmit --taskmap": SAME_AS_SUBMIT,
    "bulksubmit --tasks-per-core": SAME_AS_SUBMIT,
    "bulksubmit --tasks-per-node": SAME_AS_SUBMIT,
    "bulksubmit --time-limit": SAME_AS_SUBMIT,
    "bulksubmit --unbuffered": SAME_AS_SUBMIT,
    "bulksubmit --urgency": SAME_AS_SUBMIT,
    "bulksubmit --wait": (
        "tests/e2e/test_bulksubmit.py::test_wait_exits_with_the_highest_job_exit_code",
    ),
    "bulksubmit --watch": ("tests/e2e/test_bulksubmit.py::test_stdin_inputs_and_watch",),
    "bulksubmit --uri": URI,
    "submit --verbose": (
        "tests/e2e/test_bulksubmit.py::test_verbose_logs_each_end_and_every_event",
    ),
    "submit --log": ("tests/e2e/test_bulksubmit.py::test_log_files_take_ids_messages_and_output",),
    "submit --log-stderr": (
        "tests/e2e/test_bulksubmit.py::test_log_files_take_ids_messages_and_output",
    ),
    "bulksubmit --verbose": (
        "tests/e2e/test_bulksubmit.py::test_verbose_logs_each_end_and_every_event",
    ),
    "bulksubmit --log": (
        "tests/e2e/test_bulksubmit.py::test_log_files_take_ids_messages_and_output",
    ),
    "bulksubmit --log-stderr": (
        "tests/e2e/test_bulksubmit.py::test_log_files_take_ids_messages_and_output",
    ),
    "start --setattr": (
        "tests/e2e/test_batch.py::test_start_takes_the_broker_attributes_it_honours",
        "tests/e2e/test_batch.py::test_broker_options_the_nested_instance_honours",
        "tests/cli/test_batch_alloc.py::test_alloc_refuses_io_options_and_bad_broker_options",
    ),
    "batch --bank": SAME_AS_SUBMIT,
    "batch --begin-time": SAME_AS_SUBMIT,
    "batch --dependency": SAME_AS_SUBMIT,
    "batch --env-file": SAME_AS_SUBMIT,
    "batch --env-remove": SAME_AS_SUBMIT,
    "batch --flags": SAME_AS_SUBMIT,
    "batch --requires": SAME_AS_SUBMIT,
    "batch --rlimit": SAME_AS_SUBMIT,
    "batch --setopt": SAME_AS_SUBMIT,
    "batch --signal": SAME_AS_SUBMIT,
    "batch --unbuffered": SAME_AS_SUBMIT,
    "batch --uri": URI,
    "batch --nslots": ("tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",),
    "batch --cores-per-slot": (
        "tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",
    ),
    "batch --gpus-per-slot": ("tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",),
    "batch --nodes": (
        "tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",
        "tests/e2e/test_batch.py::test_the_jobspec_carries_the_script",
    ),
    "batch --exclusive": ("tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",),
    "batch --dry-run": ("tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",),
    "batch --format": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "batch --broker-opts": (
        "tests/e2e/test_batch.py::test_broker_options_the_nested_instance_honours",
        "tests/e2e/test_batch.py::test_bad_batch_requests_are_refused",
        "tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",
    ),
    "batch --conf": (
        "tests/e2e/test_batch.py::test_conf_configures_the_nested_instance",
        "tests/cli/test_batch_alloc.py::test_conf_travels_in_the_jobspec",
        "tests/e2e/test_batch.py::test_bad_batch_requests_are_refused",
        "tests/cli/test_batch_alloc.py::test_alloc_refuses_io_options_and_bad_broker_options",
    ),
    "batch --cwd": (
        "tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",
        "tests/e2e/test_batch.py::test_wrap_and_stdin",
    ),
    "batch --env": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "batch --job-name": (
        "tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",
        "tests/e2e/test_batch.py::test_a_script_runs_in_a_nested_instance_with_its_directives",
    ),
    "batch --queue": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "batch --setattr": (
        "tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",
        "tests/e2e/test_batch.py::test_a_script_runs_in_a_nested_instance_with_its_directives",
    ),
    "batch --time-limit": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "batch --urgency": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "alloc --bank": SAME_AS_SUBMIT,
    "alloc --bg": (
        "tests/e2e/test_alloc.py::test_alloc_bg_prints_the_job_id_once_the_instance_answers_and_shutdown_stops_it",
        "tests/e2e/test_alloc.py::test_alloc_bg_of_an_instance_that_ends_first_says_so",
    ),
    "alloc --begin-time": SAME_AS_SUBMIT,
    "alloc --dependency": SAME_AS_SUBMIT,
    "alloc --env-file": SAME_AS_SUBMIT,
    "alloc --env-remove": SAME_AS_SUBMIT,
    "alloc --flags": SAME_AS_SUBMIT,
    "alloc --requires": SAME_AS_SUBMIT,
    "alloc --rlimit": SAME_AS_SUBMIT,
    "alloc --setopt": SAME_AS_SUBMIT,
    "alloc --signal": SAME_AS_SUBMIT,
    "alloc --unbuffered": SAME_AS_SUBMIT,
    "alloc --uri": URI,
    "alloc --nslots": ("tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",),
    "alloc --cores-per-slot": (
        "tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",
    ),
    "alloc --gpus-per-slot": ("tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",),
    "alloc --nodes": (
        "tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",
        "tests/e2e/test_batch.py::test_the_jobspec_carries_the_script",
    ),
    "alloc --exclusive": ("tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",),
    "alloc --dry-run": ("tests/cli/test_batch_alloc.py::test_slots_cores_and_gpus_per_slot",),
    "alloc --format": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "alloc --broker-opts": (
        "tests/e2e/test_batch.py::test_broker_options_the_nested_instance_honours",
        "tests/e2e/test_batch.py::test_bad_batch_requests_are_refused",
        "tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",
    ),
    "alloc --conf": (
        "tests/e2e/test_batch.py::test_conf_configures_the_nested_instance",
        "tests/cli/test_batch_alloc.py::test_conf_travels_in_the_jobspec",
        "tests/e2e/test_batch.py::test_bad_batch_requests_are_refused",
        "tests/cli/test_batch_alloc.py::test_alloc_refuses_io_options_and_bad_broker_options",
    ),
    "alloc --cwd": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "alloc --env": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "alloc --job-name": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "alloc --queue": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "alloc --setattr": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "alloc --time-limit": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "alloc --urgency": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "batch --output": (
        "tests/cli/test_batch_alloc.py::test_batch_output_kvs_keeps_the_output_in_the_job",
        "tests/e2e/test_batch.py::test_the_command_line_overrides_the_directives",
        "tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",
    ),
    "batch --error": ("tests/cli/test_batch_alloc.py::test_job_options_apply_as_submits",),
    "batch --input": SAME_AS_SUBMIT,
    "batch --wrap": ("tests/e2e/test_batch.py::test_wrap_and_stdin",),
    "alloc --output": ("tests/e2e/test_alloc.py::test_alloc_refuses_output_options",),
    "alloc --error": (
        "tests/cli/test_batch_alloc.py::test_alloc_refuses_io_options_and_bad_broker_options",
    ),
    "alloc --input": (
        "tests/cli/test_batch_alloc.py::test_alloc_refuses_io_options_and_bad_broker_options",
    ),
    "alloc --verbose": ("tests/e2e/test_alloc.py::test_alloc_runs_a_command_in_a_nested_instance",),
}

# options, and shell options, with no test that they take effect, and why
UNPROVEN: Final[dict[str, str]] = {}


class _Parsed(Exception):
    """Raised in place of parsing, carrying the parser a command built."""


def _parser(module_name: str) -> argparse.ArgumentParser:
    module = importlib.import_module(f"pflux.cli.{module_name}")
    build = getattr(module, "parser", None)
    if (
        callable(build)
        and getattr(build, "__module__", "").startswith("pflux.cli.")
        and (build.__code__.co_argcount == 0)
    ):
        built: argparse.ArgumentParser = build()
        return built

    def grab(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise _Parsed(self)

    def grab_declared(self: options.OptionParser, *args: object, **kwargs: object) -> None:
        raise _Parsed(self.argparse())

    with (
        mock.patch.object(argparse.ArgumentParser, "parse_args", grab),
        mock.patch.object(argparse.ArgumentParser, "parse_known_args", grab),
        mock.patch.object(options.OptionParser, "parse_args", grab_declared),
    ):
        try:
            module.main([])
        except _Parsed as parsed:
            found: argparse.ArgumentParser = parsed.args[0]
            return found
    raise AssertionError(f"pflux.cli.{module_name} parsed no arguments")


def _options(prefix: str, parser: argparse.ArgumentParser) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(f"{prefix} {name}", sub)
        elif action.option_strings and not isinstance(action, argparse._HelpAction):
            yield f"{prefix} {max(action.option_strings, key=len)}"


def every_option() -> set[str]:
    """``COMMAND --option`` for every option of every command (``-h`` aside); a
    command that is another's alias (``broker``: ``start``) is proven by the other's."""
    found: set[str] = set()
    seen: set[str] = set()
    for command, module in COMMANDS.items():
        if module in seen:
            continue
        seen.add(module)
        if module == "job":
            for sub, sub_module in SUBCOMMANDS.items():
                found.update(_options(f"job {sub}", _parser(sub_module)))
        else:
            found.update(_options(command, _parser(module)))
    return found


def _proof(option: str) -> tuple[str, ...]:
    tests = PROOF[option]
    if tests is SAME_AS_SUBMIT:
        return PROOF["submit " + option.split(" ", 1)[1]]
    return tests


def _test_ids(path: Path) -> set[str]:
    """``FILE::test`` and ``FILE::Class::test`` for every test function in a file."""
    tree = ast.parse(path.read_text())
    rel = path.relative_to(ROOT).as_posix()
    ids = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            ids.add(f"{rel}::{node.name}")
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                    ids.add(f"{rel}::{node.name}::{item.name}")
    return ids


def test_every_option_has_an_entry() -> None:
    options = every_option()
    missing = sorted(options - PROOF.keys() - UNPROVEN.keys())
    assert not missing, f"options with no proving test in PROOF: {missing}"
    stale = sorted(
        (PROOF.keys() | UNPROVEN.keys()) - options - {f"shell {n}" for n in SHELL_OPTIONS}
    )
    assert not stale, f"entries for options that no longer exist: {stale}"


def test_every_shell_option_has_an_entry() -> None:
    missing = [
        name
        for name in SHELL_OPTIONS
        if name not in SHELL_PROOF and f"shell {name}" not in UNPROVEN
    ]
    assert not missing, f"shell options with no proving test: {missing}"


def test_every_named_test_exists() -> None:
    named = {test for option in PROOF for test in _proof(option)}
    named |= {test for tests in SHELL_PROOF.values() for test in tests}
    files = {test.split("::")[0] for test in named}
    missing_files = sorted(f for f in files if not (ROOT / f).is_file())
    assert not missing_files, f"PROOF names test files that do not exist: {missing_files}"
    existing = set().union(*(_test_ids(ROOT / f) for f in files))
    absent = sorted(named - existing)
    assert not absent, f"PROOF names tests that do not exist: {absent}"


def test_unproven_is_only_what_is_left() -> None:
    both = sorted(PROOF.keys() & UNPROVEN.keys())
    assert not both, f"proven now, so no longer UNPROVEN: {both}"
