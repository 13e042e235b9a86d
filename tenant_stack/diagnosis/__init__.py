"""A tenant's health read from the live backends: `diagnose` (every known failure, with its
evidence, cause and fix) and `status` (a condition per layer and an overall Ready)."""
