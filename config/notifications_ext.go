package config

import (
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
	"github.com/crowsnest-dev/crowsnest/config/internal/strictyaml"
	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
)

// ExtService is a service of a type from package servicetypes (Teams,
// GitHub, Opsgenie, ...): its settings in that type's Go struct, read with
// the keys of Argo CD's `service.<type>` block.
type ExtService struct {
	Type string
	// Settings is a pointer to the type's settings struct.
	Settings any
}

// unsupportedType is the error of a service type or template block Argo
// CD Notifications has and crowsnest does not.
const unsupportedType = "service type not supported by crowsnest"

// decodeExtra reads a service type block of package servicetypes.
func (s *Service) decodeExtra(d *strictyaml.Decoder, key, val *yaml.Node, path string) bool {
	k, ok := servicetypes.Lookup(key.Value)
	if !ok {
		if servicetypes.IsArgoCDType(key.Value) {
			d.Report(path, key.Line, "%s", unsupportedType)
			return true
		}
		return false
	}
	if s.Ext != nil {
		d.Report(path, key.Line, "%s, got %s and %s", notifyServiceTypesWanted, s.Ext.Type, key.Value)
		return true
	}
	st := k.Settings()
	d.Decode(val, reflect.ValueOf(st).Elem(), path)
	s.Ext = &ExtService{Type: key.Value, Settings: st}
	return true
}

// decodeExtra reads a template block of a type from package servicetypes.
func (t *Template) decodeExtra(d *strictyaml.Decoder, key, val *yaml.Node, path string) bool {
	k, ok := servicetypes.Lookup(key.Value)
	if !ok || k.Block == nil {
		if servicetypes.IsArgoCDType(key.Value) {
			d.Report(path, key.Line, "%s block: %s", key.Value, unsupportedType)
			return true
		}
		return false
	}
	b := k.Block()
	d.Decode(val, reflect.ValueOf(b).Elem(), path)
	if t.Blocks == nil {
		t.Blocks = map[string]any{}
	}
	t.Blocks[key.Value] = b
	return true
}

// validateExt checks an ExtService's settings with its type.
func (e *ExtService) validate(path string, errs *fieldErrors) {
	k, ok := servicetypes.Lookup(e.Type)
	if !ok {
		errs.invalid(path, "%s", unsupportedType)
		return
	}
	if err := k.Validate(e.Settings); err != nil {
		errs.invalid(path, "%v", err)
	}
}

// resolveSecrets replaces `$key` references in every string setting.
func (e *ExtService) resolveSecrets(secret map[string][]byte) {
	eachString(reflect.ValueOf(e.Settings), "", func(_ string, s *string) {
		*s = expandSecrets(*s, secret)
	})
}

// Clone copies the settings (ResolveSecrets writes to them).
func (e *ExtService) Clone() *ExtService {
	v := reflect.ValueOf(e.Settings)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		c := *e
		return &c
	}
	return &ExtService{Type: e.Type, Settings: deepCopy(v).Interface()}
}

// deepCopy copies pointers, slices and maps below v.
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(deepCopy(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			if out.Field(i).CanSet() {
				out.Field(i).Set(deepCopy(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(deepCopy(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), deepCopy(it.Value()))
		}
		return out
	}
	return v
}

// eachString calls fn with every settable string below v (struct fields
// by yaml name, inline ones included, slice elements, map values), and its
// path.
func eachString(v reflect.Value, path string, fn func(path string, s *string)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			eachString(v.Elem(), path, fn)
		}
	case reflect.String:
		if v.CanAddr() {
			fn(path, v.Addr().Interface().(*string))
		}
	case reflect.Struct:
		for _, f := range strictyaml.Fields(v.Type()) {
			eachString(v.FieldByIndex(f.Index), fieldpath.Join(path, f.Name), fn)
		}
	case reflect.Slice:
		for i := range v.Len() {
			eachString(v.Index(i), fieldpath.Index(path, i), fn)
		}
	case reflect.Map:
		if v.Type().Elem().Kind() != reflect.String {
			return
		}
		for it := v.MapRange(); it.Next(); {
			s := it.Value().String()
			fn(path+"["+it.Key().String()+"]", &s)
			v.SetMapIndex(it.Key(), reflect.ValueOf(s).Convert(v.Type().Elem()))
		}
	}
}
