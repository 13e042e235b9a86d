"""The errors of the backends, raised by their clients and providers:

    BackendError       a backend refused or failed a step
    ├── AuthentikError
    ├── KubernetesError
    ├── NoticeError
    ├── OffboardingError
    ├── RetentionStoreError
    ├── SlurmError
    ├── WebhookError
    └── WekaError

Each message says what was being done to which object, quotes the backend's own words, and says
what the operator can do next (`BackendError(doing, backend_says, next_step)`).
"""

from __future__ import annotations

__all__ = [
    "AuthentikError",
    "BackendError",
    "KubernetesError",
    "NoticeError",
    "OffboardingError",
    "RetentionStoreError",
    "SlurmError",
    "WebhookError",
    "WekaError",
]


class BackendError(Exception):
    """A backend refused or failed a step. The message says what was being done to which object,
    quotes the backend's own words, and says what the operator can do next. It never holds a
    token or a password."""

    def __init__(
        self, doing: str, backend_says: str, next_step: str = "", *, refused: bool = False
    ) -> None:
        self.doing = doing
        self.backend_says = backend_says
        self.next_step = next_step
        # The backend answered, and refused the credentials or their rights (HTTP 401 or 403,
        # kubectl's Unauthorized or Forbidden): a matter of rights, not of reaching it.
        self.refused = refused
        message = f"{doing} failed: {backend_says}"
        super().__init__(f"{message}; {next_step}" if next_step else message)


class AuthentikError(BackendError):
    """The Authentik API answered with an error (its JSON body is `backend_says`)."""


class KubernetesError(BackendError):
    """kubectl failed or gave no answer; `backend_says` is its own message."""


class NoticeError(BackendError):
    """A notice to a tenant's contact could not be sent (the mail relay)."""


class OffboardingError(BackendError):
    """Offboarding refused a step: the tenant is not where the runbook's order needs it."""


class RetentionStoreError(BackendError):
    """The retention object store (S3) refused or failed a request; `backend_says` is S3's own
    error code and message, or the transport's words when no answer came."""


class SlurmError(BackendError):
    """A Slurm command (sacctmgr, scontrol) failed; `backend_says` is its output."""


class WebhookError(BackendError):
    """The operators' chat webhook did not take a message; `backend_says` is its answer."""


class WekaError(BackendError):
    """The Weka API answered with an error (its `message` is `backend_says`)."""
