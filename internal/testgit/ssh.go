package testgit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshHandshakeTimeout bounds a client's SSH handshake, so a stuck client
// cannot hold the server open past the test.
const sshHandshakeTimeout = 30 * time.Second

// SSHServer serves a Server's bare repositories over SSH, the way forges
// do: public-key login, then an exec of git-upload-pack or
// git-receive-pack with the repository path, run by the real git binary
// with the session's stdin, stdout and stderr, and its exit status sent
// back.
type SSHServer struct {
	// Addr is the server's 127.0.0.1:port.
	Addr string
	// HostKey is the server's public host key (Ed25519, made per server).
	HostKey ssh.PublicKey

	git *Server
	ln  net.Listener
	cfg *ssh.ServerConfig
	wg  sync.WaitGroup

	mu         sync.Mutex
	authorized [][]byte
	counts     map[Kind]int
	refused    int
	conns      map[net.Conn]struct{}
	closed     bool
}

// StartSSH serves s's repositories over SSH on 127.0.0.1 until the test
// ends, letting in clients that prove one of the authorized keys (any
// user name).
func (s *Server) StartSSH(tb testing.TB, authorized ...ssh.PublicKey) *SSHServer {
	tb.Helper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		tb.Fatal(err)
	}
	x := &SSHServer{git: s, HostKey: signer.PublicKey(), counts: map[Kind]int{}, conns: map[net.Conn]struct{}{}}
	for _, k := range authorized {
		x.authorized = append(x.authorized, k.Marshal())
	}
	x.cfg = &ssh.ServerConfig{PublicKeyCallback: x.checkKey}
	x.cfg.AddHostKey(signer)
	x.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	x.Addr = x.ln.Addr().String()
	x.wg.Add(1)
	go x.accept()
	tb.Cleanup(x.Close)
	return x
}

// NewSSHKey makes an Ed25519 client key: the private key as OpenSSH PEM
// (what Argo CD's sshPrivateKey holds) and its public key.
func NewSSHKey(tb testing.TB) (privatePEM string, pub ssh.PublicKey) {
	tb.Helper()
	return newSSHKey(tb, nil)
}

// NewEncryptedSSHKey is NewSSHKey with the private key protected by
// passphrase.
func NewEncryptedSSHKey(tb testing.TB, passphrase string) (privatePEM string, pub ssh.PublicKey) {
	tb.Helper()
	return newSSHKey(tb, []byte(passphrase))
}

func newSSHKey(tb testing.TB, passphrase []byte) (string, ssh.PublicKey) {
	tb.Helper()
	pubKey, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	var block *pem.Block
	if passphrase != nil {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "testgit", passphrase)
	} else {
		block, err = ssh.MarshalPrivateKey(priv, "testgit")
	}
	if err != nil {
		tb.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(pubKey)
	if err != nil {
		tb.Fatal(err)
	}
	return string(pem.EncodeToMemory(block)), pub
}

// RepoURL is the ssh:// clone URL of the named repository.
func (x *SSHServer) RepoURL(name string) string {
	return "ssh://git@" + x.Addr + "/" + name + ".git"
}

// KnownHosts is the known_hosts line for this server ("[127.0.0.1]:port
// ssh-ed25519 ...").
func (x *SSHServer) KnownHosts() string {
	return knownhosts.Line([]string{x.Addr}, x.HostKey) + "\n"
}

// Count returns how many git programs of a kind (KindUploadPack,
// KindReceivePack) the server has started.
func (x *SSHServer) Count(k Kind) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.counts[k]
}

// Refused returns how many client keys the server has turned down.
func (x *SSHServer) Refused() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.refused
}

// Close stops the server, drops open connections and waits for every
// session to end.
func (x *SSHServer) Close() {
	x.mu.Lock()
	x.closed = true
	for c := range x.conns {
		_ = c.Close()
	}
	x.mu.Unlock()
	_ = x.ln.Close()
	x.wg.Wait()
}

func (x *SSHServer) checkKey(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, k := range x.authorized {
		if bytes.Equal(k, key.Marshal()) {
			return nil, nil
		}
	}
	x.refused++
	return nil, errors.New("key not authorized")
}

func (x *SSHServer) accept() {
	defer x.wg.Done()
	for {
		c, err := x.ln.Accept()
		if err != nil {
			return
		}
		x.mu.Lock()
		if x.closed {
			x.mu.Unlock()
			_ = c.Close()
			return
		}
		x.conns[c] = struct{}{}
		x.wg.Add(1)
		x.mu.Unlock()
		go x.serveConn(c)
	}
}

func (x *SSHServer) serveConn(c net.Conn) {
	defer x.wg.Done()
	defer func() {
		_ = c.Close()
		x.mu.Lock()
		delete(x.conns, c)
		x.mu.Unlock()
	}()
	_ = c.SetDeadline(time.Now().Add(sshHandshakeTimeout))
	conn, chans, reqs, err := ssh.NewServerConn(c, x.cfg)
	if err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		ssh.DiscardRequests(reqs)
	}()
	var sessions sync.WaitGroup
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			x.serveSession(ch, chReqs)
		}()
	}
	sessions.Wait()
	_ = conn.Close()
}

// serveSession answers a session's requests: one exec of a Git service,
// nothing else (no shell, no pty, no environment).
func (x *SSHServer) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	var done chan struct{}
	for req := range reqs {
		if req.Type != "exec" || done != nil {
			_ = req.Reply(false, nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			continue
		}
		_ = req.Reply(true, nil)
		done = make(chan struct{})
		go func() {
			defer close(done)
			status := x.exec(ch, payload.Command)
			_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
			_ = ch.Close()
		}()
	}
	if done != nil {
		<-done
	}
	_ = ch.Close()
}

// exec runs "git-upload-pack '<path>'" or "git-receive-pack '<path>'"
// against the bare repository at path and returns its exit status.
func (x *SSHServer) exec(ch ssh.Channel, command string) uint32 {
	service, arg, _ := strings.Cut(command, " ")
	var kind Kind
	switch service {
	case "git-upload-pack":
		kind = KindUploadPack
	case "git-receive-pack":
		kind = KindReceivePack
	default:
		fmt.Fprintf(ch.Stderr(), "testgit: only git-upload-pack and git-receive-pack are served, not %q\n", service)
		return 1
	}
	dir, err := x.repoPath(arg)
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return 128
	}
	x.mu.Lock()
	x.counts[kind]++
	x.mu.Unlock()

	// -c receive.autogc=false: a background gc would hold the session's
	// stderr open after the push has finished.
	cmd := exec.Command("git", "-c", "receive.autogc=false", strings.TrimPrefix(service, "git-"), dir)
	cmd.Dir = x.git.Root
	cmd.Env = Env(x.git.Root)
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "testgit: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(ch.Stderr(), "testgit: %v\n", err)
		return 1
	}
	// The copy ends when the client closes its side, or when the channel
	// is closed after the exit status has been sent.
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		_, _ = io.Copy(stdin, ch)
		_ = stdin.Close()
	}()
	if err := cmd.Wait(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && exitErr.ExitCode() > 0 {
			return uint32(exitErr.ExitCode())
		}
		return 1
	}
	return 0
}

// repoPath turns the quoted path of an exec into a bare repository under
// the server's root; anything outside it, or not a repository, is
// refused.
func (x *SSHServer) repoPath(arg string) (string, error) {
	p, err := shellUnquote(arg)
	if err != nil {
		return "", err
	}
	rel := filepath.Clean("/" + strings.TrimPrefix(p, "~/"))
	dir := filepath.Join(x.git.Root, rel)
	if dir == x.git.Root {
		return "", fmt.Errorf("'%s' does not appear to be a git repository", p)
	}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return "", fmt.Errorf("'%s' does not appear to be a git repository", p)
	}
	return dir, nil
}

// shellUnquote reads a POSIX single-quoted word, as git quotes the path
// of an exec: quoted runs, with a quote or "!" inside written as
// backslash-escaped characters between them.
func shellUnquote(s string) (string, error) {
	var b strings.Builder
	for s != "" {
		switch {
		case s[0] == '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", fmt.Errorf("unterminated quote in %q", s)
			}
			b.WriteString(s[1 : 1+end])
			s = s[2+end:]
		case s[0] == '\\' && len(s) > 1:
			b.WriteByte(s[1])
			s = s[2:]
		default:
			return "", fmt.Errorf("unquoted path %q", s)
		}
	}
	return b.String(), nil
}
