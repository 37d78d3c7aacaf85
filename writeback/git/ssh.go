package git

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSH sentinel errors. Both are terminal: the same key or known_hosts
// fails the same way on every attempt.
var (
	// ErrHostKey means the server's host key is not one known_hosts
	// lists for it: the host is unknown, its key differs (a changed key
	// or a man in the middle) or the key is revoked. Nothing is sent to
	// such a server.
	ErrHostKey = errors.New("ssh host key not trusted")
	// ErrSSHKey means there is no usable private key for an SSH URL:
	// none was found, it does not parse, or it needs a passphrase.
	ErrSSHKey = errors.New("no usable ssh private key")
)

// defaultSSHUser is the user of an SSH URL that names none: every forge
// serves Git as "git", and Argo CD assumes the same.
const defaultSSHUser = "git"

// knownHostsHint says where a host key belongs, for errors.
const knownHostsHint = "add the host's key to Argo CD's argocd-ssh-known-hosts-cm (ssh_known_hosts) or the --git-ssh-known-hosts file"

// SCPLikeURL is Git's scp-like address, [user@]host:path (submatches:
// "user@", host, path): repository credentials match one as the ssh://
// URL it stands for (writeback/git/repocreds), and tenancy accepts it as
// a write-back repository.
var SCPLikeURL = regexp.MustCompile(`^([\w.-]+@)?([\w.-]+):/*([^/].*)?$`)

// isSSHURL says whether Git reaches repoURL over SSH: ssh://,
// git+ssh:// and ssh+git:// URLs and scp-like addresses
// (git@host:org/repo.git).
func isSSHURL(repoURL string) bool {
	scheme, _, ok := strings.Cut(repoURL, "://")
	if ok {
		switch strings.ToLower(scheme) {
		case "ssh", "git+ssh", "ssh+git":
			return true
		}
		return false
	}
	// scp-like: host part before the first colon, with no slash before
	// it (a slash first makes it a local path, as git reads it).
	colon := strings.IndexByte(repoURL, ':')
	slash := strings.IndexByte(repoURL, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

// sshAuth is go-git's SSH auth method for one private key, with host keys
// checked against known_hosts text.
type sshAuth struct {
	user       string
	signer     ssh.Signer
	hostKeys   ssh.HostKeyCallback
	algorithms []string
	timeout    time.Duration
}

var _ gitssh.AuthMethod = (*sshAuth)(nil)

// Name implements transport.AuthMethod.
func (a *sshAuth) Name() string { return "ssh-public-keys" }

// String names the user and the key's fingerprint, never the key.
func (a *sshAuth) String() string {
	return fmt.Sprintf("user: %s, name: %s, key: %s", a.user, a.Name(), ssh.FingerprintSHA256(a.signer.PublicKey()))
}

// ClientConfig implements gitssh.AuthMethod.
func (a *sshAuth) ClientConfig() (*ssh.ClientConfig, error) {
	return &ssh.ClientConfig{
		User:              a.user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(a.signer)},
		HostKeyCallback:   a.hostKeys,
		HostKeyAlgorithms: a.algorithms,
		Timeout:           a.timeout,
	}, nil
}

// newSSHAuth builds the auth method for repoURL from c. timeout bounds
// the TCP connection.
func (c Credentials) newSSHAuth(repoURL string, timeout time.Duration) (*sshAuth, error) {
	if c.SSHPrivateKey == "" {
		return nil, terminal(fmt.Errorf("%w: %s is an SSH URL and no sshPrivateKey was found for it (Argo CD repository or repo-creds Secret, or the git:secret: Secret)", ErrSSHKey, repoURL))
	}
	signer, err := ssh.ParsePrivateKey([]byte(c.SSHPrivateKey))
	if err != nil {
		var pp *ssh.PassphraseMissingError
		if errors.As(err, &pp) {
			return nil, terminal(fmt.Errorf("%w: sshPrivateKey for %s is protected by a passphrase; Argo CD's Secrets have no passphrase field, so give a key without one", ErrSSHKey, repoURL))
		}
		// x/crypto's parse errors name the format problem, not the
		// key's bytes.
		return nil, terminal(fmt.Errorf("%w: sshPrivateKey for %s: %w", ErrSSHKey, repoURL, err))
	}
	ep, err := transport.NewEndpoint(repoURL)
	if err != nil {
		return nil, terminal(fmt.Errorf("%w: reading %s: %w", ErrInvalidChange, repoURL, err))
	}
	db, err := parseKnownHosts("known_hosts", c.SSHKnownHosts)
	if err != nil {
		return nil, terminal(err)
	}
	port := ep.Port
	if port <= 0 {
		port = gitssh.DefaultPort
	}
	user := ep.User
	if user == "" {
		user = defaultSSHUser
	}
	return &sshAuth{
		user:       user,
		signer:     signer,
		hostKeys:   checkHostKey(db),
		algorithms: hostKeyAlgorithms(db, net.JoinHostPort(ep.Host, strconv.Itoa(port)), c.SSHKnownHosts),
		timeout:    timeout,
	}, nil
}

// CheckKnownHosts says whether text is valid known_hosts content; errors
// name source and the line. Callers check a known_hosts file or
// ConfigMap when they read it, so a bad line is reported where it is.
func CheckKnownHosts(source, text string) error {
	_, err := parseKnownHosts(source, text)
	return err
}

// ReadKnownHostsFile reads and checks a known_hosts file
// (--git-ssh-known-hosts); errors name the file and line.
func ReadKnownHostsFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading SSH known hosts: %w", err)
	}
	if err := CheckKnownHosts(path, string(b)); err != nil {
		return "", err
	}
	return string(b), nil
}

// parseKnownHosts reads known_hosts text into x/crypto's checker, which
// understands hashed names, patterns, ports, @revoked and
// @cert-authority. It only reads files, so the text goes through a
// private temporary file that is removed at once.
func parseKnownHosts(source, text string) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "crowsnest-known-hosts-*")
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", source, err)
	}
	name := f.Name()
	defer func() { _ = os.Remove(name) }()
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", source, err)
	}
	cb, err := knownhosts.New(name)
	if err != nil {
		// The error says "knownhosts: <file>:<line>: <problem>": name
		// the real source instead of the temporary file.
		msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), name, source), "knownhosts: ", "")
		return nil, fmt.Errorf("invalid known_hosts: %s", msg)
	}
	return cb, nil
}

// checkHostKey wraps x/crypto's known_hosts check with errors that name
// the host, the key it offered and what known_hosts holds.
func checkHostKey(db ssh.HostKeyCallback) ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := db(hostname, remote, key)
		if err == nil {
			return nil
		}
		host := knownhosts.Normalize(hostname)
		offered := key.Type() + " " + ssh.FingerprintSHA256(key)
		var keyErr *knownhosts.KeyError
		var revoked *knownhosts.RevokedError
		switch {
		case errors.As(err, &keyErr) && len(keyErr.Want) == 0:
			err = fmt.Errorf("%w: host %s is not in known_hosts (it offered %s); %s", ErrHostKey, host, offered, knownHostsHint)
		case errors.As(err, &keyErr):
			known := make([]string, len(keyErr.Want))
			for i, k := range keyErr.Want {
				known[i] = k.Key.Type() + " " + ssh.FingerprintSHA256(k.Key)
			}
			err = fmt.Errorf("%w: host key mismatch for %s: it offered %s, known_hosts has %s; the key changed or someone is in between",
				ErrHostKey, host, offered, strings.Join(known, ", "))
		case errors.As(err, &revoked):
			err = fmt.Errorf("%w: host key %s of %s is revoked in known_hosts", ErrHostKey, offered, host)
		default:
			err = fmt.Errorf("%w: host %s: %w", ErrHostKey, host, err)
		}
		return terminal(err)
	}
}

// probeKey is a key no host has: checking it returns the keys known_hosts
// lists for a host.
type probeKey struct{}

func (probeKey) Type() string                        { return "crowsnest-probe" }
func (probeKey) Marshal() []byte                     { return []byte("crowsnest-probe") }
func (probeKey) Verify([]byte, *ssh.Signature) error { return errors.New("probe key") }

// hostKeyAlgorithms lists the host key algorithms known_hosts has keys of
// for hostport, so the handshake asks the server for a key that can be
// checked (a server with RSA and Ed25519 keys, known by its RSA key only,
// would otherwise offer Ed25519 and fail). nil (x/crypto's defaults) when
// nothing is known, or when certificate authorities are in play.
func hostKeyAlgorithms(db ssh.HostKeyCallback, hostport, text string) []string {
	if strings.Contains(text, "@cert-authority") {
		return nil
	}
	var keyErr *knownhosts.KeyError
	if !errors.As(db(hostport, &net.TCPAddr{IP: net.IPv4zero}, probeKey{}), &keyErr) {
		return nil
	}
	var algos []string
	for _, k := range keyErr.Want {
		names := []string{k.Key.Type()}
		if names[0] == ssh.KeyAlgoRSA {
			names = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
		}
		for _, n := range names {
			if !slices.Contains(algos, n) {
				algos = append(algos, n)
			}
		}
	}
	return algos
}

// sshAuthRefused says whether err is the SSH server refusing the client's
// key (x/crypto has no sentinel for it).
func sshAuthRefused(err error) bool {
	return err != nil && strings.Contains(err.Error(), "ssh: unable to authenticate")
}
