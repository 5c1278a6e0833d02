//go:build tools

// Package envtest only exists so `go mod tidy` records the dependencies of
// the control-plane commands tools/envtest.sh builds.
package envtest

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
