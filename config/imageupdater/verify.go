package imageupdater

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// VerifyKey is an imagesVerification in force for an image: the tags
// chosen must be signed with the PEM public key held in the key Key of
// the Secret SecretName, in the resource's own namespace. The key is
// read when an Application is reconciled (controller/imageupdaters); a
// key that cannot be read leaves the image not updated, never unverified.
type VerifyKey struct {
	// Path is the imagesVerification block that turned verification on.
	Path       string
	SecretName string
	Key        string
	// SecretPath and KeyPath are the fields SecretName and Key came
	// from ("spec.imagesVerification.cosignKey.secretName").
	SecretPath, KeyPath string
}

// verifyState is imagesVerification merged down to one level: each
// field from the lowest block that sets it.
type verifyState struct {
	on       bool
	onAt     string // the block that said on or off
	cosign   *CosignKey
	cosignAt string // the cosignKey field cosign came from
}

// mergeVerify applies the block v at path p over above: a block turns
// verification on unless it says enabled: false (the CRD defaults enabled
// to true), and its cosignKey, when set, replaces the one above.
func mergeVerify(above verifyState, p string, v *Verification) verifyState {
	if v == nil {
		return above
	}
	out := above
	out.on, out.onAt = v.Enabled == nil || *v.Enabled, p
	if v.CosignKey != nil {
		out.cosign, out.cosignAt = v.CosignKey, fieldpath.Join(p, "cosignKey")
	}
	return out
}

// key returns the key in force (nil when verification is off), or, when
// verification is on and cannot be honoured, the field at fault after
// reporting it with the consequence ("the image web is not updated").
func (v verifyState) key(errs *problems, consequence string) (key *VerifyKey, bad string) {
	if !v.on {
		return nil, ""
	}
	if v.cosign == nil {
		errs.invalid(v.onAt, "signature verification is on and no cosignKey names the public key; %s", consequence)
		return nil, v.onAt
	}
	k := &VerifyKey{Path: v.onAt, SecretName: strings.TrimSpace(v.cosign.SecretName), Key: strings.TrimSpace(v.cosign.Key),
		SecretPath: fieldpath.Join(v.cosignAt, "secretName"), KeyPath: fieldpath.Join(v.cosignAt, "key")}
	switch {
	case k.SecretName == "":
		errs.invalid(k.SecretPath, "required: the Secret holding the PEM public key; %s", consequence)
		return nil, k.SecretPath
	case strings.Contains(k.SecretName, "/"):
		errs.invalid(k.SecretPath, "%q: only Secrets of the ImageUpdater's own namespace are read (a name, no namespace); %s", k.SecretName, consequence)
		return nil, k.SecretPath
	case len(validation.IsDNS1123Subdomain(k.SecretName)) > 0:
		errs.invalid(k.SecretPath, "%q is not a Secret name: %s; %s", k.SecretName, strings.Join(validation.IsDNS1123Subdomain(k.SecretName), "; "), consequence)
		return nil, k.SecretPath
	case k.Key == "":
		errs.invalid(k.KeyPath, "required: the Secret's key holding the PEM public key; %s", consequence)
		return nil, k.KeyPath
	case len(validation.IsConfigMapKey(k.Key)) > 0:
		errs.invalid(k.KeyPath, "%q is not a Secret key: %s; %s", k.Key, strings.Join(validation.IsConfigMapKey(k.Key), "; "), consequence)
		return nil, k.KeyPath
	}
	return k, ""
}
