// Package windowsreport is what `crowsnest windows` shows, without its
// command: the sync windows of a crowsnest config and of AppProjects (a
// folder, or a cluster read with list only), each with whether it is
// active and when it opens and closes next, and each Application's
// decision, made with the windows package and the controller's window
// reference as the daemon makes it (Build). It takes plain values
// (Options) and returns a Report; flags and printing stay in
// cmd/crowsnest/internal/windowscmd.
package windowsreport
