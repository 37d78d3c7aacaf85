package migrate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
)

// The install migrate proposes: the repository's Helm chart, released as
// crowsnest in the crowsnest namespace (its ServiceAccount is then
// crowsnest/crowsnest).
const (
	helmRelease      = "crowsnest"
	installNamespace = "crowsnest"
	valuesFile       = "crowsnest-values.yaml"
)

// install writes the commands and the RBAC crowsnest needs for what was
// found.
func (m *migration) install() {
	ins := &m.rep.Install
	helm := fmt.Sprintf("helm install %s charts/crowsnest --namespace %s --create-namespace --set argocdNamespace=%s",
		helmRelease, installNamespace, m.in.argoNamespace)
	if m.cfgPath != "" {
		ins.Commands = append(ins.Commands, helm+" --set-file config="+m.cfgPath)
	} else {
		ins.Commands = append(ins.Commands,
			"cat > "+valuesFile+" <<'EOF'\n"+ins.Values+"EOF",
			helm+" -f "+valuesFile)
	}
	ins.RBAC = baseRBAC()
	m.argoRBAC(ins)
	extra := m.extraRBAC(ins)
	if extra != "" {
		ins.ExtraRBAC = extra
		ins.Commands = append(ins.Commands, "kubectl apply -f - <<'EOF'\n"+ins.ExtraRBAC+"EOF")
	}
}

// baseRBAC is what crowsnest needs whatever was found.
func baseRBAC() []RBAC {
	return []RBAC{
		{Where: "cluster", Resources: "applications (argoproj.io)", Verbs: "get, list, watch, patch", Chart: true,
			Why: "watch Applications; patch only the fields crowsnest owns (images, Helm parameters, the refresh annotation after a commit)"},
		{Where: "cluster", Resources: "appprojects (argoproj.io)", Verbs: "list, watch", Chart: true,
			Why: "sync windows, sourceRepos and subscription annotations"},
		{Where: "cluster", Resources: "events", Verbs: "create, patch", Chart: true,
			Why: "ImagesUpdated, ImageUpdateHeld, InvalidAnnotation ... Events on Applications"},
		{Where: "namespace " + installNamespace, Resources: "configmaps", Verbs: "get, create, update", Chart: true,
			Why: "notification state and outbox"},
	}
}

// argoRBAC adds what crowsnest needs in Argo CD's namespace: Secrets (Git
// credentials, pull secrets, the notifications Secret), SSH known hosts
// and the notifications ConfigMap.
func (m *migration) argoRBAC(ins *Install) {
	git := m.usesGit()
	argo := "namespace " + m.in.argoNamespace
	var why []string
	if git {
		why = append(why, "Git write-back credentials (Argo CD's repository Secrets, found by label)")
	}
	if m.argoPullSecrets() {
		why = append(why, "pull secrets named by registries and annotations")
	}
	ref := m.cfg.Notifications.ArgoCDConfigMap
	if ref.Name != "" {
		why = append(why, "the notifications Secret "+ref.Secret)
	}
	if len(why) > 0 {
		ins.RBAC = append(ins.RBAC, RBAC{Where: argo, Resources: "secrets", Verbs: "get, list", Chart: true, Why: strings.Join(why, "; ")})
	}
	if git {
		ins.RBAC = append(ins.RBAC, RBAC{Where: argo, Resources: "configmaps argocd-ssh-known-hosts-cm", Verbs: "get", Chart: true,
			Why: "SSH host keys Git write-back trusts"})
	}
	if ref.Name != "" {
		ins.RBAC = append(ins.RBAC, RBAC{Where: "namespace " + m.in.argoNamespace, Resources: "configmaps " + ref.Name, Verbs: "get",
			Chart: ref.Name == config.DefaultArgoCDNotificationsConfigMap && (ref.Namespace == "" || ref.Namespace == m.in.argoNamespace),
			Why:   "the Argo CD Notifications ConfigMap"})
	}
}

// usesGit reports whether an Application writes back to Git.
func (m *migration) usesGit() bool {
	git := false
	for i := range m.rep.Applications {
		if im := m.rep.Applications[i].Images; im != nil && im.WriteBack == string(imageupdate.MethodGit) {
			git = true
		}
	}
	return git
}

// argoPullSecrets reports whether the registries or an image name a pull
// secret in Argo CD's namespace.
func (m *migration) argoPullSecrets() bool {
	argoSecrets := false
	for i := range m.cfg.Registries.List {
		if r := m.cfg.Registries.List[i].Credentials; isSecretRef(r) && r.Namespace == m.in.argoNamespace {
			argoSecrets = true
		}
	}
	for i := range m.rep.Applications {
		if im := m.rep.Applications[i].Images; im != nil {
			for j := range im.Images {
				if r, err := config.ParseCredentialRef(im.Images[j].PullSecret); err == nil && isSecretRef(r) && r.Namespace == m.in.argoNamespace {
					argoSecrets = true
				}
			}
		}
	}
	return argoSecrets
}

// extraRBAC adds what the chart does not grant (ImageUpdaters, Secrets in
// other namespaces) and returns the manifests that grant it ("" if none).
func (m *migration) extraRBAC(ins *Install) string {
	var extra strings.Builder
	if len(m.in.imageUpdaters) > 0 {
		ins.RBAC = append(ins.RBAC,
			RBAC{Where: "cluster", Resources: "imageupdaters (argocd-image-updater.argoproj.io)", Verbs: "get, list, watch",
				Why: "the ImageUpdater resources found (run --imageupdater-resources=auto reads them when it may)"},
			RBAC{Where: "cluster", Resources: "imageupdaters/status (argocd-image-updater.argoproj.io)", Verbs: "update",
				Why: "their status, as argocd-image-updater wrote it"})
		fmt.Fprintf(&extra, `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: %[1]s-imageupdaters}
rules:
  - {apiGroups: [argocd-image-updater.argoproj.io], resources: [imageupdaters], verbs: [get, list, watch]}
  - {apiGroups: [argocd-image-updater.argoproj.io], resources: [imageupdaters/status], verbs: [update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[1]s-imageupdaters}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[1]s-imageupdaters}
subjects:
  - {kind: ServiceAccount, name: %[1]s, namespace: %[2]s}
`, helmRelease, installNamespace)
	}
	for _, ns := range slices.Sorted(maps.Keys(m.secretNamespaces)) {
		ins.RBAC = append(ins.RBAC, RBAC{Where: "namespace " + ns, Resources: "secrets", Verbs: "get",
			Why: "Secrets named by " + strings.Join(m.secretNamespaces[ns], ", ")})
		fmt.Fprintf(&extra, `---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: %[1]s-secrets, namespace: %[2]s}
rules:
  - {apiGroups: [""], resources: [secrets], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: %[1]s-secrets, namespace: %[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: %[1]s-secrets}
subjects:
  - {kind: ServiceAccount, name: %[1]s, namespace: %[3]s}
`, helmRelease, ns, installNamespace)
	}
	return extra.String()
}

func isSecretRef(r config.CredentialRef) bool {
	return r.Source == config.CredsPullSecret || r.Source == config.CredsSecret
}
