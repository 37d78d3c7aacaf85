// Package bodycap bounds how much of a network answer is read: a body
// past its limit fails the read with the caller's error, so one endless
// answer from a server an Application names costs at most the limit.
// Registry tag lists and Git ref advertisements use it. It imports the
// standard library only.
package bodycap
