package tools

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
)

// searchArgs are chat_search's arguments. Archived is three-way: omitted
// searches live and archived messages, true only the archived threads,
// false only live messages.
type searchArgs struct {
	Query    string `json:"query"`
	Channel  string `json:"channel"`
	Archived *bool  `json:"archived"`
	Limit    *int   `json:"limit"`
	Skip     int    `json:"skip"`
}

// defaultSearchHits is a page of hits when the call names no limit: enough
// to choose from, few enough to read.
const defaultSearchHits = 10

// snippetChars bounds a hit's snippet: sixteen words, unless a "word" is
// a 64 KiB run of letters.
const snippetChars = 300

// searchAnswer is chat_search's result: the hits that fit the answer, best
// first, and the call that shows the next ones.
type searchAnswer struct {
	Cut   string      `json:"cut,omitempty"`
	Query string      `json:"query"`
	Total int         `json:"total"`
	Hits  []store.Hit `json:"hits"`
	// More counts the hits after these.
	More int            `json:"more"`
	Next map[string]any `json:"next,omitempty"`
	// skip is where the page starts (for the display's "hits 11–20"),
	// channel the one searched ("" for all the caller's).
	skip    int
	channel string
}

// chatSearch searches the channels the caller sits in: the ones chat_read
// can read, so a hit is always one call from its thread.
func chatSearch(ctx context.Context, s *Service, a searchArgs) (Result, error) {
	limit := defaultSearchHits
	if a.Limit != nil {
		limit = *a.Limit
	}
	res, err := s.DB.Search(ctx, s.Me, store.SearchArgs{Query: a.Query, Channel: a.Channel, Archived: a.Archived, Limit: limit, Skip: a.Skip,
		Progress: indexProgress(ctx), ProgressAfter: indexProgressAfter})
	if err != nil {
		return Result{}, err
	}
	ans := cutSearch(res, a, s.listBudget())
	return Result{Display: renderSearch(ans), Value: ans}, nil
}

// indexProgressAfter is how long a search brings its index up to date
// before it tells a client that asked for progress how far it has come,
// and then how often: a first search of a long history takes seconds, a
// search after a write milliseconds. (A variable for the tests.)
var indexProgressAfter = time.Second

// indexProgress passes the index's progress to the client as progress
// notifications, when it sent a progress token.
func indexProgress(ctx context.Context) func(store.IndexProgress) {
	notify := progressFrom(ctx)
	if notify == nil {
		return nil
	}
	return func(p store.IndexProgress) {
		notify(ctx, float64(p.Done), float64(p.Total), store.IndexProgressLine(p))
	}
}

// cutSearch keeps the hits that fit budget, in rank order, and names the
// call that shows the next ones.
func cutSearch(res store.SearchResult, a searchArgs, budget int) searchAnswer {
	hits := make([]store.Hit, len(res.Hits))
	for i, h := range res.Hits {
		h.Title = short(h.Title)
		h.Snippet = markdownSnippet(h.Snippet)
		hits[i] = h
	}
	ans := searchAnswer{Query: res.Query, Total: res.Total, Hits: hits, skip: a.Skip, channel: a.Channel}
	worst := ans
	worst.Hits = []store.Hit{}
	worst.More = math.MaxInt
	worst.Cut, worst.Next = searchCutLine(a, span{math.MaxInt, math.MaxInt, math.MaxInt})
	sec := sectionOf(hits, searchLine)
	fill(budget-sizeOf(renderSearch(worst), worst)-listHeads, sec)
	ans.Hits = hits[:sec.keep]
	shown := span{first: a.Skip, shown: sec.keep, total: res.Total}
	ans.More = max(res.Total-a.Skip-sec.keep, 0)
	if ans.More > 0 {
		_, ans.Next = searchCutLine(a, shown)
	}
	if sec.keep < len(hits) {
		ans.Cut, ans.Next = searchCutLine(a, shown)
	}
	return ans
}

// searchCutLine says which hits an answer holds and which call goes on.
func searchCutLine(a searchArgs, shown span) (string, map[string]any) {
	next := map[string]any{}
	line := fmt.Sprintf("%s: hits %d–%d of %d are here", cutNote, shown.first+1, shown.first+shown.shown, shown.total)
	if rest := shown.rest(); rest > 0 {
		args := map[string]any{"query": a.Query, "skip": rest}
		if a.Channel != "" {
			args["channel"] = a.Channel
		}
		if a.Archived != nil {
			args["archived"] = *a.Archived
		}
		if a.Limit != nil {
			args["limit"] = *a.Limit
		}
		line += "; " + nextCall(next, "chat_search", args) + " shows the next"
	}
	return line + ".", next
}

// markdownSnippet marks the matched words in bold and bounds the snippet,
// the bold marks counted: each of the store's one-character marks becomes
// two, so the text is cut shorter by as many as the cut keeps.
func markdownSnippet(s string) string {
	marked := strings.NewReplacer(store.MarkStart, "\uE000", store.MarkEnd, "\uE001").Replace(s)
	bold := strings.NewReplacer("\uE000", "**", "\uE001", "**")
	for limit := snippetChars; ; {
		out := bold.Replace(OneLine(marked, limit))
		over := utf8.RuneCountInString(out) - snippetChars
		if over <= 0 || limit <= over {
			return out
		}
		limit -= over
	}
}

// renderSearch is the hits, best first, each with where it is and its
// passage.
func renderSearch(a searchAnswer) string {
	var b strings.Builder
	b.WriteString(cutHead(a.Cut))
	where := "your channels"
	if a.channel != "" {
		where = "#" + OneLine(a.channel, 64)
	}
	if a.Total == 0 {
		fmt.Fprintf(&b, "No message in %s matches %q.", where, OneLine(a.Query, 200))
		return b.String()
	}
	fmt.Fprintf(&b, "**%s for %q** in %s", safe.Count(a.Total, "hit"), OneLine(a.Query, 200), where)
	if len(a.Hits) > 0 {
		fmt.Fprintf(&b, " — %d–%d, best first", a.skip+1, a.skip+len(a.Hits))
	}
	b.WriteString("\n")
	for _, h := range a.Hits {
		b.WriteString(searchLine(h))
	}
	if a.More > 0 && a.Cut == "" {
		for tool, args := range a.Next {
			data, _ := encodeJSON(args)
			fmt.Fprintf(&b, "\n%s more: %s %s shows the next.", safe.Count(a.More, "hit"), tool, data)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// searchLine is one hit: where it is, what it is, and the passage.
func searchLine(h store.Hit) string {
	var what string
	switch {
	case h.Kind == "ask":
		what = itemLine(h.Slug, h.Title, h.Status)
	case h.Re != "":
		what = "reply re " + h.Re
	default:
		what = h.Kind
	}
	if h.Archived {
		what += " (archived)"
	}
	return fmt.Sprintf("- #%s #%d %s — %s: %s\n", h.Channel, h.Seq, what, h.From, h.Snippet)
}
