// Package redact keeps secrets out of what mcpp-chat shows: the address of
// a store or a hub, which may hold a password, and the driver errors that
// echo one. Every message, log line and page that names a store or a hub
// goes through URL; text that may quote one goes through Text.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask stands where a secret was.
const Mask = "xxxxx"

// URL is a store or hub address fit for messages and logs: a URL
// (postgres://…, https://…) keeps everything but the password in its user
// information and the values of its secret parameters (secretKey), each
// replaced by Mask; a key=value connection string (host=… password=…),
// which pgx also takes, loses the values of its secret keys. A sqlite:PATH
// or a path holds no secret and comes back as it is, and so does any
// address without a secret, byte for byte.
func URL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		if strings.HasPrefix(raw, "sqlite:") {
			return raw
		}
		return maskPairs(raw, true)
	}
	if !wellFormed(raw) {
		// A password with an unescaped / ? # or @ moves the boundaries
		// the parts below are found by: mask by the text's shape instead,
		// which may hide more than the secret but never less.
		return Text(raw)
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		if user, _, hasPassword := strings.Cut(authority[:at], ":"); hasPassword {
			authority = user + ":" + Mask + authority[at:]
		}
	}
	beforeFragment, fragment, hasFragment := strings.Cut(tail, "#")
	path, query, hasQuery := strings.Cut(beforeFragment, "?")
	var b strings.Builder
	b.WriteString(scheme + "://" + authority + path)
	if hasQuery {
		b.WriteString("?" + maskQuery(query))
	}
	if hasFragment {
		b.WriteString("#" + fragment)
	}
	return b.String()
}

// wellFormed reports a URL whose parts are where they seem: it parses,
// and no @ is left outside its user information (where a password with an
// unescaped / or ? pushes the rest of it).
func wellFormed(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	if strings.Contains(u.EscapedPath(), "@") || strings.Contains(u.EscapedFragment(), "@") {
		return false
	}
	for pair := range strings.SplitSeq(u.RawQuery, "&") {
		if !strings.Contains(pair, "=") && strings.Contains(pair, "@") {
			return false
		}
	}
	return true
}

// maskQuery is a URL's query with the value of every secret parameter
// masked; the rest keeps its order and spelling.
func maskQuery(query string) string {
	pairs := strings.Split(query, "&")
	for i, pair := range pairs {
		key, _, hasValue := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(key)
		if err != nil {
			name = key
		}
		if hasValue && secretKey(name) {
			pairs[i] = key + "=" + Mask
		}
	}
	return strings.Join(pairs, "&")
}

// secretKey reports a connection parameter whose value is a secret:
// libpq's password and sslpassword, and any other that names a password,
// a secret or a token (a hub's address might carry one). sslkey and
// passfile name files, which are not secrets themselves.
func secretKey(name string) bool {
	name = strings.ToLower(name)
	return strings.Contains(name, "password") || strings.Contains(name, "secret") || strings.Contains(name, "token")
}

var (
	// userInfo is a URL's user:password@ anywhere in a text. The password
	// runs to the last @ before a space, so one holding an @ or a / is
	// masked whole (with, at worst, a little more).
	userInfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*):\S*@`)
	// secretKeyIs is the start of key=value for a secret key, in a URL's
	// query or a key=value connection string.
	secretKeyIs = regexp.MustCompile(`(?i)\b[a-z_]*(?:password|secret|token)[a-z_]*\s*=\s*`)
	// nextParam is the start of another parameter after an &.
	nextParam = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.%-]*=`)
)

// Text is s with every secret that URL would mask masked wherever it
// appears in it: for a driver's error, which may quote the connection
// string it was given, and for an address that is not a well-formed URL.
func Text(s string) string {
	return maskPairs(userInfo.ReplaceAllString(s, "${1}:"+Mask+"@"), false)
}

// maskPairs masks the value of every key=value in s whose key is a
// secret's. In a key=value connection string (dsn) a value ends at a
// space; in other text also at a quote or at an & that starts another
// parameter.
func maskPairs(s string, dsn bool) string {
	var b strings.Builder
	for {
		at := secretKeyIs.FindStringIndex(s)
		if at == nil {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:at[1]] + Mask)
		s = s[at[1]:]
		s = s[valueLen(s, dsn):]
	}
}

// valueLen is the length of the value s starts with: a quoted one to its
// closing quote (or the end), any other to the next space (see maskPairs).
// A Mask already there (a URL shown by URL, quoted in an error) ends where
// the Mask does.
func valueLen(s string, dsn bool) int {
	if rest, ok := strings.CutPrefix(s, Mask); ok && (rest == "" || strings.ContainsRune(":;,.)&\"' \t\n`", rune(rest[0]))) {
		return len(Mask)
	}
	if strings.HasPrefix(s, "'") {
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '\'':
				return i + 1
			}
		}
		return len(s)
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			return i
		case '"', '\'', '`':
			if !dsn {
				return i
			}
		case '&':
			if !dsn && nextParam.MatchString(s[i+1:]) {
				return i
			}
		}
	}
	return len(s)
}
