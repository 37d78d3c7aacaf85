package config

import (
	"errors"
	"os"
	"testing"
)

func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("../examples/config/crowsnest.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(example), "", "a: [", "- a", header, header + "watch: {namespaces: [a, 1, {b: c}]}\n",
		header + "controller: {workers: 0x10, retryBaseDelay: 1d}\n", header + "x: &a [*a]\n",
		header + "leaderElection: {enabled: yes, leaseDuration: 99999999999d}\n",
		notificationsDoc, header + "notifications: {services: {s: {webhook: {url: 'https://x', timeout: -1s}}}, triggers: {a: []}}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Errors) == 0 {
				t.Fatalf("Parse error %v is not a non-empty *ValidationError", err)
			}
			return
		}
		// Whatever parses is valid and complete.
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that does not validate: %v", err)
		}
	})
}
