// Package kubeevents records Kubernetes Events (core/v1) for crowsnest
// without losing any silently.
//
// client-go's broadcaster queues up to 1000 Events and drops the rest
// without a trace, and writes them one at a time; a pass that updates
// thousands of Applications lost most of its Events and recorded the
// others long after the writes. A Sink instead:
//
//   - writes with a few parallel writers, through the client it is given
//     (whose rate limiter is the apiserver budget), after the write-backs:
//     while WriteBacks says they are under way, an Event waits, at most
//     MaxDelay;
//   - folds a record identical to one still waiting (same object, type,
//     reason and message) into it, and updates the count of an Event it
//     already wrote instead of creating another, as Kubernetes' own
//     correlator does;
//   - holds at most MaxPending Events; beyond that a record joins a
//     waiting Event of the same object, type and reason ("combined from
//     similar events", as Kubernetes' aggregator says), and only a record
//     with nothing to join is dropped;
//   - counts every record by outcome in crowsnest_kube_events_total
//     (written, aggregated, refused, dropped, unflushed) and logs what it
//     could not write: nothing is lost without a metric and a log line;
//   - writes what is pending at Shutdown, for a bounded time.
//
// Redact wraps any Recorder (a Sink, local mode's log) so that no Event
// message shows a credential: every recorder the engine uses is built
// with it.
package kubeevents
