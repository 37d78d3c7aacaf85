package configcheck

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// File returns every problem of the config file at path:
// the schema's and, on what decoded, what run's startup check finds
// (setup.CheckConfig), each located in the file where it can be. The error is
// for a file that cannot be read.
func File(path string) ([]config.FieldError, error) {
	if data, lines, ok := notificationsConfigMap(path); ok {
		return validateNotificationsCM(data, lines), nil
	}
	checked, err := config.LoadChecked(path)
	if err != nil {
		return nil, err
	}
	problems := checked.Problems
	if checked.Config == nil {
		return problems, nil
	}
	for _, err := range setup.FlattenErrors(setup.CheckConfig(checked.Config, filepath.Dir(path))) {
		for _, fe := range locateCheckError(err) {
			if checked.Covers(fe.Path) {
				continue // the schema problem already says it
			}
			if fe.Path != "" && fe.Line == 0 {
				fe.Line = checked.Line(fe.Path)
			}
			problems = append(problems, fe)
		}
	}
	// File order; problems without a line last.
	slices.SortStableFunc(problems, func(a, b config.FieldError) int {
		if (a.Line == 0) != (b.Line == 0) {
			return cmp.Compare(b.Line, a.Line)
		}
		return cmp.Compare(a.Line, b.Line)
	})
	return problems, nil
}

var (
	// checkPathRE finds the field path an error of setup.CheckConfig's begins
	// with ("imagePolicies[0].images[1].tag: ...", "git.signingKey
	// (file:key): ...").
	checkPathRE = regexp.MustCompile(`^((?:notifications|imagePolicies|registries|git|syncWindows|watch|controller|tenancy)(?:[.\[][^:\s(]*)?)(?: (\([^)]*\)))?: (.*)$`)
	// notifyTemplateRE finds render.Compile's template "name": field: prefix.
	notifyTemplateRE = regexp.MustCompile(`^template "([^"]+)": ([A-Za-z0-9_.\-\[\]]+): (.*)$`)
	// notifyRefRE finds triggers.Compile's reference errors.
	notifyRefRE = regexp.MustCompile(`^((?:defaultTriggers|subscriptions)[^:\s]*): (.*)$`)
)

// locateCheckError turns one of setup.CheckConfig's errors into FieldErrors with
// the config field path each is about (empty when it names none).
func locateCheckError(err error) []config.FieldError {
	var ce *triggers.CompileError
	if errors.As(err, &ce) {
		msg := ce.Msg + ce.Snippet
		if ce.Line > 0 {
			msg = fmt.Sprintf("expression line %d, column %d: %s", ce.Line, ce.Column, msg)
		}
		return []config.FieldError{{
			Path: fmt.Sprintf("notifications.triggers[%s][%d].%s", ce.Trigger, ce.Condition, ce.Field),
			Msg:  msg,
		}}
	}
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		return ve.Errors
	}
	s := err.Error()
	if m := notifyTemplateRE.FindStringSubmatch(s); m != nil {
		return []config.FieldError{{Path: "notifications.templates[" + m[1] + "]." + m[2], Msg: m[3]}}
	}
	if m := notifyRefRE.FindStringSubmatch(s); m != nil {
		return []config.FieldError{{Path: "notifications." + m[1], Msg: m[2]}}
	}
	if m := checkPathRE.FindStringSubmatch(s); m != nil {
		msg := m[3]
		if m[2] != "" {
			msg = m[2] + ": " + msg
		}
		return []config.FieldError{{Path: m[1], Msg: msg}}
	}
	return []config.FieldError{{Msg: s}}
}
