package migrate

// Report is what `crowsnest migrate` finds: per Application what
// crowsnest will manage and how, what it reads differently from
// argocd-image-updater and Argo CD Notifications, what it cannot do, and
// the install that carries the installation over. Its JSON form is
// `-o json`; the text form is printReport's.
type Report struct {
	Source          string `json:"source"`
	ArgoCDNamespace string `json:"argocdNamespace"`
	// Read lists the objects read (Secrets by key name only).
	Read         []string  `json:"read"`
	Applications []App     `json:"applications"`
	Updaters     []Updater `json:"imageUpdaters,omitempty"`
	Differs      []Finding `json:"readDifferently"`
	Cannot       []Finding `json:"cannotDo"`
	Summary      Summary   `json:"summary"`
	Install      Install   `json:"install"`
}

// Finding is one thing crowsnest reads differently or cannot do.
type Finding struct {
	// Where names the object and key or annotation.
	Where string `json:"where"`
	What  string `json:"what"`
	Why   string `json:"why,omitempty"`
	// Breaks says something that works today would stop working.
	Breaks bool `json:"breaks"`
}

// App is one Application.
type App struct {
	App     string `json:"app"`
	Project string `json:"project"`
	// Images is nil when crowsnest updates no image of the Application.
	Images        *Images        `json:"images,omitempty"`
	Notifications []Subscription `json:"notifications,omitempty"`
	Windows       []Window       `json:"syncWindows,omitempty"`
	Differs       []Finding      `json:"readDifferently,omitempty"`
	Cannot        []Finding      `json:"cannotDo,omitempty"`
}

// Images is how crowsnest updates one Application's images.
type Images struct {
	// From is "annotations", "image policy <name>" or the ImageUpdater
	// and applicationRef that select the Application.
	From string `json:"from"`
	// WriteBack is "argocd", "git", or "" when nothing can be written.
	WriteBack string  `json:"writeBack"`
	Target    string  `json:"target,omitempty"`
	Images    []Image `json:"images"`
}

// Image is one image crowsnest keeps up to date.
type Image struct {
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

// Subscription statuses: Subscription.Status.
const (
	StatusDelivers       = "delivers"
	StatusUnsupported    = "service not supported"
	StatusBroken         = "service cannot be built"
	StatusUnknownService = "no such service"
	StatusUnknownTrigger = "no such trigger"
)

// Subscription is one trigger's destination for one Application.
type Subscription struct {
	Trigger   string `json:"trigger"`
	Service   string `json:"service"`
	Recipient string `json:"recipient,omitempty"`
	Status    string `json:"status"`
	// Notes name template parts crowsnest does not send.
	Notes []string `json:"notes,omitempty"`
}

// Window is one sync window that matches an Application.
type Window struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Schedule    string `json:"schedule"`
	Duration    string `json:"duration"`
	TimeZone    string `json:"timeZone"`
	HoldsImages bool   `json:"holdsImageUpdates"`
}

// Updater is one argocd-image-updater 1.x ImageUpdater resource.
type Updater struct {
	Name string `json:"name"`
	// Analysed is false when it cannot be read.
	Analysed bool `json:"analysed"`
	// Apps are the Applications it decides for.
	Apps []string `json:"applications,omitempty"`
}

// Summary counts what was found; ExitCode is the command's.
type Summary struct {
	Applications  int `json:"applications"`
	ImagesManaged int `json:"applicationsWithImages"`
	Subscriptions int `json:"deliveringSubscriptions"`
	ReadDiffer    int `json:"readDifferently"`
	CannotDo      int `json:"cannotDo"`
	// Breaks names each thing that would stop working.
	Breaks   []string `json:"breaks"`
	ExitCode int      `json:"exitCode"`
}

// Install is the install that carries the installation over.
type Install struct {
	// Values is the Helm values file (crowsnest's config) the install
	// uses; empty with --config (the file is passed as it is).
	Values string `json:"values,omitempty"`
	// Commands install crowsnest, in order.
	Commands []string `json:"commands"`
	// RBAC is what crowsnest's ServiceAccount needs for what was found.
	RBAC []RBAC `json:"rbac"`
	// ExtraRBAC holds Roles beyond the chart's (YAML), or "".
	ExtraRBAC string `json:"extraRBAC,omitempty"`
}

// RBAC is one RBAC rule and why it is needed.
type RBAC struct {
	Where     string `json:"where"`
	Resources string `json:"resources"`
	Verbs     string `json:"verbs"`
	Why       string `json:"why"`
	// Chart says whether the chart grants it already.
	Chart bool `json:"chart"`
}
