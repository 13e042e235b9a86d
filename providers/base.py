"""What every dynamic provider here shares, written once: a table of fields, check, diff in the
backend's stored form, values a preview does not know yet, and the answer for an object gone.

A resource kind is a `Schema`: its fields, each with how an input is validated and put in
canonical form (`parse`), whether a change replaces the object, and the form the backend stores it
in (`stored`), so that a diff right after `up` is empty although the backend lowercased a
Description or printed 24:00:00 as 1-00:00:00. A provider names its schema and its backend's
error class; `check` then reports every invalid input at its property, and `diff` compares the old
outputs (which repeat the inputs as the backend has them now) with the new inputs, so that a
change made behind Pulumi's back shows after a refresh.

`check` returns the inputs in canonical form, defaults filled, so that create and update get
what the backend will store. A provider holds no client, endpoint or credential (Pulumi pickles
it into the state): each call builds its client from the environment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pulumi.dynamic import CheckFailure, CheckResult, DiffResult, ReadResult, ResourceProvider
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN

from providers.errors import BackendError

__all__ = [
    "ADOPT",
    "LIFECYCLE",
    "REQUIRED",
    "Field",
    "Rule",
    "Schema",
    "SchemaProvider",
    "adopting",
    "gone",
    "is_unknown",
    "nonempty_text",
]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


def _same(value: Any) -> Any:
    return value


def is_unknown(value: Any) -> bool:
    """True for a value `pulumi preview` cannot know yet (an output of a resource to be made or
    updated): the engine's glue hands such a value as `Unknown` or as the wire's sentinel."""
    if isinstance(value, list | tuple):
        return any(is_unknown(item) for item in value)
    if isinstance(value, dict):
        return any(is_unknown(item) for item in value.values())
    return isinstance(value, Unknown) or (isinstance(value, str) and value == UNKNOWN)


@dataclass(frozen=True)
class Field:
    key: str
    # Validates an input or output value and returns its canonical form; ValueError says why not
    # (never quoting a secret's value).
    parse: Callable[[Any], Any] = _same
    default: Any = REQUIRED  # the value of an absent input; REQUIRED: it must be given
    replaces: bool = False  # a change creates a new object rather than modifying this one
    stored: Callable[[Any], Any] = _same  # the canonical value as the backend stores it
    inherited: bool = False  # unset in the inputs: the backend's (inherited) value is left alone
    # A login, not a property of the object: not known during a preview (its organization is
    # being updated), it is no change, since the credential stays the same.
    login: bool = False


@dataclass(frozen=True)
class Rule:
    """A check across fields: it runs once every field it `needs` is known and valid, so that
    one check reports every problem it can, and returns (property, reason) pairs."""

    needs: tuple[str, ...]
    check: Callable[[Mapping[str, Any]], list[tuple[str, str]]]


@dataclass(frozen=True)
class Schema:
    kind: str
    fields: tuple[Field, ...]
    identity: tuple[str, ...] = ()  # the keys that name the object in the backend
    rules: tuple[Rule, ...] = ()
    # Outputs the inputs imply but do not hold: the ownership mark a tenant's object carries, an
    # enabled user. An old output that differs is a change `update` puts back.
    implied: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None

    def problems(self, news: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(property, reason) for every invalid input; values not known yet are skipped, and each
        rule across fields waits until the fields it needs are known and valid."""
        found = []
        parsed: dict[str, Any] = {}
        for field in self.fields:
            value = news.get(field.key, field.default)
            if value is REQUIRED or (value is None and field.default is REQUIRED):
                found.append((field.key, "is required"))
                continue
            if is_unknown(value):
                continue
            try:
                parsed[field.key] = field.parse(value)
            except ValueError as error:
                found.append((field.key, str(error)))
        for rule in self.rules:
            if all(key in parsed for key in rule.needs):
                found.extend(rule.check(parsed))
        return found

    def load(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """The validated, canonical properties, defaults filled; ValueError listing every
        problem."""
        found = self.problems(props)
        if found:
            raise ValueError("; ".join(f"{key}: {reason}" for key, reason in found))
        return {
            field.key: field.parse(props.get(field.key, field.default)) for field in self.fields
        }

    def recorded(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Each field of `props` (inputs, or old outputs) in canonical form where it parses, as
        it is where it does not (not known yet, or changed behind Pulumi's back), defaults
        filled; a required field that is missing stays missing."""
        found = {}
        for field in self.fields:
            value = props.get(field.key, field.default)
            if value is REQUIRED:
                continue
            try:
                found[field.key] = value if is_unknown(value) else field.parse(value)
            except (ValueError, TypeError):
                found[field.key] = value
        return found

    def differences(
        self, olds: Mapping[str, Any], news: Mapping[str, Any]
    ) -> tuple[list[str], list[str]]:
        """The keys whose stored forms differ between the last outputs and the new inputs, and
        those of them that force a replacement."""
        changed = []
        for field in self.fields:
            new = news.get(field.key, field.default)
            if field.inherited and new is None:
                continue
            if is_unknown(new):
                if not field.login:
                    changed.append(field.key)
            elif _stored(field, new) != _stored(field, olds.get(field.key, field.default)):
                changed.append(field.key)
        if self.implied is not None:
            if any(is_unknown(news.get(field.key)) for field in self.fields):
                implied: Mapping[str, Any] = {}
            else:
                implied = self.implied(news)
            changed.extend(
                key
                for key, value in implied.items()
                if _comparable(olds.get(key)) != _comparable(value)
            )
        replaces = [f.key for f in self.fields if f.replaces and f.key in changed]
        return changed, replaces


def _stored(field: Field, value: Any) -> Any:
    try:
        return field.stored(field.parse(value))
    except (ValueError, TypeError):
        # What the backend holds after a change made behind the provider's back may not be valid
        # input: compared as it is, it differs from any valid input, which is the drift to report.
        return value


def _comparable(value: Any) -> Any:
    # Backends lowercase marks (slurmdbd keeps a Description lowercased).
    return value.lower() if isinstance(value, str) else value


def _lifecycle(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not isinstance(value.get("stage"), str):
        raise ValueError(f"{value!r} is not a lifecycle record {{stage, next_stage, signed_off}}")
    return {
        "stage": value["stage"],
        "next_stage": value.get("next_stage"),
        "signed_off": bool(value.get("signed_off")),
        "rehearsal": bool(value.get("rehearsal")),
        "abandoned": bool(value.get("abandoned")),
    }


# The tenant's offboarding stage as the last `up` recorded it on a tenant-level object. `destroy`
# does not run the program, so this record is all a delete knows of where the tenant stands;
# None (a team's sub-account, or a state from before stages were recorded) gates nothing.
LIFECYCLE = Field("lifecycle", _lifecycle, default=None)


# The reviewed flag of a tenant brought in by `import` (its spec's imported.adopt): create takes
# over an object it finds that carries no tenant's ownership mark, and marks it, instead of
# refusing it. Not a field: it decides what create does with what it finds, never what the object
# is, so it is no change in a diff and removing it later changes nothing.
ADOPT = "adopt"


def adopting(inputs: Mapping[str, Any]) -> bool:
    return inputs.get(ADOPT) is True


def nonempty_text(value: Any) -> str:
    """A field's parse for a name with no backend's grammar to follow: any non-empty string."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{value!r} is not a non-empty name")
    return value


def whole_number(value: Any, unit: str) -> int:
    """A field's parse for a count of `unit`s. Numbers reach a dynamic provider from the engine
    as floats (2.0), so a float with no fraction is that whole number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ValueError(f"{value!r} is not a whole number of {unit}")
    return int(value)


def gone() -> ReadResult:
    """What read answers for an object that no longer exists: the engine drops it from the
    state (a fresh dict, which the engine's glue writes into)."""
    return ReadResult("", {})


class SchemaProvider(ResourceProvider):
    """check and diff from `schema`; a subclass adds the backend calls."""

    schema: ClassVar[Schema]
    error: ClassVar[type[BackendError]]
    # Nothing secret is captured (no client, endpoint or credential), so the state need not
    # encrypt the pickled provider.
    serialize_as_secret_always = False

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = [CheckFailure(key, reason) for key, reason in self.schema.problems(news)]
        return CheckResult({**news, **self.schema.recorded(news)}, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed, replaces = self.schema.differences(olds, news)
        return DiffResult(
            changes=bool(changed),
            replaces=replaces,
            delete_before_replace=self.delete_before_replace(replaces) if replaces else None,
        )

    def delete_before_replace(self, replaces: list[str]) -> bool:
        """A replacement under the same name must delete first: creating first would find (and
        adopt) the object that the delete then removes."""
        return not any(key in replaces for key in self.schema.identity)

    def refuse_before_offboarding(self, what: str, recorded: Mapping[str, Any], doing: str) -> None:
        """Refuses to delete a tenant-level object unless the last `up` recorded stage destroy
        with a sign-off (or a rehearsal, or an abandoned onboarding, which the offboarding gate
        checks live first): whatever drives the engine, a tenant's data and access go only in
        the runbook's order."""
        gate = _lifecycle(recorded.get(LIFECYCLE.key))
        if gate is None or gate["rehearsal"] or gate["abandoned"]:
            return
        if gate["stage"] == "destroy" and gate["signed_off"]:
            return
        step = (
            f"the next pull request moves lifecycle.stage to '{gate['next_stage']}'"
            if gate["stage"] != "destroy"
            else "the pull request at stage 'destroy' adds lifecycle.sign_off "
            "{by, date, ticket, confirmation}"
        )
        raise self.error(
            doing,
            f"refused: {what} belongs to a tenant at offboarding stage '{gate['stage']}', and "
            "tenant-level objects are deleted only at stage 'destroy' with a sign-off",
            f"{step} in tenants/<slug>.yaml, then `pulumi up`; the runbook's order is frozen, "
            "drained, archived, snapshotted, destroy (nothing was deleted)",
        )

    def load(self, props: Mapping[str, Any], doing: str) -> dict[str, Any]:
        try:
            return self.schema.load(props)
        except ValueError as error:
            raise self.error(doing, f"invalid properties: {error}") from error
