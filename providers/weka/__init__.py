"""Weka: the organization, filesystems, directory quotas and users of a tenant's storage
(onboarding runbook steps 4e and 6), and what the CSI driver reads.

`client` talks to the REST API v2 and knows nothing of Pulumi; `mount` makes directories
through a host that mounts the filesystems (the REST API cannot); `provider` turns Pulumi's calls
into client calls; `resources` declares the dynamic resources; `settings` reads the cluster's
address and admin login from the environment at call time; `csi` builds the csi.weka.io Secret
and StorageClass parameters.
"""
