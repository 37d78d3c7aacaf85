// Command crowsnest is the lookout on the mast for Argo CD: it watches
// Applications, finds newer images, writes them back, announces what
// happened and keeps deployments inside sync windows.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		// The one exit of every command's error: a value it quotes (a
		// config field, an image reference) may hold credentials.
		fmt.Fprintln(os.Stderr, "crowsnest:", redact.String(err.Error()))
		code := 1
		var ec interface{ CommandExitCode() int } // a command's own exit codes (migrate)
		if errors.As(err, &ec) {
			code = ec.CommandExitCode()
		}
		os.Exit(code)
	}
}
