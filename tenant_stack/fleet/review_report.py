"""The review as one Markdown comment for the pull request: only the tenants with changes, a
table of counts, each tenant's actions in the runbooks' words with every replace and delete and
its reason, data-bearing ones called out first, long details folded, and the whole under the
forges' comment limit (GitHub's is 65,536 characters)."""

from __future__ import annotations

from tenant_stack.fleet.actions import Action
from tenant_stack.fleet.review import Review, TenantPreview

__all__ = ["LIMIT", "markdown"]

LIMIT = 64_000
MARKER = "<!-- gpu-tenants review -->"  # how a CI job finds its own comment to edit
_SHOWN = 12  # actions listed before the rest is folded


def markdown(review: Review) -> str:
    """The comment, as detailed as fits: every action (the long lists folded), else the first
    few per tenant, else the table and the call-outs alone; what is left out is in the JSON
    report, and the comment says so."""
    for detail in ("all", "first", "table"):
        comment = _render(review, detail)
        if len(comment) <= LIMIT:
            return comment
    cut = comment[: LIMIT - 200].rsplit("\n", 1)[0]
    return cut + "\n\n_Cut to fit one comment: see the review's JSON report._\n"


def _render(review: Review, detail: str) -> str:
    changed = [p for p in review.previews if p.status == "changes"]
    failed = [p for p in review.previews if p.status == "failed"]
    verdict = "passed" if review.passed else "**failed**"
    lines = [
        MARKER,
        f"## Tenant review against `{review.base}`: {verdict}",
        "",
        f"{len(review.previews)} tenants previewed, {len(changed)} with changes"
        + (f", {len(failed)} failed" if failed else "")
        + (
            f" (every tenant: the change edits {', '.join(review.touched.program)})"
            if review.touched.program
            else ""
        )
        + ".",
    ]
    if review.problems:
        lines += ["", "### What fails the review", ""]
        lines += [f"- {_one_line(problem)}" for problem in review.problems]
    loud = [(p.slug, a) for p in changed for a in p.actions if a.loud]
    if loud:
        lines += ["", "> [!CAUTION]", "> **Data-bearing objects deleted or replaced:**"]
        lines += [f"> - **{slug}**: {a.words} ({'; '.join(a.reasons)})" for slug, a in loud]
    if changed:
        lines += [
            "",
            "| Tenant | Stack | Create | Import | Update | Replace | Delete |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for preview in changed:
            c = preview.counts()
            row = (preview.slug, preview.stack, *c.values())
            lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    if detail != "table":
        for preview in changed:
            lines += ["", *_tenant(preview, folded=detail == "all")]
    for preview in failed:
        lines += ["", f"### {preview.slug}: preview failed", "", "```", preview.error, "```"]
    if review.warnings:
        lines += ["", "<details><summary>Warnings about specs this change does not touch</summary>"]
        lines += ["", *(f"- {_one_line(w)}" for w in review.warnings), "", "</details>"]
    if detail != "all":
        lines += ["", "_Details left out to fit one comment: see the review's JSON report._"]
    return "\n".join(lines) + "\n"


def _tenant(preview: TenantPreview, folded: bool) -> list[str]:
    title = f"### {preview.slug}" + (" (new tenant)" if preview.stack == "new" else "")
    ordered = sorted(preview.actions, key=lambda a: (not a.loud, a.op not in ("replace", "delete")))
    lines = [title, ""]
    for action in ordered[:_SHOWN]:
        lines.append(_action(action))
    rest = ordered[_SHOWN:]
    if rest and folded:
        lines += ["", f"<details><summary>{len(rest)} more</summary>", ""]
        lines += [_action(action) for action in rest]
        lines += ["", "</details>"]
    elif rest:
        lines.append(f"- …and {len(rest)} more")
    if preview.violations:
        lines += ["", "Policy findings (advisory):", ""]
        lines += [f"- {violation}" for violation in preview.violations]
    return lines


def _action(action: Action) -> str:
    words = f"**{action.words}**" if action.op in ("replace", "delete") else action.words
    flag = " ⚠️ data" if action.loud else ""
    reasons = f": {'; '.join(action.reasons)}" if action.reasons else ""
    return f"- {words}{flag}{reasons}"


def _one_line(text: str) -> str:
    return " ".join(text.split()) if "\n" not in text else text.replace("\n", "<br>")
