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
// accepted as Sunday). Evaluation is Argo CD's (v3.6.1 SyncWindows, checked
// by test/conformance): a window is active at t when the wall clock of its
// zone at t lies strictly between a start s and s+duration, both read on the
// wall clock. So a window is closed at its exact start second and open just
// after, and the duration is wall-clock time: a 3h window starting at 01:00
// on the night clocks go forward closes at 04:00 local time, two hours later.
//
// Daylight saving time follows from reading the wall clock: when clocks jump
// forward over a start, the window opens at the jump if the jump lands
// inside (s, s+duration), and is lost for that day otherwise; when clocks
// turn back, a wall time inside a window occurs twice and the window is
// active both times.
//
// Evaluation searches at most Horizon ahead: a schedule that can fire at all
// fires within it (the longest gap is Feb 29 across 2100), and one that never
// can (Feb 30) is rejected by Parse.
package spec
