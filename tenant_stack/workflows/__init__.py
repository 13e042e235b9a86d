"""The fleet's work on Temporal: durable workflows over the same code as the fleet commands,
run by workers on any number of machines against one Temporal service and one shared state
backend.

- `pin`: what a run is pinned to (the program's commit, the specs' digest), checked by workers.
- `activities`: the per-stack work a worker runs (drift check, `up`), each touching one stack.
- `stack_operations`: the child workflows of one stack, whose id is the stack's name.
- `drift_workflow`: fleet drift, one child workflow per stack, one report.
- `rollout_workflow`: `pulumi up` wave by wave, stopping after a wave in which a stack fails.
- `apply_stage`: one tenant's offboarding stage applied, waiting for the drain between `up`s.
- `worker`: serves the workflows and activities from a task queue.
- `commands`: what the `fleet` and `worker` commands do, over a Temporal client.

Their reports and each stack's own work are `tenant_stack.fleet`'s (`drift`, `rollout`, `stage`):
a module here is named for the workflow it holds, so that neither is taken for the other.
"""
