"""The offboarding gate: one record per tenant stack that depends on every other resource of the
tenant, so `pulumi destroy` (which deletes dependents first) must delete it before anything else,
and a delete it refuses stops the whole run with nothing deleted.

It opens only when the last `up` recorded stage destroy with a sign-off (or a rehearsal), and then
only once nothing of the tenant runs (runbook step 4d): no job of its accounts pending or running,
no pod of its namespace running. The `up` that applies stage destroy writes the sign-off, with who
confirmed for the customer or gave the escalation sign-off, into the tenant's retention ledger
(where no one can rewrite it), and the gate opens only when the ledger holds it (step 0).

An abandoned onboarding (the rollback of one that went wrong) needs no stage or sign-off: the
gate opens at stage active once it has read, live, that the tenant never ran a job nor wrote a
file (`never_used`), and only the stack's login release may still run a pod.
"""

from __future__ import annotations

from typing import Any

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from providers.base import LIFECYCLE, Field, Schema, SchemaProvider, nonempty_text
from providers.errors import OffboardingError
from providers.kubernetes.workloads import Workloads
from providers.offboarding.never_used import refuse_if_used
from providers.retention.ledger import record_sign_off, refuse_unsigned, refuse_while_held
from providers.slurm import values
from providers.slurm.queue import SlurmQueue
from providers.slurm.settings import Settings as SlurmSettings

__all__ = ["OffboardingGateProvider"]


_SIGN_OFF_KEYS = ("by", "date", "ticket", "confirmation", "confirmed_by")


def _sign_off(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or sorted(value) != sorted(_SIGN_OFF_KEYS):
        raise ValueError(f"is not a sign-off {{{', '.join(_SIGN_OFF_KEYS)}}}")
    return {key: nonempty_text(value[key]) for key in _SIGN_OFF_KEYS}


def _abandoned(value: Any) -> dict[str, Any] | None:
    """What an abandoned onboarding's gate reads: the tenant's directories (organization,
    filesystem, path) and the stack's login release, whose pod may still run."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"places", "login_release"}:
        raise ValueError("is not {places, login_release}")
    places = [[nonempty_text(part) for part in place] for place in value["places"]]
    if any(len(place) != 3 for place in places):
        raise ValueError("a place is [organization, filesystem, path]")
    return {"places": places, "login_release": nonempty_text(value["login_release"])}


GATE = Schema(
    kind="offboarding gate",
    fields=(
        Field("tenant", nonempty_text),
        Field("accounts", lambda v: sorted(values.names(v))),
        Field("namespace", nonempty_text),
        LIFECYCLE,
        Field("sign_off", _sign_off, default=None),
        Field("abandoned", _abandoned, default=None),
    ),
)


class OffboardingGateProvider(SchemaProvider):
    schema = GATE
    error = OffboardingError

    def create(self, props: dict[str, Any]) -> CreateResult:
        p = self.load(props, f"recording the offboarding stage of tenant {props.get('tenant')!r}")
        _record_sign_off(p)
        return CreateResult(p["tenant"], p)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        # A record of the stack's own, with nothing live behind it.
        return ReadResult(id_, props)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        p = self.load(news, f"recording the offboarding stage of {news['tenant']!r}")
        _record_sign_off(p)
        return UpdateResult(p)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        doing = f"destroying tenant {id_!r}"
        self.refuse_before_offboarding(f"tenant {id_!r}", props, doing)
        lifecycle = props.get(LIFECYCLE.key) or {}
        if lifecycle.get("rehearsal"):
            return
        abandoned = props.get("abandoned")
        if lifecycle.get("abandoned"):
            if not abandoned:
                raise OffboardingError(
                    doing,
                    "refused: the last `up` recorded an abandoned onboarding without the "
                    "tenant's directories, which the gate reads first",
                    "run `pulumi up` again, then the destroy; nothing was deleted",
                )
            refuse_if_used(OffboardingError, props["accounts"], abandoned["places"], doing)
        else:
            refuse_unsigned(OffboardingError, id_, props.get("sign_off"), f"tenant {id_!r}")
        # The spec's hold stops the stage's `up`; a hold set since (`retention hold`) stops this.
        refuse_while_held(OffboardingError, id_, f"tenant {id_!r}")
        login = abandoned["login_release"] if abandoned else None
        running = [
            p.name
            for p in Workloads(props["namespace"]).pods()
            if p.phase == "Running" and (login is None or p.instance != login)
        ]
        if running:
            raise OffboardingError(
                doing,
                f"refused (runbook step 4d): {len(running)} pods still run in namespace "
                f"{props['namespace']}: {', '.join(running[:10])}",
                "stop them (stage drained stops the tenant's workloads; the login release stops "
                "at stage snapshotted), then run `pulumi destroy --exclude-protected` again; "
                "nothing was deleted",
            )
        queue = SlurmQueue(SlurmSettings.from_environment().make_transport())
        jobs = queue.jobs(props["accounts"])
        if jobs:
            listed = ", ".join(str(job) for job in jobs[:10])
            raise OffboardingError(
                doing,
                f"refused (runbook step 4d): {len(jobs)} jobs of the tenant are still queued or "
                f"running: {listed}",
                "end them (`scancel -A " + ",".join(props["accounts"]) + "`) once the tenant "
                "agrees, then run `pulumi destroy --exclude-protected` again; nothing was deleted",
            )


def _record_sign_off(props: dict[str, Any]) -> None:
    lifecycle = props[LIFECYCLE.key] or {}
    if lifecycle.get("stage") == "destroy" and not lifecycle.get("rehearsal") and props["sign_off"]:
        record_sign_off(props["tenant"], props["sign_off"])
