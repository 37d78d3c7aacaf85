// Package workbudget is the allowance of work one evaluation of an
// expression a tenant may write can spend: a template render
// (notify/render) or a trigger condition (triggers). Each counts steps
// (calls, iterations) and bytes (values built) and stops the evaluation
// with its own error once either runs out.
package workbudget

// Limits are one evaluation's allowance, and the errors that say which
// part of it ran out.
type Limits struct {
	Steps, Bytes       int
	StepsErr, BytesErr error
}

// Budget is what is left of Limits during one evaluation. Reset it before
// each one.
type Budget struct {
	limits       *Limits
	steps, bytes int
}

// Reset gives b the whole of l, for the next evaluation.
func (b *Budget) Reset(l *Limits) { b.limits, b.steps, b.bytes = l, l.Steps, l.Bytes }

// Charge takes steps and bytes from b, failing once either runs out.
func (b *Budget) Charge(steps, bytes int) error {
	b.steps -= steps
	b.bytes -= bytes
	switch {
	case b.steps < 0:
		return b.limits.StepsErr
	case b.bytes < 0:
		return b.limits.BytesErr
	}
	return nil
}

// Left is what is left of the steps and bytes.
func (b *Budget) Left() (steps, bytes int) { return b.steps, b.bytes }
