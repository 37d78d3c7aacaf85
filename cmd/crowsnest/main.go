// Command crowsnest is the lookout on the mast for Argo CD: it watches
// Applications, finds newer images, writes them back, announces what
// happened and keeps deployments inside sync windows.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "crowsnest:", err)
		os.Exit(1)
	}
}
