"""`import`: a tenant onboarded by hand, read from the live backends and written as a spec."""
