# Pinned versions of every binary the bootstrap builds. requirements.txt pins the matching Python
# SDKs; tests/unit/test_toolchain_pins.py keeps the two in step.
PULUMI_VERSION=3.259.0

# The Go module proxy serves the pulumi-kubernetes provider module at this commit only; it was
# built on 2026-01-15, the day before the 4.25.0 wheels, so it is stamped and pinned as 4.25.0.
KUBERNETES_PROVIDER_VERSION=4.25.0
KUBERNETES_PROVIDER_MODULE=github.com/pulumi/pulumi-kubernetes/provider/v4
KUBERNETES_PROVIDER_MODULE_VERSION=v4.0.0-20260115033456-f47bc2d6f199

# RKE2 v1.30 in the runbooks; the etcd minor that Kubernetes 1.30 is tested with.
KUBERNETES_VERSION=1.30.14
ETCD_VERSION=3.5.21

# CoreDNS, the sandbox cluster's DNS: the version RKE2 v1.30 runs. Built from its own module,
# whose go.sum pins its dependencies.
COREDNS_VERSION=1.11.3
COREDNS_MODULE=github.com/coredns/coredns

# kube-router, the sandbox node's network-policy agent (its firewall controller alone, as k3s
# embeds it). The Go module proxy serves this version only; its two published advisories are in the
# router (GoBGP) and service-proxy controllers, which the sandbox leaves off (docs/sandbox.md).
KUBE_ROUTER_VERSION=2.1.0
KUBE_ROUTER_MODULE=github.com/cloudnativelabs/kube-router/v2

# Versity's S3 gateway (Apache-2.0), the sandbox's retention object store; built from its own
# module, whose go.sum pins its dependencies.
VERSITYGW_VERSION=1.8.0
VERSITYGW_MODULE=github.com/versity/versitygw

# The Temporal CLI, whose `server start-dev` is the sandbox's workflow engine (Temporal server
# 1.29.1 on SQLite). v1.9.x needs its nested module cliext, which the Go proxy refuses here.
TEMPORAL_CLI_VERSION=1.5.1
TEMPORAL_CLI_MODULE=github.com/temporalio/cli

# The oldest Go that compiles every wrapper module (toolchain/go/pulumi/go.mod needs 1.25.11).
GO_MIN_VERSION=1.25.11
