package main

// migrateReport is what `crowsnest migrate` finds: per Application what
// crowsnest will manage and how, what it reads differently from
// argocd-image-updater and Argo CD Notifications, what it cannot do, and
// the install that carries the installation over. Its JSON form is
// `-o json`; the text form is printReport's.
type migrateReport struct {
	Source          string `json:"source"`
	ArgoCDNamespace string `json:"argocdNamespace"`
	// Read lists the objects read (Secrets by key name only).
	Read         []string          `json:"read"`
	Applications []migrateApp      `json:"applications"`
	Updaters     []migrateUpdater  `json:"imageUpdaters,omitempty"`
	Differs      []migrateFinding  `json:"readDifferently"`
	Cannot       []migrateFinding  `json:"cannotDo"`
	Summary      migrateSummary    `json:"summary"`
	Install      migrateInstallRep `json:"install"`
}

// migrateFinding is one thing crowsnest reads differently or cannot do.
type migrateFinding struct {
	// Where names the object and key or annotation.
	Where string `json:"where"`
	What  string `json:"what"`
	Why   string `json:"why,omitempty"`
	// Breaks says something that works today would stop working.
	Breaks bool `json:"breaks"`
}

// migrateApp is one Application.
type migrateApp struct {
	App     string `json:"app"`
	Project string `json:"project"`
	// Images is nil when crowsnest updates no image of the Application.
	Images        *migrateImages        `json:"images,omitempty"`
	Notifications []migrateSubscription `json:"notifications,omitempty"`
	Windows       []migrateWindow       `json:"syncWindows,omitempty"`
	Differs       []migrateFinding      `json:"readDifferently,omitempty"`
	Cannot        []migrateFinding      `json:"cannotDo,omitempty"`
}

// migrateImages is how crowsnest updates one Application's images.
type migrateImages struct {
	// From is "annotations", "image policy <name>" or the ImageUpdater
	// and applicationRef that select the Application.
	From string `json:"from"`
	// WriteBack is "argocd", "git", or "" when nothing can be written.
	WriteBack string         `json:"writeBack"`
	Target    string         `json:"target,omitempty"`
	Images    []migrateImage `json:"images"`
}

// migrateImage is one image crowsnest keeps up to date.
type migrateImage struct {
	Alias      string   `json:"alias"`
	Image      string   `json:"image"`
	Strategy   string   `json:"strategy"`
	Constraint string   `json:"constraint,omitempty"`
	AllowTags  string   `json:"allowTags,omitempty"`
	IgnoreTags []string `json:"ignoreTags,omitempty"`
	Platforms  []string `json:"platforms,omitempty"`
	PullSecret string   `json:"pullSecret,omitempty"`
	// Writes says what the write-back sets (Helm parameters, the
	// kustomize image), as the daemon's decision builds it.
	Writes string `json:"writes"`
	// Note is set when the image is not updated now (not deployed yet).
	Note string `json:"note,omitempty"`
}

// Subscription statuses.
const (
	subDelivers    = "delivers"
	subUnsupported = "service not supported"
	subBroken      = "service cannot be built"
	subUnknownSvc  = "no such service"
	subUnknownTrig = "no such trigger"
)

// migrateSubscription is one trigger's destination for one Application.
type migrateSubscription struct {
	Trigger   string `json:"trigger"`
	Service   string `json:"service"`
	Recipient string `json:"recipient,omitempty"`
	Status    string `json:"status"`
	// Notes name template parts crowsnest does not send.
	Notes []string `json:"notes,omitempty"`
}

// migrateWindow is one sync window that matches an Application.
type migrateWindow struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Schedule    string `json:"schedule"`
	Duration    string `json:"duration"`
	TimeZone    string `json:"timeZone"`
	HoldsImages bool   `json:"holdsImageUpdates"`
}

// migrateUpdater is one argocd-image-updater 1.x ImageUpdater resource.
type migrateUpdater struct {
	Name string `json:"name"`
	// Analysed is false when it cannot be read.
	Analysed bool `json:"analysed"`
	// Apps are the Applications it decides for.
	Apps []string `json:"applications,omitempty"`
}

// migrateSummary counts what was found; ExitCode is the command's.
type migrateSummary struct {
	Applications  int `json:"applications"`
	ImagesManaged int `json:"applicationsWithImages"`
	Subscriptions int `json:"deliveringSubscriptions"`
	ReadDiffer    int `json:"readDifferently"`
	CannotDo      int `json:"cannotDo"`
	// Breaks names each thing that would stop working.
	Breaks   []string `json:"breaks"`
	ExitCode int      `json:"exitCode"`
}

// migrateInstallRep is the install that carries the installation over.
type migrateInstallRep struct {
	// Values is the Helm values file (crowsnest's config) the install
	// uses; empty with --config (the file is passed as it is).
	Values string `json:"values,omitempty"`
	// Commands install crowsnest, in order.
	Commands []string `json:"commands"`
	// RBAC is what crowsnest's ServiceAccount needs for what was found.
	RBAC []migrateRBAC `json:"rbac"`
	// ExtraRBAC holds Roles beyond the chart's (YAML), or "".
	ExtraRBAC string `json:"extraRBAC,omitempty"`
}

// migrateRBAC is one RBAC rule and why it is needed.
type migrateRBAC struct {
	Where     string `json:"where"`
	Resources string `json:"resources"`
	Verbs     string `json:"verbs"`
	Why       string `json:"why"`
	// Chart says whether the chart grants it already.
	Chart bool `json:"chart"`
}
