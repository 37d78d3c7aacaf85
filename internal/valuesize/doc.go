// Package valuesize measures how large a value would print before anything
// prints it. Notification templates and trigger expressions, written by
// people crowsnest does not trust, can build a value from the same parts
// many times over (a list holding itself twice, forty times over): its
// printed size is exponential in the work that built it, while walking
// each shared part once tells how large it is in the time the work took.
package valuesize
