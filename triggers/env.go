package triggers

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/repourl"
	"github.com/crowsnest-dev/crowsnest/internal/workbudget"
)

// Env is what a condition reads. App and Prev are Applications as
// unstructured maps (Prev is nil on first sight); Event is a crowsnest
// event (nil for Application updates); Context is the configured context.
// The helpers are namespaces of functions, as in argocd-notifications.
type Env struct {
	App     map[string]any    `expr:"app"`
	Prev    map[string]any    `expr:"prev"`
	Event   map[string]any    `expr:"event"`
	Context map[string]string `expr:"context"`
	Time    TimeFuncs         `expr:"time"`
	Strings StringFuncs       `expr:"strings"`
	Repo    RepoFuncs         `expr:"repo"`

	// budget is the running evaluation's (limits.go); Evaluate resets it
	// before each expression.
	budget workbudget.Budget
}

// TimeFuncs is `time` in conditions: Argo CD's time helpers
// (util/notification/expression/time), functions and constants, so
// conditions such as the catalog's on-deployed
// (`.Add(1 * time.Minute)`) read unchanged.
type TimeFuncs struct {
	Nanosecond, Microsecond, Millisecond, Second, Minute, Hour time.Duration

	Layout, ANSIC, UnixDate, RubyDate, RFC822, RFC822Z, RFC850, RFC1123, RFC1123Z,
	RFC3339, RFC3339Nano, Kitchen, Stamp, StampMilli, StampMicro, StampNano string

	// now is fixed per evaluation, so every condition sees the same
	// instant and tests can pin it; zero means the wall clock.
	now time.Time
}

// newTimeFuncs returns `time` evaluating at now.
func newTimeFuncs(now time.Time) TimeFuncs {
	return TimeFuncs{
		Nanosecond: time.Nanosecond, Microsecond: time.Microsecond, Millisecond: time.Millisecond,
		Second: time.Second, Minute: time.Minute, Hour: time.Hour,
		Layout: time.Layout, ANSIC: time.ANSIC, UnixDate: time.UnixDate, RubyDate: time.RubyDate,
		RFC822: time.RFC822, RFC822Z: time.RFC822Z, RFC850: time.RFC850, RFC1123: time.RFC1123, RFC1123Z: time.RFC1123Z,
		RFC3339: time.RFC3339, RFC3339Nano: time.RFC3339Nano, Kitchen: time.Kitchen,
		Stamp: time.Stamp, StampMilli: time.StampMilli, StampMicro: time.StampMicro, StampNano: time.StampNano,
		now: now,
	}
}

// Now returns the evaluation's instant.
func (t TimeFuncs) Now() time.Time {
	if t.now.IsZero() {
		return time.Now()
	}
	return t.now
}

// Parse reads an RFC 3339 timestamp (what Kubernetes writes). A missing or
// malformed value is an evaluation error of that condition, never a panic.
func (TimeFuncs) Parse(s any) (time.Time, error) {
	str, ok := s.(string)
	if !ok || str == "" {
		return time.Time{}, fmt.Errorf("time.Parse: want an RFC 3339 timestamp, got %s", describeValue(s))
	}
	ts, err := time.Parse(time.RFC3339, str)
	if err != nil {
		return time.Time{}, fmt.Errorf("time.Parse: %w", err)
	}
	return ts, nil
}

// StringFuncs is `strings` in conditions. Arguments are any so that a
// missing field (nil) reads as "" instead of failing the call.
type StringFuncs struct{}

// ToUpper is strings.ToUpper.
func (StringFuncs) ToUpper(s any) string { return strings.ToUpper(str(s)) }

// ToLower is strings.ToLower.
func (StringFuncs) ToLower(s any) string { return strings.ToLower(str(s)) }

// Contains is strings.Contains.
func (StringFuncs) Contains(s, sub any) bool { return strings.Contains(str(s), str(sub)) }

// HasPrefix is strings.HasPrefix.
func (StringFuncs) HasPrefix(s, p any) bool { return strings.HasPrefix(str(s), str(p)) }

// HasSuffix is strings.HasSuffix.
func (StringFuncs) HasSuffix(s, p any) bool { return strings.HasSuffix(str(s), str(p)) }

// Split is strings.Split.
func (StringFuncs) Split(s, sep any) []string { return strings.Split(str(s), str(sep)) }

// Join is strings.Join over any list, refusing a result over
// maxValueSize before it is built.
func (StringFuncs) Join(list []any, sep any) (string, error) {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = str(v)
	}
	return joinChecked(parts, str(sep))
}

// TrimSpace is strings.TrimSpace.
func (StringFuncs) TrimSpace(s any) string { return strings.TrimSpace(str(s)) }

// TrimPrefix is strings.TrimPrefix.
func (StringFuncs) TrimPrefix(s, p any) string { return strings.TrimPrefix(str(s), str(p)) }

// TrimSuffix is strings.TrimSuffix.
func (StringFuncs) TrimSuffix(s, p any) string { return strings.TrimSuffix(str(s), str(p)) }

// Replace is strings.Replace, refusing a result over maxValueSize before
// it is built.
func (StringFuncs) Replace(s, old, repl any, n int) (string, error) {
	return replaceChecked(str(s), str(old), str(repl), n)
}

// ReplaceAll is strings.ReplaceAll, refusing a result over maxValueSize
// before it is built.
func (StringFuncs) ReplaceAll(s, old, repl any) (string, error) {
	return replaceChecked(str(s), str(old), str(repl), -1)
}

// EqualFold is strings.EqualFold.
func (StringFuncs) EqualFold(a, b any) bool { return strings.EqualFold(str(a), str(b)) }

// Index is strings.Index.
func (StringFuncs) Index(s, sub any) int { return strings.Index(str(s), str(sub)) }

// Count is strings.Count.
func (StringFuncs) Count(s, sub any) int { return strings.Count(str(s), str(sub)) }

// Fields is strings.Fields.
func (StringFuncs) Fields(s any) []string { return strings.Fields(str(s)) }

// RepoFuncs is `repo` in conditions. GetCommitMetadata and GetAppDetails
// are answered by what NewRepoFuncs was given; the zero value fails
// them (an evaluation error of that condition).
type RepoFuncs struct {
	commit  func(sha any) (any, error)
	details func() (any, error)
}

// NewRepoFuncs returns `repo` whose GetCommitMetadata and GetAppDetails
// call commit and details (Argo CD's repo helpers about the Application
// being evaluated).
func NewRepoFuncs(commit func(sha any) (any, error), details func() (any, error)) RepoFuncs {
	return RepoFuncs{commit: commit, details: details}
}

// GetCommitMetadata is Argo CD's repo.GetCommitMetadata: the commit's
// Message, Author, Date and Tags.
func (r RepoFuncs) GetCommitMetadata(sha any) (any, error) {
	if r.commit == nil {
		return nil, errors.New("repo.GetCommitMetadata: no access to the Application's repository here")
	}
	return r.commit(sha)
}

// GetAppDetails is Argo CD's repo.GetAppDetails: the source's Type and
// its Helm, Kustomize or Directory details.
func (r RepoFuncs) GetAppDetails() (any, error) {
	if r.details == nil {
		return nil, errors.New("repo.GetAppDetails: no access to the Application's repository here")
	}
	return r.details()
}

// QueryEscape is url.QueryEscape, as Argo CD's repo.QueryEscape.
func (RepoFuncs) QueryEscape(s any) string { return url.QueryEscape(str(s)) }

// RepoURLToHTTPS turns a Git URL (git@host:org/repo.git, ssh://...,
// http://...) into its https:// web address without ".git"; other values
// are returned unchanged.
func (RepoFuncs) RepoURLToHTTPS(u any) string { return repourl.ToHTTPS(str(u)) }

// FullNameByRepoURL returns "org/repo" of a Git URL, or "".
func (RepoFuncs) FullNameByRepoURL(u any) string { return repourl.FullName(str(u)) }

// str reads a value as a string; nil (a missing field) is "".
func str(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	case fmt.Stringer:
		return s.String()
	}
	return fmt.Sprint(v)
}

func describeValue(v any) string {
	if v == nil {
		return "nil (a missing field?)"
	}
	return fmt.Sprintf("%T", v)
}
