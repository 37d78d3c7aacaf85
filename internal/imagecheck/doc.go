// Package imagecheck is `crowsnest test IMAGE` without its command: a dry
// run of one image's tag selection, with the registry side the daemon
// builds (internal/setup, from a config and registries.conf, with this
// image's credentials and TLS overridden when asked) and the policy
// package's selection, which lists the repository's tags and explains
// each candidate and the tag chosen (Run). It takes plain values
// (Options) and returns a Report; flags and printing stay in
// cmd/crowsnest/internal/testcmd.
package imagecheck
