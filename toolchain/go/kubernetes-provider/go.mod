module gputenants.local/toolchain/kubernetes-provider

go 1.24.7

require (
	github.com/pulumi/pulumi-kubernetes/provider/v4 v4.0.0-20260115033456-f47bc2d6f199
	github.com/pulumi/pulumi-kubernetes/sdk/v4 v4.25.0
)
