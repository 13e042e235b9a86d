"""Loading a tenant's spec from `tenants/<slug>.yaml`.

`load_spec` validates in two passes and reports everything it finds in one `SpecError`, each
problem as `<file>: <dotted.field.path>: <what is wrong and what would be right>`. The first pass
checks every field on its own (types, formats, ranges, SSH keys, values sacctmgr would misread);
when it passes, the second checks the rules across fields and against the platform, which need
valid fields to mean anything.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from pydantic import ValidationError

from tenant_stack.errors import Problem, SpecError
from tenant_stack.platform import Platform
from tenant_stack.spec.models import TenantSpec
from tenant_stack.spec.rules import check_spec
from tenant_stack.strict_models import problems_from
from tenant_stack.strict_yaml import read_yaml_mapping


def load_spec(tenants_dir: Path, stack: str, platform: Platform) -> TenantSpec:
    """Load `<tenants_dir>/<stack>.yaml`, the spec of the tenant whose stack this is. Raises
    `SpecError` listing every problem: field errors first; when the fields are valid, the rules
    across fields and against the platform."""
    path = tenants_dir / f"{stack}.yaml"
    if not path.is_file():
        existing = sorted(p.name for p in tenants_dir.glob("*.y*ml"))
        if not tenants_dir.is_dir():
            known = f"the directory {tenants_dir} does not exist"
        elif existing:
            known = f"specs that exist: {', '.join(existing)}"
            near = difflib.get_close_matches(stack, [Path(name).stem for name in existing], n=1)
            known = f"did you mean {near[0]!r}? {known}" if near else known
        else:
            known = f"no spec exists in {tenants_dir}"
        raise SpecError(
            path,
            [
                Problem(
                    "",
                    f"no spec for stack {stack!r}: looked for {path}; {known}. The stack name "
                    "is the tenant's slug; select the tenant's stack or add its spec",
                )
            ],
        )
    data = read_yaml_mapping(path, "a tenant spec (a mapping of fields)", SpecError)
    # A slug that is not the stack's counts as a field error: every name the rules derive from
    # it would be another tenant's, so the rules wait until it is fixed.
    problems = []
    slug = data.get("slug")
    if isinstance(slug, str) and slug != stack:
        problems.append(
            Problem(
                "slug",
                f"{slug!r} is not the stack name {stack!r}; the stack is named by the slug and "
                f"the file by the stack ({stack}.yaml), and a slug is never renamed",
            )
        )
    try:
        spec = TenantSpec.model_validate(data)
    except ValidationError as error:
        raise SpecError(path, problems + problems_from(error)) from None
    if problems:
        raise SpecError(path, problems)
    problems = check_spec(spec, platform)
    if problems:
        raise SpecError(path, problems)
    return spec
