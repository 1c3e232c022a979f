package redact

import (
	"strings"
	"testing"
)

// Every form a store or hub address takes loses its secrets, and keeps
// what tells the person which store it is.
func TestURLMasksEverySecret(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://mcpp:s3cr3t@db.internal:5432/chat", "postgres://mcpp:xxxxx@db.internal:5432/chat"},
		{"postgresql://mcpp:s3cr3t@db/chat?sslmode=require", "postgresql://mcpp:xxxxx@db/chat?sslmode=require"},
		{"postgres://mcpp@db/chat?password=s3cr3t&sslmode=disable", "postgres://mcpp@db/chat?password=xxxxx&sslmode=disable"},
		{"postgres://db/chat?sslpassword=s3cr3t&sslkey=/k.pem", "postgres://db/chat?sslpassword=xxxxx&sslkey=/k.pem"},
		{"postgres://db/chat?pass%77ord=s3cr3t", "postgres://db/chat?pass%77ord=xxxxx"},
		{"postgres://db/chat?PASSWORD=s3cr3t", "postgres://db/chat?PASSWORD=xxxxx"},
		{"postgres://u:s3cr3t@db/chat#frag", "postgres://u:xxxxx@db/chat#frag"},
		{"https://alice:s3cr3t@chat.team.example/mcp", "https://alice:xxxxx@chat.team.example/mcp"},
		{"https://chat.team.example/?token=s3cr3t", "https://chat.team.example/?token=xxxxx"},
		{"host=db user=mcpp password=s3cr3t dbname=chat", "host=db user=mcpp password=xxxxx dbname=chat"},
		{"host=db password = s3cr3t dbname=chat", "host=db password = xxxxx dbname=chat"},
		{"host=db password='s3 cr\\'3t' dbname=chat", "host=db password=xxxxx dbname=chat"},
		{"host=db sslpassword=s3cr3t", "host=db sslpassword=xxxxx"},
		{"host=db password=s3&cr3t=x port=5432", "host=db password=xxxxx port=5432"},
		// A password with characters the URL should have escaped: masked
		// by shape, and never shown in part.
		{"postgres://u:s3/cr3t@db/chat", "postgres://u:xxxxx@db/chat"},
		{"postgres://u:12/34@db/chat", "postgres://u:xxxxx@db/chat"},
		{"postgres://u:s3?cr3t@db/chat", "postgres://u:xxxxx@db/chat"},
		{"postgres://u:s3#cr3t@db/chat", "postgres://u:xxxxx@db/chat"},
		{"postgres://u:s3@cr3t@db/chat", "postgres://u:xxxxx@db/chat"},
		{"postgres://u:s3%zzcr3t@db/chat", "postgres://u:xxxxx@db/chat"},
	} {
		got := URL(c.in)
		if got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
		for _, part := range []string{"s3cr3t", "cr3t", "34@"} {
			if strings.Contains(c.in, part) && strings.Contains(got, part) {
				t.Errorf("URL(%q) = %q shows %q", c.in, got, part)
			}
		}
	}
}

// An address without a secret is shown as it is, byte for byte: tests
// open a store again by the name it gives.
func TestURLKeepsAnAddressWithoutSecrets(t *testing.T) {
	for _, in := range []string{
		"postgres:///t1_2?host=/tmp/pgtest.123&user=postgres&sslmode=disable",
		"postgres://mcpp@db.internal/chat",
		"postgres://[::1]:5432/chat?application_name=a%20b",
		"https://chat.team.example",
		"sqlite:/srv/chat/pass=word.db",
		"/srv/chat/chat.db",
		"host=db user=mcpp dbname=chat",
	} {
		if got := URL(in); got != in {
			t.Errorf("URL(%q) = %q, want it unchanged", in, got)
		}
	}
}

// A driver's error that quotes the connection string loses its secrets
// and keeps its sense.
func TestTextMasksSecretsInErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"cannot parse `host=db password=s3cr3t port=x`: invalid port", "cannot parse `host=db password=xxxxx port=x`: invalid port"},
		{"cannot parse `postgres://u:s3cr3t@db:x/chat`: invalid port", "cannot parse `postgres://u:xxxxx@db:x/chat`: invalid port"},
		{`open "postgres://db/chat?sslmode=x&password=s3cr3t": bad`, `open "postgres://db/chat?sslmode=x&password=xxxxx": bad`},
		{"failed to connect to `user=mcpp database=chat`: dial error", "failed to connect to `user=mcpp database=chat`: dial error"},
		{"password=s3&cr3t (sslpassword='s3 cr3t')", "password=xxxxx (sslpassword=xxxxx)"},
		// A URL that URL already masked keeps its shape.
		{"connect to postgres://u:xxxxx@db/chat?password=xxxxx&sslpassword=xxxxx: failed", "connect to postgres://u:xxxxx@db/chat?password=xxxxx&sslpassword=xxxxx: failed"},
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// A webhook's URL is its secret: only its scheme and host are shown.
func TestWebhookShowsOnlyTheHost(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T000/B000/XXXXXXXX": "https://hooks.slack.com/xxxxx",
		"https://chat.example.com:8443/hooks/abc123?token=x":  "https://chat.example.com:8443/xxxxx",
		"https://user:pw@chat.example.com/hooks/abc":          "https://chat.example.com/xxxxx",
		"not a url at all":            "xxxxx",
		"http://127.0.0.1:9999/count": "http://127.0.0.1:9999/xxxxx",
	} {
		if got := Webhook(raw); got != want {
			t.Errorf("Webhook(%q) = %q, want %q", raw, got, want)
		}
	}
}
