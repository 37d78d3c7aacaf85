// Package fieldpath builds and takes apart the field paths that config
// errors name ("notifications.triggers[2].when",
// "spec.applicationRefs[0].images[1].alias"). It is shared by package
// config and the readers below it (config/imageupdater), so every reader
// names fields the same way.
package fieldpath

import (
	"strconv"
	"strings"
)

// Join builds the path of field inside parent ("" is the top level).
func Join(parent, field string) string {
	if parent == "" {
		return field
	}
	return parent + "." + field
}

// Index builds the path of the i-th element of the list at parent.
func Index(parent string, i int) string { return parent + "[" + strconv.Itoa(i) + "]" }

// Parent is the path one level up ("" above the top level): a.b[2] for
// a.b[2].c, a.b for a.b[2].
func Parent(p string) string {
	if i := strings.LastIndexAny(p, ".["); i >= 0 {
		return p[:i]
	}
	return ""
}
