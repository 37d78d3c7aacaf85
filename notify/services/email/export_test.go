package email

// SetMechanism makes e authenticate with mechanism (PLAIN or LOGIN; ""
// chooses), which the settings do not name: tests cover both.
func SetMechanism(e *Sender, mechanism string) { e.mechanism = mechanism }
