// Package windowscmd is `crowsnest windows`: its flags, and the printing
// of what internal/windowsreport finds (the sync windows of a crowsnest
// config and of AppProjects, a folder or a cluster read with list only,
// and each Application's decision). cmd/crowsnest adds the command to its
// root; Report is its -o json output.
package windowscmd
