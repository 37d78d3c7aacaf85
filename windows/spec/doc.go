// Package spec owns the parts of a sync window that both config and windows
// need: parsing and validating cron schedules, time zones and name globs, and
// the time arithmetic that says when a window with a given schedule, zone and
// duration is open. It depends only on the standard library and robfig/cron,
// so config can validate windows at load without importing windows.
//
// # Semantics
//
// A schedule names wall-clock start times in its zone (5-field cron as read by
// robfig/cron/v3, plus @yearly, @monthly, @weekly, @daily, @hourly; 7 is
// accepted as Sunday). A window is active at t when some start s has
// s <= t < s+duration. Durations are elapsed time, not wall-clock time: a 3h
// window starting at 01:00 on the night clocks go forward closes at 05:00.
//
// Daylight saving time: a start whose wall time occurs twice (clocks turned
// back) starts the window at both instants; a start whose wall time is
// skipped (clocks turned forward) starts it at the instant of the jump, so a
// window is never lost for a day. robfig/cron and Argo CD skip such a start
// instead; crowsnest's rule keeps a nightly deny window in force on the night
// of the change.
//
// Evaluation searches at most Horizon ahead: a schedule that can fire at all
// fires within it (the longest gap is Feb 29 across 2100), and one that never
// can (Feb 30) is rejected by Parse.
package spec
