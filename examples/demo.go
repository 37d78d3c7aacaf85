// Package examples holds crowsnest's examples; `crowsnest demo` embeds the
// demo from here, so the binary runs it from anywhere.
package examples

import "embed"

// Demo is examples/demo: apps/ (Applications and an AppProject),
// config.yaml and repo/ (the Git repository's first commit), with
// {{REGISTRY}}, {{GIT}} and {{WEBHOOK}} for the demo to fill in.
//
//go:embed demo
var Demo embed.FS
