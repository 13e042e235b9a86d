"""The sandbox cluster's Service addresses, which the API server, its certificate, the kubelet
and the cluster's DNS must agree on: RKE2's defaults."""

from __future__ import annotations

SERVICE_CIDR = "10.43.0.0/16"
# The `kubernetes` Service's address: the first of the range, as the API server allocates it.
KUBERNETES_SERVICE_IP = "10.43.0.1"
# The cluster DNS Service's, which every pod's resolv.conf names.
DNS_SERVICE_IP = "10.43.0.10"
