// Package render turns notification templates into messages: Compile
// parses every text/template of a notify.Template once at config load
// (a broken one fails with the template and field name), rewrites field
// chains so a missing field renders as empty, and Render executes them
// into a notify.Notification within one budget of steps and bytes. The
// helper set is sprig's hermetic functions as Argo CD Notifications has
// them plus crowsnest's own where sprig's cannot keep a limit, would
// change shared data or differ from Argo CD (funcs*.go); the `.repo`
// helpers (RepoHelpersFor, BuildAppDetail) answer Argo CD's
// repo.GetCommitMetadata and repo.GetAppDetails. The controller's
// notification pipeline renders here and hands the result to package
// notify's outbox; render imports notify only for the message types.
package render
