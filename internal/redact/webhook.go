package redact

import "net/url"

// Webhook is a webhook's URL fit for messages and logs: its scheme and
// host only. An incoming webhook's URL is its secret — whoever has it may
// post — and the secret is its path (Slack's /services/T…/B…/…) or its
// query, so both are masked, and so is any user information.
func Webhook(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return Mask
	}
	return u.Scheme + "://" + u.Host + "/" + Mask
}
