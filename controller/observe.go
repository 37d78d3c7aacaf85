package controller

import (
	"context"
	"log/slog"
)

// ObserveReconciler records what the engine sees and changes nothing. It is
// the reconciler `crowsnest run` uses until image updates, notifications and
// sync windows plug their decisions into the engine.
type ObserveReconciler struct {
	Log *slog.Logger
}

var _ Reconciler = ObserveReconciler{}

// Reconcile logs the Application's state at debug level.
func (r ObserveReconciler) Reconcile(_ context.Context, req Request) (Result, error) {
	if req.App == nil {
		r.Log.Debug("application gone", "app", req.Key)
		return Result{}, nil
	}
	r.Log.Debug("application observed", "app", req.Key, "project", req.App.Project,
		"sources", len(req.App.Sources), "images", len(req.App.Images),
		"sync", req.App.SyncStatus, "health", req.App.HealthStatus)
	return Result{}, nil
}
