package main

// The image contract. The Dockerfile repeats these values (a test parses
// it), and install manifests and docs rely on them.
const (
	// binaryPath is where the binary lives; on PATH, owned by root and not
	// writable by the runtime user.
	binaryPath = "/usr/local/bin/crowsnest"
	// runAsUser is distroless's "nonroot" user and group: not root, so
	// Pods with runAsNonRoot start without a securityContext override.
	runAsUser = "65532:65532"
	// homeDir is the nonroot user's home and the working directory, as in
	// distroless's :nonroot images.
	homeDir = "/home/nonroot"
	// caBundlePath is where Go's crypto/x509 looks first on Linux, so TLS
	// to registries, Git hosts and Slack works without SSL_CERT_FILE.
	caBundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// defaultSource is the repository the image is built from (the OCI
	// source label; registries link the image to it).
	defaultSource = "https://github.com/crowsnest-dev/crowsnest"
)

// entrypoint is only the binary and cmd defaults to the daemon, so
// `docker run IMAGE version` and a Pod's `args: [run, --leader-elect]`
// both work without repeating the binary path.
var (
	entrypoint = []string{binaryPath}
	cmd        = []string{"run"}
)

// exposedPorts are crowsnest run's default listeners: metrics, health
// probes and registry webhooks. Documentation only; nothing publishes them.
var exposedPorts = []string{"8080/tcp", "8081/tcp", "8082/tcp"}

// env mirrors distroless static's environment.
var env = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"SSL_CERT_FILE=" + caBundlePath,
}
