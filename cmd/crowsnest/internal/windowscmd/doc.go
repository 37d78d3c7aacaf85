// Package windowscmd is `crowsnest windows`: it lists the sync windows of
// a crowsnest config and of AppProjects (a folder, or a cluster read with
// list only), and each Application's decision, with the windows package
// and the controller's window reference the daemon uses. cmd/crowsnest
// adds the command to its root; Report is its -o json output.
package windowscmd
