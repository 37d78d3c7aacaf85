package creds

// Waiting returns how many Authenticator calls joined a read and wait for
// it.
func (r *Resolver) Waiting() int32 { return r.waiting.Load() }
