package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// MaxFieldSize bounds one rendered field (256 KiB), far above any
// message a service accepts, so a runaway range cannot eat the memory.
const MaxFieldSize = 256 << 10

// ErrTooLarge is returned when a rendered field exceeds MaxFieldSize.
var ErrTooLarge = errors.New("rendered text exceeds the size limit")

// Compiled is a parsed Template, safe for concurrent Render calls.
type Compiled struct {
	name   string
	src    notify.Template
	funcs  template.FuncMap
	fields []compiledField
	blocks map[string]any // notify.Template.Blocks as JSON trees, the base of each render
	bound  sync.Pool      // of *bound
}

// bound is a copy of a Compiled's field templates whose functions charge
// one budget. Render takes one from a pool, so concurrent renders each
// have their own and a steady stream of renders builds none.
type bound struct {
	budget *budget
	tmpls  []*template.Template
}

// bind copies the field templates (a clone shares the parsed trees) and
// gives the copies functions that charge a new budget.
func (c *Compiled) bind() (*bound, error) {
	bd := &bound{budget: newBudget(), tmpls: make([]*template.Template, len(c.fields))}
	for i, f := range c.fields {
		tm, err := f.tmpl.Clone()
		if err != nil {
			return nil, fmt.Errorf("rendering template %q: %s: %w", c.name, f.path, err)
		}
		bd.tmpls[i] = tm.Funcs(bd.budget.funcs(c.funcs, f.used))
	}
	return bd, nil
}

type compiledField struct {
	path string // "message", "slack.blocks", "webhook.github.body", ...
	tmpl *template.Template
	used []string // the functions it calls, which Render wraps in its budget
	set  func(n *notify.Notification, s string)
	// leaf is set instead of set for a string in a block: the block and
	// the keys (string or int) leading to it in the block's tree.
	leaf []any
}

// CompileOption tunes Compile.
type CompileOption func(*compileOptions) error

type compileOptions struct {
	now func() time.Time
}

// WithClock makes the now, ago helpers read a fixed clock (tests, dry runs).
func WithClock(now func() time.Time) CompileOption {
	return func(o *compileOptions) error {
		if now == nil {
			return errors.New("WithClock: nil clock")
		}
		o.now = now
		return nil
	}
}

// Compile parses every field of t. Errors name the template and the field.
func Compile(t notify.Template, opts ...CompileOption) (*Compiled, error) {
	var o compileOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	funcs := FuncMap(o.now)
	// The builtins html and js print their arguments with fmt: as helpers
	// they run through the render budget like print does.
	funcs["html"], funcs["js"] = template.HTMLEscaper, template.JSEscaper
	funcs[renderStep] = func() string { return "" } // Render binds the real one
	c := &Compiled{name: t.Name, src: t, funcs: funcs}
	if err := c.add("message", t.Message, func(n *notify.Notification, s string) { n.Message = s }); err != nil {
		return nil, err
	}
	for _, step := range []func(notify.Template) error{c.compileSlack, c.compileWebhooks, c.compileEmail, c.compileBlocks} {
		if err := step(t); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// add parses text as the field at path, which Render writes with set;
// empty text is no field.
func (c *Compiled) add(path, text string, set func(*notify.Notification, string)) error {
	if text == "" {
		return nil
	}
	tm, err := template.New(path).Funcs(c.funcs).Option("missingkey=zero").Parse(text)
	if err != nil {
		return fmt.Errorf("template %q: %s: %w", c.name, path, err)
	}
	trees := map[string]*parse.Tree{}
	var all []*parse.Tree
	for _, d := range tm.Templates() {
		if d.Tree != nil {
			rewriteTree(d.Tree)
			trees[d.Name()] = d.Tree
			all = append(all, d.Tree)
		}
	}
	if err := checkRecursion(trees); err != nil {
		return fmt.Errorf("template %q: %s: %w", c.name, path, err)
	}
	c.fields = append(c.fields, compiledField{path: path, tmpl: tm, used: usedFuncs(all), set: set})
	return nil
}

// compileSlack checks t.Slack's delivery policy and compiles its fields.
func (c *Compiled) compileSlack(t notify.Template) error {
	s := t.Slack
	if s == nil {
		return nil
	}
	switch s.DeliveryPolicy {
	case "", notify.PolicyPost, notify.PolicyPostAndUpdate, notify.PolicyUpdate:
	default:
		return fmt.Errorf("template %q: slack.deliveryPolicy: %q is not Post, PostAndUpdate or Update", t.Name, s.DeliveryPolicy)
	}
	for _, f := range []struct {
		path, text string
		set        func(*notify.SlackTemplate, string)
	}{
		{"slack.attachments", s.Attachments, func(st *notify.SlackTemplate, v string) { st.Attachments = v }},
		{"slack.blocks", s.Blocks, func(st *notify.SlackTemplate, v string) { st.Blocks = v }},
		{"slack.groupingKey", s.GroupingKey, func(st *notify.SlackTemplate, v string) { st.GroupingKey = v }},
	} {
		set := f.set
		if err := c.add(f.path, f.text, func(n *notify.Notification, v string) { set(n.Slack, v) }); err != nil {
			return err
		}
	}
	return nil
}

// compileWebhooks compiles every webhook request of t, by webhook name.
func (c *Compiled) compileWebhooks(t notify.Template) error {
	names := make([]string, 0, len(t.Webhook))
	for name := range t.Webhook {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		w := t.Webhook[name]
		for _, f := range []struct {
			field, text string
			set         func(*notify.WebhookTemplate, string)
		}{
			{"method", w.Method, func(wt *notify.WebhookTemplate, v string) { wt.Method = v }},
			{"path", w.Path, func(wt *notify.WebhookTemplate, v string) { wt.Path = v }},
			{"body", w.Body, func(wt *notify.WebhookTemplate, v string) { wt.Body = v }},
		} {
			name, set := name, f.set
			if err := c.add("webhook."+name+"."+f.field, f.text, func(n *notify.Notification, v string) {
				wt := n.Webhook[name]
				set(&wt, v)
				n.Webhook[name] = wt
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// compileEmail compiles t's email subject.
func (c *Compiled) compileEmail(t notify.Template) error {
	if t.Email == nil {
		return nil
	}
	return c.add("email.subject", t.Email.Subject, func(n *notify.Notification, v string) { n.Email.Subject = v })
}

// compileBlocks compiles every string of every block in t.Blocks as a
// template, in a fixed order, remembering where each goes in the block.
func (c *Compiled) compileBlocks(t notify.Template) error {
	if len(t.Blocks) == 0 {
		return nil
	}
	c.blocks = make(map[string]any, len(t.Blocks))
	names := make([]string, 0, len(t.Blocks))
	for name := range t.Blocks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b, err := json.Marshal(t.Blocks[name])
		if err != nil {
			return fmt.Errorf("template %q: %s: %w", t.Name, name, err)
		}
		var tree any
		if err := json.Unmarshal(b, &tree); err != nil {
			return fmt.Errorf("template %q: %s: %w", t.Name, name, err)
		}
		if _, ok := tree.(map[string]any); !ok {
			return fmt.Errorf("template %q: %s: want a mapping", t.Name, name)
		}
		c.blocks[name] = tree
		var walkErr error
		walkStrings(tree, []any{name}, func(keys []any, text string) {
			if walkErr != nil || text == "" {
				return
			}
			if walkErr = c.add(blockPath(keys), text, nil); walkErr == nil {
				c.fields[len(c.fields)-1].leaf = slices.Clone(keys)
			}
		})
		if walkErr != nil {
			return walkErr
		}
	}
	return nil
}

// walkStrings calls fn for every string in tree, with the keys leading to
// it after prefix; map keys are visited in sorted order.
func walkStrings(tree any, prefix []any, fn func(keys []any, s string)) {
	switch v := tree.(type) {
	case string:
		fn(prefix, v)
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkStrings(v[k], append(prefix[:len(prefix):len(prefix)], k), fn)
		}
	case []any:
		for i, e := range v {
			walkStrings(e, append(prefix[:len(prefix):len(prefix)], i), fn)
		}
	}
}

// blockPath names a block string in errors: "teams.sections",
// "alertmanager.labels.severity", "github.deployment.requiredContexts[0]".
func blockPath(keys []any) string {
	var b strings.Builder
	for i, k := range keys {
		switch k := k.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		case string:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(k)
		}
	}
	return b.String()
}

// copyTree deep-copies a JSON tree.
func copyTree(tree any) any {
	switch v := tree.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyTree(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyTree(e)
		}
		return out
	}
	return tree
}

// setLeaf replaces the string at keys (below the block name) in tree.
func setLeaf(tree any, keys []any, s string) {
	for i, k := range keys {
		last := i == len(keys)-1
		switch node := tree.(type) {
		case map[string]any:
			if last {
				node[k.(string)] = s
				return
			}
			tree = node[k.(string)]
		case []any:
			if last {
				node[k.(int)] = s
				return
			}
			tree = node[k.(int)]
		}
	}
}

// Name is the template's name.
func (c *Compiled) Name() string { return c.name }

// Render executes the template with vars (app, context, event, ...). A
// missing field renders as empty. Errors name the template and the field,
// whose first part is the service ("slack.blocks", "webhook.github.body").
// All fields together render within one budget (see budget.go); a render
// that exceeds it fails with ErrBudget.
func (c *Compiled) Render(vars map[string]any) (notify.Notification, error) {
	bd, _ := c.bound.Get().(*bound)
	if bd == nil {
		var err error
		if bd, err = c.bind(); err != nil {
			return notify.Notification{}, err
		}
	}
	defer c.bound.Put(bd)
	bd.budget.reset()
	return c.render(vars, bd)
}

func (c *Compiled) render(vars map[string]any, bd *bound) (notify.Notification, error) {
	var n notify.Notification
	if c.src.Slack != nil {
		n.Slack = &notify.SlackTemplate{NotifyBroadcast: c.src.Slack.NotifyBroadcast, DeliveryPolicy: c.src.Slack.DeliveryPolicy}
	}
	if c.src.Webhook != nil {
		n.Webhook = make(map[string]notify.WebhookTemplate, len(c.src.Webhook))
		for name := range c.src.Webhook {
			n.Webhook[name] = notify.WebhookTemplate{}
		}
	}
	if c.src.Email != nil {
		n.Email = &notify.EmailTemplate{}
	}
	var blocks map[string]any
	if c.blocks != nil {
		blocks = make(map[string]any, len(c.blocks))
		for name, tree := range c.blocks {
			blocks[name] = copyTree(tree)
		}
	}
	var b strings.Builder
	for i, f := range c.fields {
		b.Reset()
		if err := bd.tmpls[i].Execute(&limitWriter{w: &b, n: MaxFieldSize}, vars); err != nil {
			return notify.Notification{}, fmt.Errorf("rendering template %q: %s: %w", c.name, f.path, err)
		}
		if f.leaf != nil {
			setLeaf(blocks[f.leaf[0].(string)], f.leaf[1:], b.String())
			continue
		}
		f.set(&n, b.String())
	}
	if blocks != nil {
		n.Blocks = make(map[string]json.RawMessage, len(blocks))
		for name, tree := range blocks {
			raw, err := json.Marshal(tree)
			if err != nil {
				return notify.Notification{}, fmt.Errorf("rendering template %q: %s: %w", c.name, name, err)
			}
			n.Blocks[name] = raw
		}
	}
	if s := n.Slack; s != nil {
		for _, j := range []struct{ path, text string }{{"slack.blocks", s.Blocks}, {"slack.attachments", s.Attachments}} {
			if strings.TrimSpace(j.text) != "" && !json.Valid([]byte(j.text)) {
				return notify.Notification{}, fmt.Errorf("rendering template %q: %s: not valid JSON", c.name, j.path)
			}
		}
	}
	return n, nil
}

// Once compiles and renders t once, for dry runs.
func Once(t notify.Template, vars map[string]any, opts ...CompileOption) (notify.Notification, error) {
	c, err := Compile(t, opts...)
	if err != nil {
		return notify.Notification{}, err
	}
	return c.Render(vars)
}

type limitWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if len(p) > l.n {
		return 0, ErrTooLarge
	}
	l.n -= len(p)
	return l.w.Write(p)
}
