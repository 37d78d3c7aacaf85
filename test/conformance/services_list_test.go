package conformance

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	neservices "github.com/argoproj/notifications-engine/pkg/services"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
)

// engineServiceTypes reads the service types notifications-engine's
// NewService accepts from its own source (the module this suite builds
// against), and its template block names from its Notification type.
func engineServiceTypes(t *testing.T) (types, blocks []string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-json", "github.com/argoproj/notifications-engine").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go list: no module dir (%v)", err)
	}
	src, err := os.ReadFile(filepath.Join(mod.Dir, "pkg", "services", "services.go"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(src)
	i := strings.Index(body, "func NewService(")
	if i < 0 {
		t.Fatal("notifications-engine: no NewService")
	}
	for _, m := range regexp.MustCompile(`case "([a-z0-9-]+)":`).FindAllStringSubmatch(body[i:], -1) {
		types = append(types, m[1])
	}
	nt := reflect.TypeFor[neservices.Notification]()
	for i := range nt.NumField() {
		name := strings.Split(nt.Field(i).Tag.Get("json"), ",")[0]
		if name != "" && name != "message" {
			blocks = append(blocks, name)
		}
	}
	slices.Sort(types)
	slices.Sort(blocks)
	return types, blocks
}

// TestNoServiceIgnoredSilently checks that crowsnest knows every service
// type and template block of notifications-engine: each type is either
// sent by crowsnest (Slack, webhook, email or a services Kind) or read as
// unsupported (warned, counted, failed by config validate, dead-lettered),
// never dropped; the same for each block.
func TestNoServiceIgnoredSilently(t *testing.T) {
	types, blocks := engineServiceTypes(t)
	if len(types) < 15 {
		t.Fatalf("read only %d service types from notifications-engine: %v", len(types), types)
	}
	if diff := cmpStrings(types, servicetypes.ArgoCDTypes); diff != "" {
		t.Errorf("servicetypes.ArgoCDTypes differs from notifications-engine's NewService: %s", diff)
	}
	supported := 0
	for _, typ := range types {
		data := map[string]string{"service." + typ: "{}\n"}
		n, _ := config.ParseArgoCDConfigMap(data, nil)
		if n == nil {
			t.Errorf("%s: not read", typ)
			continue
		}
		s, ok := n.Services[typ]
		switch {
		case !ok:
			t.Errorf("service.%s: dropped (services %v, ignored %v)", typ, n.Services, n.Ignored)
		case s.Unsupported != "":
			if !slices.ContainsFunc(n.Unsupported, func(u string) bool { return strings.HasPrefix(u, "service."+typ+" ") }) {
				t.Errorf("service.%s: unsupported but not listed in Unsupported %v", typ, n.Unsupported)
			}
		default:
			supported++
		}
	}
	for _, b := range blocks {
		data := map[string]string{"template.t": "message: hi\n" + b + ": {}\n"}
		n, _ := config.ParseArgoCDConfigMap(data, nil)
		if n == nil {
			t.Errorf("%s block: not read", b)
			continue
		}
		tm := n.Templates["t"]
		known := (b == "slack" && tm.Slack != nil) || (b == "email" && tm.Email != nil) || (b == "webhook") || tm.Blocks[b] != nil
		listed := slices.ContainsFunc(n.Unsupported, func(u string) bool { return strings.HasPrefix(u, "template.t."+b+" ") })
		if !known && !listed {
			t.Errorf("template block %s: dropped silently (ignored %v)", b, n.Ignored)
		}
	}
	t.Logf("notifications-engine: %d service types (%d sent by crowsnest), %d template blocks", len(types), supported, len(blocks))
}

func cmpStrings(want, got []string) string {
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	return "missing " + strings.Join(missing, ",") + "; extra " + strings.Join(extra, ",")
}
