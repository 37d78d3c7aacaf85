package testenv

import (
	"os"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// prunedFieldWarning is how the apiserver words the warning for a field
// that Argo CD's schema does not know: with the default field validation
// (Warn) it drops the field, answers success and says so only in this
// warning header.
const prunedFieldWarning = "unknown field"

// warningLog records the apiserver's warnings to every client built from
// an Env's Config, so a write whose fields the schema silently dropped
// fails the tests instead of passing unnoticed.
type warningLog struct {
	mu     sync.Mutex
	pruned []string
}

var _ rest.WarningHandler = (*warningLog)(nil)

// HandleWarningHeader keeps client-go's default behaviour (the warning on
// stderr) and records pruned fields.
func (w *warningLog) HandleWarningHeader(code int, agent, text string) {
	rest.WarningLogger{}.HandleWarningHeader(code, agent, text)
	if code != 299 || !strings.Contains(text, prunedFieldWarning) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruned = append(w.pruned, text)
}

// PrunedFields returns the apiserver's warnings about fields it dropped
// from a write made through Config because Argo CD's schema does not have
// them. New and RunMain fail the tests when there are any.
func (e *Env) PrunedFields() []string {
	e.warnings.mu.Lock()
	defer e.warnings.mu.Unlock()
	return append([]string(nil), e.warnings.pruned...)
}

// reportPruned prints the pruned-field warnings and reports whether there
// were any.
func (e *Env) reportPruned() bool {
	pruned := e.PrunedFields()
	for _, w := range pruned {
		_, _ = os.Stderr.WriteString("testenv: the apiserver dropped a field Argo CD's schema does not have: " + w + "\n")
	}
	return len(pruned) > 0
}
