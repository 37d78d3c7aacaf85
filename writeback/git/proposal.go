package git

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"unicode/utf8"
)

// DefaultPullRequestTitle is a pull request's title: the subject of
// DefaultMessage over every Application the pull request carries.
const DefaultPullRequestTitle = `build: automatic update of {{if eq (len .Apps) 1}}{{index .Apps 0}}{{else}}{{len .Apps}} applications{{end}}`

// DefaultPullRequestBody is a pull request's body: a table of every image
// the pull request changes, from the base branch's value to the head's.
const DefaultPullRequestBody = `crowsnest proposes {{if eq (len .Updates) 1}}this image update{{else}}these image updates{{end}} for ` + "`{{.Base}}`" + `:

| Application | Image | From | To | Source revision |
| --- | --- | --- | --- | --- |
{{range .Updates -}}
| {{.App}} | {{if .Link}}[{{.Image}}]({{.Link}}){{else}}{{.Image}}{{end}} | {{if .From}}` + "`{{.From}}`" + `{{else}}(none){{end}} | ` + "`{{.To}}`" + ` | {{if .RevisionLink}}[` + "`{{.ShortRevision}}`" + `]({{.RevisionLink}}){{else if .Revision}}` + "`{{.ShortRevision}}`" + `{{else}}-{{end}} |
{{end}}
Merging deploys {{if eq (len .Updates) 1}}it{{else}}them{{end}}. crowsnest keeps this pull request current: a newer version updates it, and it is closed with a comment when no longer wanted.
`

// ProposalData is what pull request title and body templates see: the
// repository, the base and head branches, the Applications (sorted names)
// and every value the pull request changes, from the base's value to the
// head's, sorted by Application, image and file. After an update it still
// lists what earlier commits of the pull request changed, with the base's
// value as From.
type ProposalData struct {
	RepoURL    string
	Base, Head string
	Apps       []string
	Updates    []ProposedUpdate
}

// ProposedUpdate is one value a pull request changes: the Update's fields
// (.App, .Image, .Alias, .File, .From, .To, .Revision, .Source) and links.
type ProposedUpdate struct {
	Update
	// Link is the image's page on its registry, "" when not known
	// (RegistryLinks).
	Link string
	// RevisionLink is Revision's commit page at Source, "" when Source's
	// forge is not known; ShortRevision is Revision as shown (a commit
	// SHA's first 12 digits).
	RevisionLink  string
	ShortRevision string
}

// ParsePullRequestTemplate compiles a pull request title or body template
// (what names it, e.g. "pull request title", for errors) and renders it
// once over example data, so a field that does not exist is an error at
// config load, not at the first pull request.
func ParsePullRequestTemplate(what, text string) (*template.Template, error) {
	t, err := template.New(what).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parsing %s template: %w", what, err)
	}
	example := ProposalData{RepoURL: "https://git.example.com/org/deploy.git", Base: "main", Head: "crowsnest/default/main", Apps: []string{"web"},
		Updates: []ProposedUpdate{{Update: Update{App: "web", Key: "argocd/web", Image: "ghcr.io/org/web", File: "kustomization.yaml", From: "1.0.0", To: "1.1.0"}}}}
	if err := t.Execute(io.Discard, example); err != nil {
		return nil, fmt.Errorf("rendering %s template: %w", what, err)
	}
	return t, nil
}

var (
	defaultPullRequestTitle = template.Must(ParsePullRequestTemplate("pull request title", DefaultPullRequestTitle))
	defaultPullRequestBody  = template.Must(ParsePullRequestTemplate("pull request body", DefaultPullRequestBody))
)

// maxTitle is the longest title sent, in characters (GitHub's limit is
// 256, GitLab's and Azure DevOps' 255).
const maxTitle = 255

// proposalFor is the title and body of the pull request of a batch whose
// commit made updates, within limit characters of body: every value the
// open pull request (s.pr) listed and updates did not touch, then updates,
// each from the base's value. The body ends with that list in a form the
// next update reads back (proposalState).
func (s *session) proposalFor(updates []Update, limit int) (title, body string, err error) {
	var earlier []Update
	if s.pr != nil {
		earlier = readProposalState(s.pr.Body)
	}
	all := MergeProposal(earlier, updates)
	sortProposal(all)
	d := ProposalData{RepoURL: s.b.repoURL, Base: s.b.base, Head: s.b.target, Apps: []string{}}
	for i := range all {
		u := &all[i]
		if !slices.Contains(d.Apps, u.App) {
			d.Apps = append(d.Apps, u.App)
		}
		p := ProposedUpdate{Update: *u, ShortRevision: shortRevision(u.Revision), RevisionLink: revisionLink(u.Source, u.Revision)}
		p.Link = s.w.registryLinks().Link(u.Image, u.To)
		d.Updates = append(d.Updates, p)
	}
	slices.Sort(d.Apps)
	if title, err = renderProposal(cmp.Or(s.w.PullRequestTitle, defaultPullRequestTitle), d); err != nil {
		return "", "", err
	}
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		return "", "", errors.New("rendering pull request title: empty title")
	}
	if utf8.RuneCountInString(title) > maxTitle {
		title = string([]rune(title)[:maxTitle-1]) + "…"
	}
	if body, err = renderProposal(cmp.Or(s.w.PullRequestBody, defaultPullRequestBody), d); err != nil {
		return "", "", err
	}
	return title, fitBody(strings.TrimSpace(body), proposalState(all), limit), nil
}

func renderProposal(t *template.Template, d ProposalData) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("rendering %s: %w", t.Name(), err)
	}
	return b.String(), nil
}

// updateID identifies a value across a pull request's commits.
func updateID(u *Update) string {
	return u.Key + "\x00" + u.Alias + "\x00" + u.Image + "\x00" + u.File
}

// MergeProposal is what a pull request changes after a commit made
// updates on top of the earlier ones: a value changed again keeps its
// earlier From (the base's, which a merge replaces) and takes the new To,
// one set back to the base's value is no longer a change, and the rest
// are kept as they were, in the order first seen. Neither argument is
// changed.
func MergeProposal(earlier, updates []Update) []Update {
	out := slices.Clone(earlier)
	at := make(map[string]int, len(out))
	for i := range out {
		at[updateID(&out[i])] = i
	}
	for j := range updates {
		u := updates[j]
		if i, ok := at[updateID(&u)]; ok {
			u.From = out[i].From
			out[i] = u
			continue
		}
		at[updateID(&u)] = len(out)
		out = append(out, u)
	}
	return slices.DeleteFunc(out, func(u Update) bool { return u.From == u.To })
}

// sortProposal orders a pull request's values as its body lists them: by
// Application, then image and file.
func sortProposal(updates []Update) {
	slices.SortStableFunc(updates, func(a, b Update) int {
		return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Image, b.Image),
			cmp.Compare(a.Alias, b.Alias), cmp.Compare(a.File, b.File))
	})
}

// The state a pull request's body ends with: its changes, gzipped JSON in
// base64, in an HTML comment forges do not show.
const (
	statePrefix = "<!-- crowsnest:proposal:v1 "
	stateSuffix = " -->"
	// maxStateBytes bounds what a body's state may unpack to.
	maxStateBytes = 4 << 20
)

// stateEntry is an Update as the state spells it (the same fields, in
// the same order: each converts to the other).
type stateEntry struct {
	App      string `json:"a"`
	Key      string `json:"k"`
	Image    string `json:"i"`
	Alias    string `json:"l,omitempty"`
	File     string `json:"f"`
	From     string `json:"o,omitempty"`
	To       string `json:"t"`
	Revision string `json:"r,omitempty"`
	Source   string `json:"s,omitempty"`
}

// proposalState is updates as a body's last line.
func proposalState(updates []Update) string {
	entries := make([]stateEntry, len(updates))
	for i := range updates {
		entries[i] = stateEntry(updates[i])
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	// Writing to memory cannot fail, nor can marshalling strings.
	_ = json.NewEncoder(zw).Encode(entries)
	_ = zw.Close()
	return statePrefix + base64.StdEncoding.EncodeToString(b.Bytes()) + stateSuffix
}

// readProposalState is the changes a body's state lists, nil when it has
// none or it cannot be read (a person edited it, or an older crowsnest
// opened the pull request): the update then lists its own commit's
// changes. The state only ever shapes the body: whatever it says, the
// commit is what the head carries.
func readProposalState(body string) []Update {
	i := strings.LastIndex(body, statePrefix)
	if i < 0 {
		return nil
	}
	enc, _, ok := strings.Cut(body[i+len(statePrefix):], stateSuffix)
	if !ok {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	var entries []stateEntry
	if err := json.NewDecoder(io.LimitReader(zr, maxStateBytes)).Decode(&entries); err != nil {
		return nil
	}
	out := make([]Update, 0, len(entries))
	for i := range entries {
		if e := &entries[i]; e.Key != "" && e.Image != "" && e.To != "" {
			out = append(out, Update(*e))
		}
	}
	return out
}

// bodyCut ends a body cut to the forge's limit.
const bodyCut = "\n\n… (cut to the forge's limit on a pull request's length; the commits list every change)"

// fitBody is body and state within limit characters: state goes first
// when both do not fit (the next update then lists its own commit's
// changes only), then the body is cut at a line.
func fitBody(body, state string, limit int) string {
	if full := body + "\n\n" + state; utf8.RuneCountInString(full) <= limit {
		return full
	}
	if utf8.RuneCountInString(body) <= limit {
		return body
	}
	keep := max(limit-utf8.RuneCountInString(bodyCut), 0)
	cut := string([]rune(body)[:keep])
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	return cut + bodyCut
}

var hexSHA = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// shortRevision is a revision as a body shows it: a commit SHA's first 12
// digits, anything else whole.
func shortRevision(rev string) string {
	if hexSHA.MatchString(rev) && len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// revisionLink is the page of commit rev in the repository at source
// (an image's org.opencontainers.image.source), on the forges whose
// commit pages are known by host; "" otherwise.
func revisionLink(source, rev string) string {
	if !hexSHA.MatchString(rev) || !strings.HasPrefix(source, "https://") {
		return ""
	}
	repo := strings.TrimSuffix(strings.TrimRight(source, "/"), ".git")
	host, path, _ := strings.Cut(strings.TrimPrefix(repo, "https://"), "/")
	if path == "" || strings.ContainsAny(repo, " \t\n()[]<>\"'`") {
		return ""
	}
	switch host {
	case "github.com", "codeberg.org":
		return repo + "/commit/" + rev
	case "gitlab.com":
		return repo + "/-/commit/" + rev
	case "bitbucket.org":
		return repo + "/commits/" + rev
	}
	return ""
}
