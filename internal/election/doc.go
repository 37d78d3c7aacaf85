// Package election is leader election over a coordination.k8s.io/v1
// Lease, with client-go's semantics (tools/leaderelection): a candidate
// takes the Lease when it is free or its holder stopped renewing it for the
// lease duration, as measured on the candidate's own clock from the last
// change it saw; the leader renews it every retry period and steps down
// when it cannot within the renew deadline; updates are optimistic on the
// Lease's resourceVersion; the holder may release the Lease when it stops.
// The engine (controller/leader.go) runs its workers while an Elector
// leads. It exists because client-go's elector links the typed clientset,
// whose scheme of every built-in API group costs the daemon tens of
// megabytes of memory; it speaks through kubecore instead.
package election
