// Command etcd is a thin wrapper that builds the etcd server from the Go
// module proxy for crowsnest's test environment. No etcd binary can be
// downloaded on the machines crowsnest is developed on, so we compile it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
