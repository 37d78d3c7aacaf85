// Package testwait is the one way a test waits for something that must
// happen: it polls a condition, at first every millisecond and then less
// often, until the condition holds or a deadline passes, and then fails
// the test saying what it waited for. It is no way to show that something
// did not happen: a wait that holds proves nothing about later, so such a
// test waits for a later event that comes in order after the one that must
// not happen, or counts. Tests only; nothing else imports it.
package testwait
