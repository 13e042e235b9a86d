"""Can the program run here at all? Each backend's reachability, version and credentials, read
without writing anything, as data (`Check`) for `gpu-tenants doctor` to print.

    report     Check, its statuses, and the exit status of a set of checks
    supported  the versions of each backend the program supports, and their judging
    kubernetes the API access the stacks need, as data, and its checks
    backends   Authentik, Weka, Slurm, the retention store and Temporal
    engine     the Pulumi engine, its plugins, the state backend and the secrets provider
    run        every check, concurrently, each bounded by a timeout
"""

from tenant_stack.doctor.report import FAILED, NOT_RUN, OK, Check, exit_status
from tenant_stack.doctor.run import DoctorError, run_checks

__all__ = ["FAILED", "NOT_RUN", "OK", "Check", "DoctorError", "exit_status", "run_checks"]
