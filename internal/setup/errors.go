package setup

// FlattenErrors splits errors.Join trees into their leaves.
func FlattenErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, FlattenErrors(e)...)
		}
		return out
	}
	return []error{err}
}
