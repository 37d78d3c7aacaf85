package imageupdater

// IgnoredFlags are argocd-image-updater's `run` flags with no
// counterpart in crowsnest, and why: `crowsnest run` accepts and reports
// them at start, `crowsnest migrate` reports the config keys that set them.
var IgnoredFlags = map[string]string{
	"metrics-secure":             "crowsnest serves /metrics over plain HTTP; put TLS in front of it",
	"enable-http2":               "crowsnest's servers follow Go's defaults",
	"warmup-cache":               "crowsnest always lists every repository once before its first decisions",
	"disable-kube-events":        "crowsnest always records Events",
	"git-commit-signing-key":     "set git.signingKey (an ASCII-armored OpenPGP key) in crowsnest's config",
	"git-commit-signing-method":  "crowsnest signs with OpenPGP (git.signingKey)",
	"git-commit-sign-off":        "set git.commitMessage with a Signed-off-by line",
	"git-commit-message-path":    "its template's fields differ; set git.commitMessage in crowsnest's config",
	"git-commit-method":          "set git.commitMethod (git or api) in crowsnest's config",
	"enable-webhook":             "crowsnest serves the webhook receiver when registries.webhook.sources are configured",
	"webhook-require-secret":     "set each source's secret in registries.webhook.sources",
	"docker-webhook-secret":      "set the source's secret in registries.webhook.sources",
	"ghcr-webhook-secret":        "set the source's secret in registries.webhook.sources",
	"quay-webhook-secret":        "set the source's secret in registries.webhook.sources",
	"harbor-webhook-secret":      "set the source's secret in registries.webhook.sources",
	"aliyun-acr-webhook-secret":  "set the source's secret in registries.webhook.sources",
	"acr-webhook-secret":         "set the source's secret in registries.webhook.sources",
	"cloudevents-webhook-secret": "set the source's secret in registries.webhook.sources",
	"webhook-ratelimit-allowed":  "crowsnest paces the polls a webhook causes per registry (registries.webhook)",
	"disable-tls":                "crowsnest's webhook receiver speaks plain HTTP; put TLS in front of it",
	"tlsminversion":              "crowsnest's webhook receiver speaks plain HTTP; put TLS in front of it",
	"tlsmaxversion":              "crowsnest's webhook receiver speaks plain HTTP; put TLS in front of it",
	"tlsciphers":                 "crowsnest's webhook receiver speaks plain HTTP; put TLS in front of it",
	"applications-api":           "crowsnest reads Applications through the Kubernetes API only",
	"argocd-server-addr":         "crowsnest reads Applications through the Kubernetes API only",
	"argocd-grpc-web":            "crowsnest reads Applications through the Kubernetes API only",
	"argocd-insecure":            "crowsnest reads Applications through the Kubernetes API only",
	"argocd-plaintext":           "crowsnest reads Applications through the Kubernetes API only",
	"argocd-auth-token":          "crowsnest reads Applications through the Kubernetes API only",
	"disable-kubernetes":         "crowsnest needs the Kubernetes API (or --apps-dir)",
	"match-application-name":     "select Applications with --selector, or crowsnest's imagePolicies",
}
