package imageupdate

import "encoding/json"

// Write-back methods as a plan names them.
const (
	PlanMethodGit        = "git"
	PlanMethodKubernetes = "kubernetes"
)

// WritePlan is what the write-back of one Application's changes would
// write, computed by the writers' own code without writing: what
// `crowsnest run --dry-run` prints, so that a user can check it before
// trusting crowsnest with the write.
type WritePlan struct {
	// App is the Application's key, namespace/name.
	App string `json:"app"`
	// Method is PlanMethodGit or PlanMethodKubernetes (argocd-image-updater's
	// write-back-method argocd).
	Method  string          `json:"method"`
	Changes []PlannedChange `json:"changes"`
	// HeldBy, when set, is the sync window holding the write: nothing
	// would be written now, and nothing else is planned.
	HeldBy     string     `json:"heldBy,omitempty"`
	Git        []GitPlan  `json:"git,omitempty"`
	Kubernetes *PatchPlan `json:"kubernetes,omitempty"`
	// Error says why the write could not be planned (or would fail).
	Error string `json:"error,omitempty"`
}

// PlannedChange is one image's change.
type PlannedChange struct {
	Image string `json:"image"`
	// From is empty when the image is not deployed yet.
	From string `json:"from"`
	To   string `json:"to"`
}

// GitPlan is the commit a Git write-back would push to one repository
// and branch. Written with other Applications' changes to the same
// branch, the real commit holds theirs too.
type GitPlan struct {
	// Repository is the repository URL without credentials.
	Repository string `json:"repository"`
	// Branch is pushed to (a write-branch template rendered); BaseBranch
	// is the branch the commit goes on top of (the same unless the
	// write-back branch is "base:target").
	Branch     string `json:"branch"`
	BaseBranch string `json:"baseBranch"`
	// NewBranch says the push would create Branch.
	NewBranch bool `json:"newBranch,omitempty"`
	// BaseCommit is the commit the diffs are against.
	BaseCommit    string        `json:"baseCommit"`
	CommitMessage string        `json:"commitMessage,omitempty"`
	Files         []PlannedFile `json:"files"`
	// PullRequest is the pull request the write would open or update
	// (a pull-request write-back): Branch is then its head.
	PullRequest *PlannedPullRequest `json:"pullRequest,omitempty"`
	// Error says why this repository's write could not be planned.
	Error string `json:"error,omitempty"`
}

// PlannedFile is one file a Git write-back would change.
type PlannedFile struct {
	Path string `json:"path"`
	// New is true when the file would be created.
	New bool `json:"new,omitempty"`
	// Diff is a unified diff in Git's format (git apply takes it).
	Diff string `json:"diff"`
}

// PatchPlan is the patch a Kubernetes-mode write-back would send.
type PatchPlan struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	// ResourceVersion is the version the patch is pinned to.
	ResourceVersion string `json:"resourceVersion"`
	// PatchType is the patch's content type.
	PatchType string `json:"patchType"`
	// Patch is the patch exactly as it would be sent; null when the
	// Application already carries every value.
	Patch json.RawMessage `json:"patch"`
}

// PlannedPullRequest is the pull request a Git write-back would open
// ("open") or bring up to date ("update": the open one's number and URL).
type PlannedPullRequest struct {
	Action string `json:"action"`
	Number int    `json:"number,omitempty"`
	URL    string `json:"url,omitempty"`
	// Repository is the forge's repository: its API and path.
	Repository string   `json:"repository"`
	Head       string   `json:"head"`
	Base       string   `json:"base"`
	Title      string   `json:"title"`
	Body       string   `json:"body,omitempty"`
	Labels     []string `json:"labels,omitempty"`
	Reviewers  []string `json:"reviewers,omitempty"`
	Assignees  []string `json:"assignees,omitempty"`
	Draft      bool     `json:"draft,omitempty"`
	AutoMerge  bool     `json:"autoMerge,omitempty"`
	// Requests are what opening or updating it would send the forge, in
	// order, credentials "<redacted>"; Note says where the dry run's
	// answers ended the forge's steps, or why none is sent.
	Requests []PlannedRequest `json:"requests,omitempty"`
	Note     string           `json:"note,omitempty"`
}

// PlannedRequest is one HTTP request a write would send.
type PlannedRequest struct {
	Method string              `json:"method"`
	URL    string              `json:"url"`
	Header map[string][]string `json:"header,omitempty"`
	Body   string              `json:"body,omitempty"`
}
