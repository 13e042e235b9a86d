"""The local sandbox: a real Kubernetes API and Slurm, emulated Authentik and Weka, on 127.0.0.1."""
