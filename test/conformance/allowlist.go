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
var windowDifferences = []Difference{
	{ID: "never-fires",
		Upstream:  "a schedule no date satisfies (0 0 30 2 *) is parsed; robfig/cron's Next finds nothing in five years and returns the zero time, so the window is always active",
		Crowsnest: "refuses the window with an error naming the schedule (it can never fire), and holds the project's write-backs until it is fixed"},
	{ID: "unknown-zone",
		Upstream:  "an unknown timeZone (or \"Local\") logs a warning and is read as UTC (Local: the zone of the Argo CD pod)",
		Crowsnest: "refuses the window with an error naming timeZone: a misspelt zone silently shifts the window by hours"},
	{ID: "schedule-zone-prefix",
		Upstream:  "a TZ= or CRON_TZ= prefix in the schedule is accepted by robfig/cron and applied on top of the timeZone offset",
		Crowsnest: "refuses it with an error naming the schedule: the zone belongs in timeZone"},
	{ID: "duration-out-of-range",
		Upstream:  "a zero or negative duration makes a window that is never active; durations have no upper bound",
		Crowsnest: "refuses durations that are not positive or longer than 366 days, naming the duration"},
	{ID: "unknown-kind",
		Upstream:  "a kind other than allow or deny is ignored by CanSync (the window neither allows nor denies)",
		Crowsnest: "refuses the window with an error naming kind"},
	{ID: "invalid-pattern",
		Upstream:  "an applications, namespaces or clusters pattern that does not compile as a glob never matches (logged)",
		Crowsnest: "refuses the window with an error naming the pattern"},
}

// notificationDifferences are the trigger, template and subscription
// cases crowsnest answers differently from notifications-engine with
// Argo CD's catalog, on purpose.
var notificationDifferences = []Difference{
	{
		ID:        "missing-field-empty",
		Upstream:  `a template that reads a missing field prints "<no value>" (text/template's default)`,
		Crowsnest: "prints nothing: a message shows a blank rather than Go's placeholder to people",
	},
	{
		ID:        "service-type-not-name",
		Upstream:  ".serviceType is the service's name (service.slack.team: \"team\"), so the catalog's `eq .serviceType \"slack\"` is false for a named Slack service",
		Crowsnest: ".serviceType is the service's type (\"slack\"), so a named Slack service gets the catalog's Slack formatting",
	},
	{
		ID:        "render-own-block",
		Upstream:  "every block of a template (slack, email, webhook.<name>...) is rendered for every service, so a block that fails for one service stops the message to all",
		Crowsnest: "a service renders the message and its own block only: a broken webhook block does not stop the Slack or email message",
	},
	{
		ID:        "webhook-needs-block",
		Upstream:  "a webhook service sends a template without a webhook.<service> block anyway: a GET of the service URL with the message as its body",
		Crowsnest: "skips the delivery and records why (notify.Webhook.Send): a webhook receives only the request a template spells out for it",
	},
}
