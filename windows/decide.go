package windows

import "time"

// Set is a list of compiled windows, e.g. crowsnest's config windows plus
// every AppProject's.
type Set []*Window

// Reason says why a Decision came out as it did; tests and events use it.
type Reason string

// The rows of Argo CD's decision table, in the order they are checked.
const (
	// ReasonNoWindows: no window matches the Application, so it is allowed.
	ReasonNoWindows Reason = "NoWindows"
	// ReasonDenyManualSync: a manual sync passes because every active
	// deny window has manualSync.
	ReasonDenyManualSync Reason = "DenyWindowManualSync"
	// ReasonDenyActive: an active deny window wins over everything else.
	ReasonDenyActive Reason = "DenyWindowActive"
	// ReasonAllowActive: an allow window is active (and no deny is).
	ReasonAllowActive Reason = "AllowWindowActive"
	// ReasonAllowManualSync: outside every allow window, a manual sync
	// passes because every one of those allow windows has manualSync.
	ReasonAllowManualSync Reason = "AllowWindowManualSync"
	// ReasonOutsideAllow: allow windows match but none is active.
	ReasonOutsideAllow Reason = "OutsideAllowWindows"
	// ReasonNoneActive: only deny windows match and none is active.
	ReasonNoneActive Reason = "NoActiveWindow"
)

// Decision is whether a sync (or a write-back) may happen now, and why.
type Decision struct {
	Allowed bool
	Reason  Reason
	// Matching are the windows that apply to the Application; Active the
	// ones among them open at the time of the decision.
	Matching Set
	Active   Set
}

// Matching returns the windows that apply to app, in order.
func (s Set) Matching(app AppRef) Set {
	var out Set
	for _, w := range s {
		if w.Matches(app) {
			out = append(out, w)
		}
	}
	return out
}

// HoldingUpdates returns the windows that gate crowsnest's write-backs
// (holdImageUpdates, default true); decide write-backs on this subset.
func (s Set) HoldingUpdates() Set {
	var out Set
	for _, w := range s {
		if w.HoldsImageUpdates() {
			out = append(out, w)
		}
	}
	return out
}

// Decide applies Argo CD's decision table to the windows matching app at
// now: an active deny window denies, unless the sync is manual and every
// active deny window has manualSync; otherwise an active allow window
// allows; otherwise, if allow windows match, it is denied unless the sync is
// manual and all of them have manualSync (as in current Argo CD; older
// releases let any one suffice); with no allow window matching it is allowed.
func (s Set) Decide(app AppRef, now time.Time, manual bool) Decision {
	d := Decision{Matching: s.Matching(app)}
	if len(d.Matching) == 0 {
		d.Allowed, d.Reason = true, ReasonNoWindows
		return d
	}
	var denyActive, allowActive, allowInactive bool
	// Every active deny window, and every inactive allow window, has manualSync.
	denyManual, allowManual := true, true
	for _, w := range d.Matching {
		active := w.Active(now)
		if active {
			d.Active = append(d.Active, w)
		}
		switch {
		case w.Kind() == Deny && active:
			denyActive = true
			denyManual = denyManual && w.ManualSync()
		case w.Kind() == Allow && active:
			allowActive = true
		case w.Kind() == Allow:
			allowInactive = true
			allowManual = allowManual && w.ManualSync()
		}
	}
	switch {
	case denyActive && manual && denyManual:
		d.Allowed, d.Reason = true, ReasonDenyManualSync
	case denyActive:
		d.Reason = ReasonDenyActive
	case allowActive:
		d.Allowed, d.Reason = true, ReasonAllowActive
	case allowInactive && manual && allowManual:
		d.Allowed, d.Reason = true, ReasonAllowManualSync
	case allowInactive:
		d.Reason = ReasonOutsideAllow
	default:
		d.Allowed, d.Reason = true, ReasonNoneActive
	}
	return d
}

// NextBoundary returns the earliest instant after now at which any window of
// the set opens or closes, so the engine can set a single timer and
// re-decide then. False if no window changes within spec.Horizon.
func (s Set) NextBoundary(now time.Time) (time.Time, bool) {
	var next time.Time
	found := false
	for _, w := range s {
		if b, ok := w.nextBoundary(now); ok && (!found || b.Before(next)) {
			next, found = b, true
		}
	}
	return next, found
}
