package daemon

import (
	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
)

// gitSecrets is what the config in force says of Git Secrets, for
// crowsnest run: which it names (repocreds.Trust) and where it sends them
// (repocreds.Binding: an image policy's git:secret: goes wherever its
// Applications write, a tenancy.credentials entry's Secret where its
// repositories say).
type gitSecrets struct {
	engine *controller.Engine
	rules  *tenancy.Rules
}

var (
	_ repocreds.Trust   = gitSecrets{}
	_ repocreds.Binding = gitSecrets{}
)

// TrustsSecret implements repocreds.Trust: a tenancy.credentials
// gitSecret entry or an image policy's git:secret: method names the
// Secret.
func (b gitSecrets) TrustsSecret(namespace, name string) bool {
	cfg, nsName := b.engine.Config(), namespace+"/"+name
	for i := range cfg.Tenancy.Credentials {
		if cfg.Tenancy.Credentials[i].GitSecret == nsName {
			return true
		}
	}
	return policyGitSecret(cfg, nsName)
}

// SendsTo implements repocreds.Binding.
func (b gitSecrets) SendsTo(namespace, name, repoURL string) bool {
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
