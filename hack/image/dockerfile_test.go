package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// instruction is one Dockerfile instruction with continuation lines joined.
type instruction struct {
	keyword string // upper case
	args    string
	line    int
}

type stage struct {
	from  instruction
	instr []instruction
}

// parseDockerfile splits a Dockerfile into the ARGs before the first FROM
// and its stages. It knows what this repository's Dockerfile uses:
// comments, backslash continuations, one instruction per logical line.
func parseDockerfile(text string) (global []instruction, stages []stage, err error) {
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if body, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(strings.TrimSpace(body) + " ")
			continue
		}
		cur.WriteString(line)
		keyword, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		cur.Reset()
		in := instruction{keyword: strings.ToUpper(keyword), args: strings.TrimSpace(args), line: start}
		switch {
		case in.keyword == "FROM":
			stages = append(stages, stage{from: in})
		case len(stages) == 0 && in.keyword == "ARG":
			global = append(global, in)
		case len(stages) == 0:
			return nil, nil, fmt.Errorf("line %d: %s before the first FROM", in.line, in.keyword)
		default:
			stages[len(stages)-1].instr = append(stages[len(stages)-1].instr, in)
		}
	}
	if cur.Len() > 0 {
		return nil, nil, fmt.Errorf("line %d: continuation at the end of the file", start)
	}
	if len(stages) == 0 {
		return nil, nil, fmt.Errorf("no FROM")
	}
	return global, stages, nil
}

// only returns the single instruction of a kind in a stage.
func (s stage) only(t *testing.T, keyword string) instruction {
	t.Helper()
	var found []instruction
	for _, in := range s.instr {
		if in.keyword == keyword {
			found = append(found, in)
		}
	}
	if len(found) != 1 {
		t.Fatalf("stage %q: want exactly one %s, found %d", s.from.args, keyword, len(found))
	}
	return found[0]
}

// execForm decodes ENTRYPOINT/CMD; the shell form would need /bin/sh,
// which a distroless image does not have.
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(in.args), &out); err != nil {
		t.Fatalf("line %d: %s must be the JSON exec form: %v", in.line, in.keyword, err)
	}
	return out
}

// labelPairs splits `k="v" k2=v2` into a map.
func labelPairs(t *testing.T, s string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`([^\s=]+)=("(?:[^"\\]|\\.)*"|\S*)`).FindAllStringSubmatch(s, -1) {
		v := m[2]
		if strings.HasPrefix(v, `"`) {
			var err error
			if v, err = strconv.Unquote(v); err != nil {
				t.Fatalf("label %s: %v", m[1], err)
			}
		}
		out[m[1]] = v
	}
	return out
}

// TestDockerfileMatchesImage keeps the Dockerfile, which cannot be built
// here, to the contract the Go-built image is tested against.
func TestDockerfileMatchesImage(t *testing.T) {
	text, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	global, stages, err := parseDockerfile(string(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 {
		t.Fatalf("want a builder and a final stage, got %d stages", len(stages))
	}
	builder, final := stages[0], stages[1]

	t.Run("final stage", func(t *testing.T) {
		base := final.from.args
		if !strings.Contains(base, "distroless/static") || !strings.HasSuffix(base, ":nonroot") {
			t.Errorf("final base %q: want distroless static :nonroot (user 65532, CA certificates, /tmp, no shell), as hack/image builds", base)
		}
		if got := final.only(t, "USER").args; got != runAsUser {
			t.Errorf("USER %q, want %q", got, runAsUser)
		}
		if diff := cmp.Diff(entrypoint, execForm(t, final.only(t, "ENTRYPOINT"))); diff != "" {
			t.Errorf("ENTRYPOINT (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(cmd, execForm(t, final.only(t, "CMD"))); diff != "" {
			t.Errorf("CMD (-want +got):\n%s", diff)
		}
		if got := final.only(t, "WORKDIR").args; got != homeDir {
			t.Errorf("WORKDIR %q, want %q", got, homeDir)
		}
		if diff := cmp.Diff(exposedPorts, strings.Fields(final.only(t, "EXPOSE").args)); diff != "" {
			t.Errorf("EXPOSE (-want +got):\n%s", diff)
		}
		labels := labelPairs(t, final.only(t, "LABEL").args)
		if got := labels["org.opencontainers.image.source"]; got != defaultSource {
			t.Errorf("source label %q, want %q", got, defaultSource)
		}
		for _, k := range []string{"org.opencontainers.image.version", "org.opencontainers.image.revision"} {
			if _, ok := labels[k]; !ok {
				t.Errorf("label %s missing", k)
			}
		}
	})

	t.Run("binary", func(t *testing.T) {
		copyArgs := strings.Fields(final.only(t, "COPY").args)
		if len(copyArgs) != 3 || copyArgs[0] != "--from=build" {
			t.Fatalf("COPY %q: want --from=build SRC %s", copyArgs, binaryPath)
		}
		if copyArgs[2] != binaryPath {
			t.Errorf("binary copied to %q, want %q", copyArgs[2], binaryPath)
		}
		if !strings.HasSuffix(builder.from.args, " AS build") {
			t.Errorf("builder stage %q is not named build", builder.from.args)
		}
		var goBuild string
		for _, in := range builder.instr {
			if in.keyword == "RUN" && strings.Contains(in.args, "go build") {
				goBuild = in.args
			}
		}
		for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=", "-o " + copyArgs[1], "./cmd/crowsnest"} {
			if !strings.Contains(goBuild, want) {
				t.Errorf("builder's go build %q lacks %q", goBuild, want)
			}
		}
	})

	t.Run("go version", func(t *testing.T) {
		mod, err := os.ReadFile("../../go.mod")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
		if m == nil {
			t.Fatal("no go directive in go.mod")
		}
		want := "GO_VERSION=" + string(m[1])
		var got []string
		for _, in := range global {
			got = append(got, in.args)
		}
		if !strings.Contains(strings.Join(got, " "), want) {
			t.Errorf("global ARGs %q: want %s (go.mod's go version), so the builder image can build the module", got, want)
		}
		if !strings.Contains(builder.from.args, "golang:${GO_VERSION}") {
			t.Errorf("builder %q does not use golang:${GO_VERSION}", builder.from.args)
		}
	})
}

func TestParseDockerfile(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    []string // keyword:args of the last stage
		wantErr bool
	}{
		{name: "continuations and comments", text: "ARG A=1\nFROM x AS b\nRUN a \\\n  b\n# c\nuser 1:1\n", want: []string{"RUN:a b", "USER:1:1"}},
		{name: "instruction before FROM", text: "RUN x\nFROM y\n", wantErr: true},
		{name: "no FROM", text: "# nothing\n", wantErr: true},
		{name: "dangling continuation", text: "FROM y\nRUN a \\", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stages, err := parseDockerfile(tt.text)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			var got []string
			for _, in := range stages[len(stages)-1].instr {
				got = append(got, in.keyword+":"+in.args)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
