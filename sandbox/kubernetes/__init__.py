"""A real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager) as processes."""
