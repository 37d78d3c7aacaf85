package conformance

// Difference is a deliberate difference between crowsnest and the
// upstream code it is compared with: the suite skips the cases it
// describes and counts them, and docs/conformance.md lists the same
// entries (TestAllowListIsDocumented keeps the two in step).
type Difference struct {
	// ID names the difference in test output and in the docs.
	ID string
	// Upstream is what the upstream code does; Crowsnest what crowsnest
	// does instead, and why.
	Upstream, Crowsnest string
}

// windowDifferences are the sync-window cases crowsnest answers
// differently from Argo CD's SyncWindows, on purpose.
var windowDifferences = []Difference{}

// notificationDifferences are the trigger, template and subscription
// cases crowsnest answers differently from notifications-engine with
// Argo CD's catalog, on purpose.
var notificationDifferences = []Difference{}
