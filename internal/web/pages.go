package web

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
	"github.com/mcpp/mcpp-chat/internal/transcript"
)

// pageSize is how many of a channel's newest rows a page shows; earlier
// ones are a link away, so a long history costs the first load nothing.
const pageSize = 200

// searchSize is how many hits a search page shows.
const searchSize = 50

// page is what page.html renders: the frame (channels, presence) and one
// of a channel or a search.
type page struct {
	DB       string
	Channels []store.ChannelView
	Parties  []party
	// Claims are the live claims, whoever holds them (store/claims.go).
	Claims   []store.Claim
	Current  string // the channel shown, if any
	Archived bool
	Conv     *conversation
	Search   *searchPage
	Query    string
	Problem  string
}

type party struct {
	Name, Workspace, About, LastSeen, Ago string
}

type conversation struct {
	Channel store.ChannelView
	Threads []*transcript.Thread
	Earlier int
	// Before is the seq the "earlier" link starts from.
	Before int64
}

type searchPage struct {
	Query   string
	Total   int
	Hits    []hit
	Channel string
	Only    string // "", "live" or "archived"
}

type hit struct {
	store.Hit
	Snippet []piece
}

// piece is a run of snippet text, matched or not.
type piece struct {
	Text  string
	Match bool
}

// funcs are the template's helpers; none makes HTML: html/template
// escapes everything they return.
var funcs = template.FuncMap{
	"clean": safe.Clean,
	"line":  func(s string, n int) string { return safe.OneLine(s, n) },
	"state": transcript.State,
	"due":   func(m store.Message) string { return transcript.Due(m, transcript.Style{Loc: time.Local}) },
	"ladder": func(m store.Message) []string {
		return transcript.Ladder(m, transcript.Style{Loc: time.Local})
	},
	"upper": strings.ToUpper,
	"when":  func(at string) string { return transcript.Style{Loc: time.Local}.When(at) },
	"stateClass": func(m store.Message) string {
		if m.Archived != nil && *m.Archived {
			return "archived"
		}
		return m.Status
	},
	"unread": func(s store.Seat) string {
		if s.Over {
			return fmt.Sprintf("%d+", s.Unread)
		}
		return strconv.Itoa(s.Unread)
	},
	"channelURL": func(name string, archived bool) string { return channelURL(name, archived, 0) },
	"earlierURL": channelURL,
}

// channelURL is a channel's page: live or archived, and with before the
// rows earlier than that seq.
func channelURL(name string, archived bool, before int64) string {
	q := url.Values{}
	if archived {
		q.Set("archived", "1")
	}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	u := "/c/" + url.PathEscape(name)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	p, err := s.frame(r.Context())
	if err == nil && len(p.Channels) > 0 {
		http.Redirect(w, r, "/c/"+url.PathEscape(p.Channels[0].Name), http.StatusFound)
		return
	}
	s.render(w, p, err)
}

func (s *Server) channel(w http.ResponseWriter, r *http.Request) {
	p, err := s.frame(r.Context())
	if err != nil {
		s.render(w, p, err)
		return
	}
	p.Current = r.PathValue("channel")
	p.Archived = r.URL.Query().Get("archived") != ""
	before, _ := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
	conv, err := s.db.Conversation(r.Context(), store.ConversationArgs{Channel: p.Current, Archived: p.Archived, Before: before, Newest: pageSize})
	if err == nil {
		p.Conv = &conversation{Channel: conv.Channel, Threads: transcript.Threads(conv.Messages), Earlier: conv.Earlier}
		if len(conv.Messages) > 0 {
			p.Conv.Before = conv.Messages[0].Seq
		}
	}
	s.render(w, p, err)
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	p, err := s.frame(r.Context())
	if err != nil {
		s.render(w, p, err)
		return
	}
	q := r.URL.Query()
	sp := &searchPage{Query: q.Get("q"), Channel: q.Get("channel"), Only: q.Get("only")}
	p.Query, p.Search, p.Current = sp.Query, sp, sp.Channel
	a := store.SearchArgs{Query: sp.Query, Channel: sp.Channel, Limit: searchSize}
	switch sp.Only {
	case "live", "archived":
		only := sp.Only == "archived"
		a.Archived = &only
	}
	res, err := s.db.Search(r.Context(), a)
	if err == nil {
		sp.Total = res.Total
		for _, h := range res.Hits {
			sp.Hits = append(sp.Hits, hit{Hit: h, Snippet: pieces(h.Snippet)})
		}
	}
	s.render(w, p, err)
}

// frame reads what every page shows: the channels and the parties.
func (s *Server) frame(ctx context.Context) (page, error) {
	p := page{DB: s.dbPath}
	var err error
	if p.Channels, err = s.db.Channels(ctx); err != nil {
		return p, err
	}
	if p.Claims, err = s.db.AllClaims(ctx); err != nil {
		return p, err
	}
	parties, err := s.db.Parties(ctx)
	for _, q := range parties {
		v := party{Name: q.Name, Workspace: q.Workspace, LastSeen: q.LastSeen, Ago: s.ago(q.LastSeen)}
		if q.About != nil {
			v.About = *q.About
		}
		p.Parties = append(p.Parties, v)
	}
	return p, err
}

// ago is how long ago a stored time was, roughly.
func (s *Server) ago(at string) string {
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return "?"
	}
	d := s.now().Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

// pieces splits a snippet at its marks.
func pieces(snippet string) []piece {
	var out []piece
	for _, part := range strings.SplitAfter(snippet, store.MarkEnd) {
		before, match, _ := strings.Cut(strings.TrimSuffix(part, store.MarkEnd), store.MarkStart)
		if before != "" {
			out = append(out, piece{Text: safe.Clean(before)})
		}
		if match != "" {
			out = append(out, piece{Text: safe.Clean(match), Match: true})
		}
	}
	return out
}

// render writes the page, or the problem in its place.
func (s *Server) render(w http.ResponseWriter, p page, err error) {
	status := http.StatusOK
	if err != nil {
		p.Problem, status = s.problem(err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := s.page.Execute(w, p); err != nil {
		fmt.Fprintf(w, "<p>the page could not be drawn: %s</p>", template.HTMLEscapeString(err.Error()))
	}
}

// problem is what the page says of err, and its status. A wrong channel
// name or search is the person's to fix, and a store that is missing,
// busy or out of reach the person can act on: each shows as its sentence.
// Any other failure is logged in full, and the page only says that it
// failed: a driver's text (SQL, a connection string) is nothing to show.
func (s *Server) problem(err error) (string, int) {
	var ue *store.UserError
	var se *store.StorageError
	switch {
	case errors.Is(err, store.ErrNoDatabase):
		return err.Error(), http.StatusOK
	case errors.As(err, &ue):
		return err.Error(), http.StatusBadRequest
	case errors.As(err, &se), errors.Is(err, store.ErrBusy):
		return err.Error(), http.StatusInternalServerError
	}
	s.log.Error("the page could not read the chat", "err", err)
	return "the page could not read the chat (the details are in the log of mcpp-chat ui) — reload it, and if it fails again run mcpp-chat doctor", http.StatusInternalServerError
}
