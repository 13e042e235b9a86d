"""The policy pack (PulumiPolicy.yaml); the engine runs the folder, __main__.py is the pack."""
