"""Offboarding's own resources: the gate that stops `pulumi destroy` before the runbook's order
allows it."""
