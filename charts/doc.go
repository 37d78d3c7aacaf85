// Package charts holds crowsnest's Helm chart (charts/crowsnest). It has no
// Go code of its own: its tests run helm (installed by hack/tools.sh) to
// lint and render the chart, decode every rendered object, validate the
// rendered crowsnest config, and check that the chart renders the objects
// of the kustomize install in examples/install, RBAC first, so the two
// install paths cannot drift apart.
package charts
