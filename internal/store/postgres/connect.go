package postgres

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"syscall"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// Why a connection to a team store failed, for the causes a person fixes
// in different places: the server's databases, its roles and passwords,
// the server itself, the address. Each is said in one sentence with its
// fix, instead of the driver's text.
const (
	noCause = iota
	noDatabase
	badPassword
	noRole
	notAdmitted // pg_hba.conf has no line for this user, database and host
	noServer
	unknownHost
)

// connectCause tells which of those causes err is, noCause for another.
func connectCause(err error) int {
	switch sqlState(err) {
	case "3D000": // invalid_catalog_name
		return noDatabase
	case "28P01": // invalid_password
		return badPassword
	case "28000": // invalid_authorization_specification
		if strings.Contains(err.Error(), "role ") && strings.Contains(err.Error(), "does not exist") {
			return noRole
		}
		return notAdmitted
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return unknownHost
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.ETIMEDOUT) || dialTimedOut(err) {
		return noServer
	}
	return noCause
}

// dialTimedOut reports a connection attempt that ran out of time before
// anything answered (connect_timeout).
func dialTimedOut(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && op.Timeout()
}

// misconfigured reports a failure to connect that trying again does not
// mend: the store's address, database or credentials must change first.
func misconfigured(err error) bool {
	switch connectCause(err) {
	case noDatabase, badPassword, noRole, notAdmitted, unknownHost:
		return true
	}
	return false
}

// connectedAs finds the user and database in the driver's "failed to
// connect to `user=… database=…`", which has the defaults filled in.
var connectedAs = regexp.MustCompile("failed to connect to `user=(\\S*) database=(\\S*)`")

// connectError is the sentence for err, a failed connection to the team
// store at where (its URL without passwords), or nil when err has none of
// the causes above.
func connectError(where string, err error) error {
	cause := connectCause(err)
	if cause == noCause {
		return nil
	}
	user, database := "USER", "DATABASE" // as the URL names them, when the driver does not say
	if m := connectedAs.FindStringSubmatch(err.Error()); m != nil {
		user, database = m[1], m[2]
	}
	var msg string
	switch cause {
	case noDatabase:
		msg = fmt.Sprintf("the PostgreSQL server of %s has no database %q — create it (createdb %s, or CREATE DATABASE %s in psql), or name an existing one in storage.url (or MCPP_CHAT_STORE)",
			where, database, database, database)
	case badPassword:
		msg = fmt.Sprintf("the PostgreSQL server of %s refused the password of user %q — fix the password in storage.url (or MCPP_CHAT_STORE, PGPASSWORD, ~/.pgpass)", where, user)
	case noRole:
		msg = fmt.Sprintf("the PostgreSQL server of %s has no user %q — create it (createuser --pwprompt %s), or name an existing one in storage.url (or MCPP_CHAT_STORE)",
			where, user, user)
	case notAdmitted:
		msg = fmt.Sprintf("the PostgreSQL server of %s does not let user %q into database %q from this machine — add a line for them to the server's pg_hba.conf (then reload it), or connect as a user it admits",
			where, user, database)
	case unknownHost:
		msg = fmt.Sprintf("the host of %s is not known here — fix the host in storage.url (or MCPP_CHAT_STORE)", where)
	default:
		msg = fmt.Sprintf("no PostgreSQL server answers at %s — start it (systemctl start postgresql, or pg_ctl start), or fix the host and port in storage.url (or MCPP_CHAT_STORE)", where)
	}
	// The driver's error stays for errors.Is and errors.As, not in the
	// sentence: its text is not for the person.
	return engine.NewStorageError(msg, err)
}
