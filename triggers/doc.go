// Package triggers decides when a notification is due. It compiles the
// conditions of config.Notifications (and the default catalog) once, with
// expr-lang/expr, into programs that read the observed transition (app,
// prev), crowsnest's own events (event), the configured context and a few
// hermetic helpers; a member of a missing field is nil, never a runtime
// error. It evaluates every condition of a trigger per observation and,
// through a small pure state machine, turns results into sends: once each
// time a condition becomes true, or once per distinct oncePer value, with
// dedupe keys that do not change when templates, send lists or other
// triggers are edited. It also reads notification subscriptions from
// annotations and resolves who receives a fired trigger. Nothing here does
// I/O: the caller persists State and hands sends to package notify.
package triggers
