"""The contract's partition types, in a module of their own: the commands' parsers offer them as
choices and must not load the spec's models (pydantic) to do so."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["NODELESS_PARTITION_TYPES", "PARTITION_TYPES", "NodelessPartitionType", "PartitionType"]

# The types whose partition names no nodes: the tenant runs on the shared pool's.
NodelessPartitionType = Literal["on-demand", "spot"]
PartitionType = Literal["reserved", NodelessPartitionType]
NODELESS_PARTITION_TYPES: tuple[NodelessPartitionType, ...] = get_args(NodelessPartitionType)
PARTITION_TYPES: tuple[PartitionType, ...] = get_args(PartitionType)
