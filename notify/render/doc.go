// Package render turns notification templates into messages: Compile
// parses every text/template of a notify.Template once at config load
// (a broken one fails with the template and field name), rewrites field
// chains so a missing field renders as empty, and Render executes them
// into a notify.Notification within one budget of steps and bytes
// (budget.go). The helpers (FuncMap) are sprig's hermetic functions, as
// Argo CD Notifications has them, through one adapter with size and
// write checks (funcs.go: fromSprig); beside them stay crowsnest's own,
// each with the reason sprig's will not do and the test that shows it
// (funcs_*.go). The `.repo` helpers (RepoHelpersFor, BuildAppDetail)
// answer Argo CD's repo.GetCommitMetadata and repo.GetAppDetails. The
// notification pipeline (notify/pipeline) renders here and hands the
// result to package notify's outbox; render imports notify only for the
// message types.
package render
