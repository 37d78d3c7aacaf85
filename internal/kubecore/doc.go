// Package kubecore is crowsnest's client of the few built-in Kubernetes
// resources it reads and writes besides Applications: ConfigMaps and
// Secrets (state, journals, credentials, notification config), Events,
// and the coordination.k8s.io Lease of leader election, plus the one
// discovery question the daemon asks (does the apiserver serve a
// group/version's resource?).
//
// It exists to keep client-go's typed clientset out of the binary: that
// clientset registers every k8s.io/api group in its scheme at start, which
// costs the daemon tens of megabytes of resident memory it never uses.
// kubecore's interfaces have exactly the method signatures of client-go's
// typed ones, so a clientset's ConfigMaps(ns) and the like satisfy them
// (tests build fixtures with a clientset), and its implementation is a
// small generic client (resource.go) over a scheme of core/v1 and
// coordination/v1 only. Packages below cmd take a kubecore.Interface (or a
// narrower getter) and never import k8s.io/client-go/kubernetes.
package kubecore
