"""A dynamic resource that owns one file: enough to see create, read, update and delete happen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import (
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)


class MarkerFileProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        path = Path(props["path"])
        if path.exists():
            raise FileExistsError(f"refusing to overwrite {path}: it exists and is not ours")
        path.write_text(props["content"])
        return CreateResult(id_=str(path), outs={"path": str(path), "content": props["content"]})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        path = Path(id_)
        if not path.exists():
            return ReadResult(id_="", outs={})
        return ReadResult(id_=id_, outs={"path": id_, "content": path.read_text()})

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [k for k in ("path", "content") if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed), replaces=[k for k in changed if k == "path"])

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        Path(id_).write_text(news["content"])
        return UpdateResult(outs={"path": id_, "content": news["content"]})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        Path(id_).unlink(missing_ok=True)


class MarkerFile(Resource, module="smoke", name="MarkerFile"):
    path: pulumi.Output[str]
    content: pulumi.Output[str]

    def __init__(
        self, name: str, path: str, content: str, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(MarkerFileProvider(), name, {"path": path, "content": content}, opts)
