package svc

import (
	"fmt"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// RecipientURL is the webhook URL of d.Recipient, or a permanent error
// naming the recipient. The map's URLs were checked when the config was
// read (servicetypes.CheckRecipientURLs).
func RecipientURL(c *Client, key string, urls map[string]string, d notify.Destination) (string, error) {
	u, ok := urls[d.Recipient]
	if !ok || u == "" {
		return "", notify.Permanent(fmt.Errorf("%s: no webhook for recipient %q in %s", c.Service, d.Recipient, key))
	}
	return u, nil
}
