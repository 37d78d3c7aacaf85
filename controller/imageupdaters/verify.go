package imageupdaters

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
	"github.com/crowsnest-dev/crowsnest/registry/verify"
)

// SecretGetter reads one Secret (creds.KubeSecrets): the Secrets that
// hold imagesVerification's public keys.
type SecretGetter interface {
	Get(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// ErrVerifyKey is wrapped by the problems of an imagesVerification whose
// public key cannot be read: the images it covers are not updated.
var ErrVerifyKey = errors.New("the public key of imagesVerification cannot be read")

// KeyTTL is how long a public key read from a Secret is used before it is
// read again: a rotated key is picked up within a minute, and a namespace
// of Applications sharing one key costs one read a minute, not one a
// reconcile.
const KeyTTL = time.Minute

// secretTimeout bounds one Secret read (creds.DefaultSecretTimeout).
const secretTimeout = 30 * time.Second

// keyCache keeps the keys read, by namespace/secret/key.
type keyCache struct {
	mu   sync.Mutex
	keys map[string]cachedKey
}

type cachedKey struct {
	keys *verify.KeySet
	read time.Time
}

// verifyKeys reads the public key k names in namespace, through the
// cache. A problem names the field at fault (the secretName for a Secret
// that cannot be read, the key for a key that is missing or not a PEM
// public key) and wraps ErrVerifyKey.
func (s *Set) verifyKeys(ctx context.Context, resKey, namespace string, k *imageupdater.VerifyKey, consequence string) (*verify.KeySet, error) {
	id := namespace + "/" + k.SecretName + "/" + k.Key
	s.keyCache.mu.Lock()
	c, ok := s.keyCache.keys[id]
	s.keyCache.mu.Unlock()
	if ok && time.Since(c.read) < KeyTTL {
		return c.keys, nil
	}
	fail := func(path string, cause error, format string, args ...any) error {
		err := ErrVerifyKey
		if cause != nil {
			err = fmt.Errorf("%w: %w", ErrVerifyKey, cause)
		}
		return &FieldError{Resource: resKey, Path: path, Msg: fmt.Sprintf(format, args...) + "; " + consequence, Err: err}
	}
	if s.Secrets == nil {
		return nil, fail(k.SecretPath, nil, "Secret %s/%s: crowsnest reads no Secrets here", namespace, k.SecretName)
	}
	rctx, cancel := context.WithTimeout(ctx, secretTimeout)
	defer cancel()
	sec, err := s.Secrets.Get(rctx, namespace, k.SecretName)
	if err != nil {
		return nil, fail(k.SecretPath, err, "%v", err)
	}
	if err := creds.CheckReserved(sec); err != nil {
		// The rule for annotations' credentials: whoever writes an
		// ImageUpdater reaches no further than the annotations there.
		return nil, fail(k.SecretPath, err, "%v", err)
	}
	data, ok := sec.Data[k.Key]
	if !ok {
		if v, sok := sec.StringData[k.Key]; sok {
			data, ok = []byte(v), true
		}
	}
	if !ok {
		return nil, fail(k.KeyPath, nil, "Secret %s/%s has no key %q", namespace, k.SecretName, k.Key)
	}
	ks, err := verify.ParseKeys([]string{string(data)})
	if err != nil {
		return nil, fail(k.KeyPath, err, "Secret %s/%s key %s: %v", namespace, k.SecretName, k.Key, err)
	}
	now := time.Now()
	s.keyCache.mu.Lock()
	if s.keyCache.keys == nil {
		s.keyCache.keys = map[string]cachedKey{}
	}
	// Keys past their time are read again anyway: dropping them here
	// bounds the cache by the keys named within a minute, however many
	// names edits of ImageUpdaters come and go.
	for k, c := range s.keyCache.keys {
		if now.Sub(c.read) >= KeyTTL {
			delete(s.keyCache.keys, k)
		}
	}
	s.keyCache.keys[id] = cachedKey{keys: ks, read: now}
	s.keyCache.mu.Unlock()
	return ks, nil
}
