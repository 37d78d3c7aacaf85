// Package windows owns sync windows: compiling them from crowsnest's config
// and from AppProject spec.syncWindows, matching them to Applications, and
// the decisions made from them. Everything here is a pure function of the
// windows, the Application and `now`: Window.Active, NextOpen and NextClose,
// Set.Decide with Argo CD's decision table, and Set.NextBoundary so the
// engine can sleep on one timer until something changes. The time arithmetic
// (cron starts in a zone, DST rules, durations) lives in windows/spec; see
// its documentation for the exact semantics.
package windows
