package conformance

import (
	"testing"

	argo "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/notification/expression"
	"github.com/argoproj/notifications-engine/pkg/api"
	"github.com/argoproj/notifications-engine/pkg/services"
	"github.com/argoproj/notifications-engine/pkg/subscriptions"
	"github.com/argoproj/notifications-engine/pkg/templates"
	"github.com/argoproj/notifications-engine/pkg/triggers"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/notify/outbox"
	cntriggers "github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/windows"
	"github.com/crowsnest-dev/crowsnest/windows/spec"
)

// TestBuilds keeps the module's requirements complete for the suites
// that use these packages: each side of every comparison builds here.
func TestBuilds(t *testing.T) {
	var _ argo.SyncWindows
	_ = expression.Spawn
	var _ api.Config
	var _ services.Notification
	var _ subscriptions.Annotations
	var _ templates.Service
	var _ triggers.Service
	var _ unstructured.Unstructured
	var _ config.Config
	var _ controller.Engine
	var _ outbox.Outbox
	var _ cntriggers.Event
	var _ windows.Set
	var _ spec.Schedule
}
