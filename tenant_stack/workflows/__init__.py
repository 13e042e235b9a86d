"""The fleet's work on Temporal: durable workflows over the same code as the fleet commands,
run by workers on any number of machines against one Temporal service and one shared state
backend. `pin` fixes what every worker must run; `activities` touch the stacks; `fleet_drift`
orchestrates; `worker` serves them."""
