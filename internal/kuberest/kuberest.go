// Package kuberest builds the plain REST clients crowsnest talks to
// Applications with where client-go's dynamic client decodes more than it
// needs: the Application watch and the patches whose answer is read for
// its resourceVersion only.
package kuberest

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Client returns a REST client for cfg that asks for accept (a JSON media
// type) and names each request's full path (AbsPath). It speaks JSON
// whatever cfg says, as the dynamic client does, and shares cfg's rate
// limiter when cfg has one.
func Client(cfg *rest.Config, accept string) (*rest.RESTClient, error) {
	c := dynamic.ConfigFor(cfg)
	c.AcceptContentTypes = accept
	c.GroupVersion = nil
	c.APIPath = "/apis"
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building a kube REST client: %w", err)
	}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("building a kube REST client: %w", err)
	}
	return rc, nil
}
