package creds

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

// ext: limits. A "user:password" line, even with a long cloud token as
// the password, is a few KiB; stderr is kept only to report its size.
// After a timeout or exit, a script's leftover children get extWaitDelay
// to release its output before they are cut off.
const (
	maxExtStdout = 64 << 10
	maxExtStderr = 64 << 10
	extWaitDelay = time.Second
)

// ErrExtTimeout says an ext: script did not finish within ExtTimeout.
var ErrExtTimeout = errors.New("credential script timed out")

// fromExt runs the script directly (no shell, no arguments, crowsnest's
// environment) and reads "user:password" from its stdout. Neither output
// stream appears in errors: a failing script may print its secret.
func (r *Resolver) fromExt(ctx context.Context, ref Ref) (authn.AuthConfig, error) {
	timeout := r.extTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stdout := &cappedBuffer{max: maxExtStdout}
	stderr := &cappedBuffer{max: maxExtStderr}
	cmd := exec.CommandContext(ctx, ref.Path)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = extWaitDelay
	killProcessGroup(cmd)
	err := cmd.Run()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return authn.AuthConfig{}, fmt.Errorf("%w: %s ran longer than %s", ErrExtTimeout, ref.Path, timeout)
	case err != nil:
		return authn.AuthConfig{}, fmt.Errorf("running %s: %w (stderr: %d bytes, not shown as it may hold secrets)", ref.Path, err, stderr.total)
	case stdout.total > maxExtStdout:
		return authn.AuthConfig{}, fmt.Errorf("%s printed more than %d bytes; want one line user:password", ref.Path, maxExtStdout)
	}
	return parseUserPass(strings.TrimRight(stdout.String(), "\r\n"), "output of "+ref.Path)
}

// cappedBuffer keeps the first max bytes written and counts the rest, so a
// chatty script neither blocks on a full pipe nor fills memory.
type cappedBuffer struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += len(p)
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *cappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
