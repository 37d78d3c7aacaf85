package daemon

import (
	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
)

// trustedGitSecret reports whether the operator's config names the Secret
// nsName for Git write-back: a tenancy.credentials gitSecret entry or an
// image policy's git:secret: method.
func trustedGitSecret(cfg *config.Config, nsName string) bool {
	for i := range cfg.Tenancy.Credentials {
		if cfg.Tenancy.Credentials[i].GitSecret == nsName {
			return true
		}
	}
	return policyGitSecret(cfg, nsName)
}

// gitSecretBinding is repocreds.Binding for crowsnest run: an image
// policy's git:secret: goes wherever its Applications write, a
// tenancy.credentials entry's Secret where its repositories say.
type gitSecretBinding struct {
	engine *controller.Engine
	rules  *tenancy.Rules
}

var _ repocreds.Binding = gitSecretBinding{}

// SendsTo implements repocreds.Binding.
func (b gitSecretBinding) SendsTo(namespace, name, repoURL string) bool {
	nsName := namespace + "/" + name
	return policyGitSecret(b.engine.Config(), nsName) || b.rules.GitSecretBound(nsName, repoURL)
}

// policyGitSecret reports whether an image policy, the operator's word,
// names the Secret nsName in its git:secret: method: it goes to whatever
// repository the policy's Applications write to.
func policyGitSecret(cfg *config.Config, nsName string) bool {
	for i := range cfg.ImagePolicies {
		if cfg.ImagePolicies[i].WriteBack.Method == "git:secret:"+nsName {
			return true
		}
	}
	return false
}
