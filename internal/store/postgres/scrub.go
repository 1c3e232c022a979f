package postgres

import "github.com/mcpp/mcpp-chat/internal/redact"

// scrub is err with the secrets its text shows masked (redact.Text): a
// driver's error may quote the connection string it was given, and the
// store's errors reach the agent, the terminal and the logs. errors.Is and
// As still see err.
func scrub(err error) error {
	if err == nil || redact.Text(err.Error()) == err.Error() {
		return err
	}
	return scrubbed{err}
}

type scrubbed struct{ err error }

func (e scrubbed) Error() string { return redact.Text(e.err.Error()) }
func (e scrubbed) Unwrap() error { return e.err }
